package localcluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ChromiumNames are the binaries --render looks for on PATH when the
// environment sets no RENDER_BROWSER, in this order: Chromium's headless
// shell first (Debian's chromium-headless-shell, the cheaper per page),
// then the full browser (Debian's chromium; other distributions
// chromium-browser). The crawler itself looks for the same ones
// (render.DefaultBrowsers; a test holds the two lists equal) and runs the
// binary a launcher script runs.
var ChromiumNames = []string{"chromium-headless-shell", "chrome-headless-shell", "chromium", "chromium-browser"}

// ErrNoChromium is the error of Run with Render when no Chromium is found.
var ErrNoChromium = errors.New("--render: no Chromium found")

// ExitNoChromium is local-cluster's exit status when --render finds no
// Chromium (any other failure exits 1), so a script can tell the two apart.
const ExitNoChromium = 3

// renderCrawlers are the rendering crawlers of --render: one per spider
// type, named crawler-<spider>-render, with RENDER_ENABLED=true and
// RENDER_BROWSER set to the Chromium found (findChromium), on top of the
// ordinary crawlers' environment.
func renderCrawlers(env, spiders []string, crawler string, crawlerEnv []string) ([]spec, error) {
	browser, err := findChromium(env)
	if err != nil {
		return nil, err
	}
	renderEnv := withEnv(crawlerEnv, map[string]string{"RENDER_ENABLED": "true", "RENDER_BROWSER": browser})
	out := make([]spec, 0, len(spiders))
	for _, sp := range spiders {
		out = append(out, spec{name: "crawler-" + sp + "-render", path: crawler, args: []string{"--spider", sp}, env: renderEnv})
	}
	return out, nil
}

// findChromium is the RENDER_BROWSER of env, when set (a path, or a name
// looked up on env's PATH), or else the first of ChromiumNames on env's
// PATH. Its error, wrapping ErrNoChromium, says what was looked for and
// how to fix it.
func findChromium(env []string) (string, error) {
	path := lookupEnv(env, "PATH")
	if b := lookupEnv(env, "RENDER_BROWSER"); b != "" {
		if p, ok := lookExecutable(b, path); ok {
			return p, nil
		}
		return "", fmt.Errorf("%w: RENDER_BROWSER=%s is not an executable file (nor a program on PATH)", ErrNoChromium, b)
	}
	for _, name := range ChromiumNames {
		if p, ok := lookExecutable(name, path); ok {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: none of %s is on PATH (install Debian's chromium-headless-shell or chromium package, set RENDER_BROWSER to a Chromium binary, or run without --render)",
		ErrNoChromium, strings.Join(ChromiumNames, ", "))
}

// lookExecutable finds name as exec.LookPath would, on the PATH given
// (the cluster's environment, not necessarily the launcher's own): a name
// with a slash is taken as a path.
func lookExecutable(name, path string) (string, bool) {
	if strings.Contains(name, "/") {
		return name, isExecutable(name)
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		if p := filepath.Join(dir, name); isExecutable(p) {
			return p, true
		}
	}
	return "", false
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode().Perm()&0o111 != 0
}
