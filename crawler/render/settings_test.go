package render_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/render"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

func load(t *testing.T, env map[string]string) *settings.Settings {
	t.Helper()
	var environ []string
	for k, v := range env {
		environ = append(environ, k+"="+v)
	}
	s, err := settings.Load(render.Settings(), settings.Options{Environ: environ})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestDefaultsFindChromiumOnPath(t *testing.T) {
	c, err := render.ConfigFromSettings(load(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(c.Browser, "chromium") || c.Concurrency < 1 || c.Recycle < 1 ||
		strings.Join(c.Block, ",") != "image,media,font" || c.NoSandbox {
		t.Errorf("got %+v", c)
	}
	if c, err := render.ConfigFromSettings(load(t, map[string]string{"RENDER_SANDBOX": "false"})); err != nil || !c.NoSandbox {
		t.Errorf("RENDER_SANDBOX false: %+v, %v", c, err)
	}
}

func TestBadSettingsAreRefusedWithTheirNames(t *testing.T) {
	c, err := render.ConfigFromSettings(load(t, map[string]string{"RENDER_BLOCK": ""}))
	if err != nil || len(c.Block) != 0 {
		t.Errorf("RENDER_BLOCK empty: %+v, %v", c, err)
	}
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"RENDER_BROWSER": "/nonexistent/chrome"}, `setting RENDER_BROWSER: "/nonexistent/chrome"`},
		{map[string]string{"RENDER_BLOCK": "image,script"}, `setting RENDER_BLOCK: "script" is not a resource type it can block (image, media, font, stylesheet)`},
		{map[string]string{"RENDER_CONCURRENCY": "0"}, "setting RENDER_CONCURRENCY: 0: want 1 or more"},
		{map[string]string{"RENDER_RECYCLE": "-1"}, "setting RENDER_RECYCLE: -1: want 1 or more"},
		{map[string]string{"PATH": "/nonexistent"}, "setting RENDER_BROWSER: none of chromium-headless-shell, chrome-headless-shell, chromium, chromium-browser on PATH"}, // last: PATH stays
	} {
		if p, ok := tc.env["PATH"]; ok {
			t.Setenv("PATH", p)
		}
		_, err := render.ConfigFromSettings(load(t, tc.env))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want %q", tc.env, err, tc.want)
		}
	}
}

func TestTheDefaultSearchPrefersTheHeadlessShellAndUnwrapsItsLauncher(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	binary := write("the-shell-binary", "#!/bin/sh\n")
	write("chromium", "#!/bin/sh\nexec /nonexistent/chromium \"$@\"\n")
	t.Setenv("PATH", dir)
	if got, err := render.FindBrowser(""); err != nil || got != filepath.Join(dir, "chromium") {
		t.Errorf("only chromium (a launcher of a binary that is not there): got %q, %v", got, err)
	}
	// Debian's launcher: runs the binary without exec.
	write("chromium-headless-shell", "#!/bin/sh -e\n\n"+binary+" \"$@\"\n")
	if got, err := render.FindBrowser(""); err != nil || got != binary {
		t.Errorf("with chromium-headless-shell: got %q, %v, want its binary %s", got, err, binary)
	}
	if got, err := render.FindBrowser("chromium-headless-shell"); err != nil || got != binary {
		t.Errorf("RENDER_BROWSER=chromium-headless-shell: got %q, %v, want %s", got, err, binary)
	}
	// A script that does more than run one binary is run as it is.
	more := write("chrome-headless-shell", "#!/bin/sh\nexport X=1\n"+binary+" \"$@\"\n")
	if got, err := render.FindBrowser("chrome-headless-shell"); err != nil || got != more {
		t.Errorf("a script with two commands: got %q, %v, want the script %s", got, err, more)
	}
}
