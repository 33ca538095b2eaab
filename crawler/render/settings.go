package render

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// The rendering pool's defaults, in one place.
const (
	defaultConcurrency = 4
	defaultRecycle     = 100
)

// BlockTypes are the resource types RENDER_BLOCK may name, and
// DefaultBlock its default.
var (
	BlockTypes   = []string{"image", "media", "font", "stylesheet"}
	DefaultBlock = []string{"image", "media", "font"}
)

// The rendering settings (ours; the original does not render).
var (
	Enabled     = settings.Bool("RENDER_ENABLED", false, "render pages in headless Chromium: the crawler also pops its spider's render queues (`<spiderid>:<domain>:renderqueue`, requests with a `render` field) and renders them; false: render requests are left to rendering crawlers ([rendering](crawler.md#rendering))").Ours()
	Browser     = settings.String("RENDER_BROWSER", "", "the Chromium binary rendering crawlers run; empty: the first of `chromium-headless-shell`, `chrome-headless-shell`, `chromium`, `chromium-browser` on PATH (none found: the crawler refuses to start, naming this setting); a launcher script that only runs a binary is resolved to that binary").Ours()
	Concurrency = settings.Int("RENDER_CONCURRENCY", defaultConcurrency, "pages rendered at once (each in its own browser context; they count in `CONCURRENT_REQUESTS` too)").Ours()
	Recycle     = settings.Int("RENDER_RECYCLE", defaultRecycle, "pages a browser renders before it is replaced by a new one (its memory returned); a browser that crashes or hangs is replaced at once").Ours()
	Sandbox     = settings.Bool("RENDER_SANDBOX", true, "run Chromium with its own sandbox; false (`--no-sandbox`) where it cannot start one — a non-root container without user namespaces, such as the `crawler-render` image and the Helm chart's rendering pool, where the container is the isolation; as root the sandbox is always off").Ours()
	Block       = settings.Strings("RENDER_BLOCK", DefaultBlock, "resource types the browser does not load (never requested from the site), comma-separated, of `image`, `media`, `font`, `stylesheet`; empty: load everything").Ours()
)

// Settings are the rendering settings, for the crawler's settings.Group.
func Settings() settings.Group {
	return settings.Declare(Enabled, Browser, Concurrency, Recycle, Sandbox, Block)
}

// DefaultBrowsers are the binaries RENDER_BROWSER's default search tries, in
// order: Chromium's headless shell first (the old headless mode, a build
// without the windowing and compositing of the full browser: a small part of
// the full browser's processor time per page), then the full browser.
var DefaultBrowsers = []string{"chromium-headless-shell", "chrome-headless-shell", "chromium", "chromium-browser"}

// FindBrowser is the Chromium binary to run: RENDER_BROWSER's, resolved on
// PATH, or the first of DefaultBrowsers on PATH; a launcher script that
// only runs a binary (Debian's chromium-headless-shell) resolved to that
// binary (unwrap). The error names the setting.
func FindBrowser(setting string) (string, error) {
	if setting != "" {
		p, err := exec.LookPath(setting)
		if err != nil {
			return "", fmt.Errorf("setting %s: %q: %w", Browser.Name(), setting, err)
		}
		return unwrap(p), nil
	}
	for _, name := range DefaultBrowsers {
		if p, err := exec.LookPath(name); err == nil {
			return unwrap(p), nil
		}
	}
	return "", fmt.Errorf("setting %s: none of %s on PATH; install Chromium (Debian: chromium-headless-shell or chromium) or set %s to its binary",
		Browser.Name(), strings.Join(DefaultBrowsers, ", "), Browser.Name())
}

// launcherLine is the one command of a launcher script that runs a binary
// with the script's arguments: `[exec] /abs/path "$@"`.
var launcherLine = regexp.MustCompile(`^(?:exec\s+)?(/\S+)\s+"\$@"$`)

// unwrap is the binary a launcher script runs when path is a shell script
// whose only command is launcherLine, else path. Such a launcher (Debian's
// /usr/bin/chromium-headless-shell) stays the browser's parent without
// exec: killed with the crawler (Pdeathsig), it would leave the browser
// running, an orphan; the binary itself dies with the crawler.
func unwrap(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return path
	}
	defer f.Close()
	head := make([]byte, 4096)
	n, _ := io.ReadFull(f, head)
	lines := strings.Split(string(head[:n]), "\n")
	if n == len(head) || !strings.HasPrefix(lines[0], "#!/bin/sh") {
		return path
	}
	var target string
	for _, l := range lines[1:] {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		m := launcherLine.FindStringSubmatch(l)
		if m == nil || target != "" {
			return path // more than one command: not a plain launcher
		}
		target = m[1]
	}
	if st, err := os.Stat(target); target == "" || err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		return path
	}
	return target
}

// checkBlock checks RENDER_BLOCK's types.
func checkBlock(types []string) error {
	var errs []error
	for _, t := range types {
		if !slices.Contains(BlockTypes, strings.TrimSpace(t)) {
			errs = append(errs, fmt.Errorf("setting %s: %q is not a resource type it can block (%s)", Block.Name(), t, strings.Join(BlockTypes, ", ")))
		}
	}
	return errors.Join(errs...)
}

// Config is the rendering pool's part of the crawler's settings.
type Config struct {
	// Browser is the Chromium binary (RENDER_BROWSER, resolved).
	Browser string
	// Concurrency is the pages rendered at once (RENDER_CONCURRENCY).
	Concurrency int
	// Recycle is the pages after which a browser is replaced (RENDER_RECYCLE).
	Recycle int
	// Block is the resource types not loaded (RENDER_BLOCK).
	Block []string
	// NoSandbox runs Chromium with --no-sandbox (RENDER_SANDBOX false).
	NoSandbox bool
}

// ConfigFromSettings reads the rendering settings, refusing (with the
// setting's name and why) a browser not found, a concurrency or recycle
// count below 1 and a resource type RENDER_BLOCK cannot block.
func ConfigFromSettings(s *settings.Settings) (Config, error) {
	c := Config{Concurrency: Concurrency.From(s), Recycle: Recycle.From(s), NoSandbox: !Sandbox.From(s)}
	var errs []error
	for _, b := range Block.From(s) {
		if b = strings.TrimSpace(b); b != "" {
			c.Block = append(c.Block, b)
		}
	}
	errs = append(errs, checkBlock(c.Block))
	if c.Concurrency < 1 {
		errs = append(errs, fmt.Errorf("setting %s: %d: want 1 or more pages at once", Concurrency.Name(), c.Concurrency))
	}
	if c.Recycle < 1 {
		errs = append(errs, fmt.Errorf("setting %s: %d: want 1 or more pages per browser", Recycle.Name(), c.Recycle))
	}
	var err error
	c.Browser, err = FindBrowser(Browser.From(s))
	errs = append(errs, err)
	return c, errors.Join(errs...)
}
