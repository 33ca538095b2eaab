package localcluster_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/render"
	"github.com/scrapycluster/scrapy-cluster-go/ops/localcluster"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

// fakeChromium writes an executable named name into a new directory and
// returns the directory.
func fakeChromium(t *testing.T, name string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// onlyOnPath is env with PATH holding dir alone, into which sleep (which the
// fake components' scripts run) is linked: no Chromium of the machine's
// is found.
func onlyOnPath(t *testing.T, env []string, dir string) []string {
	t.Helper()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(sleep, filepath.Join(dir, "sleep")); err != nil {
		t.Fatal(err)
	}
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, "PATH=") {
			out = append(out, kv)
		}
	}
	return append(out, "PATH="+dir)
}

func TestRenderStartsOneRenderingCrawlerBesideTheOrdinaryOne(t *testing.T) {
	bin := fakeBin(t, map[string]string{
		"crawler": `trap 'exit 0' TERM; echo "render=[$RENDER_ENABLED] browser=[$RENDER_BROWSER] $*"; while :; do sleep 0.05; done`,
	})
	for _, name := range localcluster.ChromiumNames {
		t.Run("with "+name+" on PATH", func(t *testing.T) {
			chromium := fakeChromium(t, name)
			out := &harness.OutputBuffer{}
			cfg := fakeConfig(t, bin, out)
			cfg.Render = true
			cfg.Env = onlyOnPath(t, cfg.Env, chromium)
			// rest is up too (its SIGTERM trap set): stopped before then,
			// its sh would die of the signal.
			runUntil(t, cfg, out, "both crawlers print their settings", func() bool {
				return out.Contains("crawler-link-1      | render=") && out.Contains("crawler-link-render | render=") &&
					out.Contains("/rest  up\n")
			})
			want := "crawler-link-render | render=[true] browser=[" + filepath.Join(chromium, name) + "] --spider link\n"
			if !out.Contains(want) {
				t.Errorf("the rendering crawler's line is not %q:\n%s", want, out)
			}
			if want := "crawler-link-1      | render=[] browser=[] --spider link\n"; !out.Contains(want) {
				t.Errorf("the ordinary crawler's line is not %q:\n%s", want, out)
			}
			if n := len(startedChildren(out.String())); n != 5 {
				t.Errorf("%d processes started, want 5 (two monitors, two crawlers, rest):\n%s", n, out)
			}
		})
	}
}

// --render looks for the binaries the crawler looks for, in its order.
func TestRenderLooksForTheCrawlersBrowsers(t *testing.T) {
	if !slices.Equal(localcluster.ChromiumNames, render.DefaultBrowsers) {
		t.Fatalf("--render looks for %v, the crawler for %v", localcluster.ChromiumNames, render.DefaultBrowsers)
	}
}

func TestRenderWithoutChromiumFailsBeforeAnythingStarts(t *testing.T) {
	bin := fakeBin(t, nil)
	notChromium := t.TempDir()
	if err := os.WriteFile(filepath.Join(notChromium, "chromium"), []byte("not executable"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		env  []string
		want string
	}{
		{"nothing on PATH", []string{"PATH=" + t.TempDir()}, "none of chromium-headless-shell, chrome-headless-shell, chromium, chromium-browser is on PATH"},
		{"a chromium that is not executable", []string{"PATH=" + notChromium}, "none of chromium-headless-shell, chrome-headless-shell, chromium, chromium-browser is on PATH"},
		{"a RENDER_BROWSER that does not exist", []string{"PATH=" + fakeChromium(t, "chromium"), "RENDER_BROWSER=/nonexistent/chrome"},
			"RENDER_BROWSER=/nonexistent/chrome is not an executable file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := &harness.OutputBuffer{}
			cfg := fakeConfig(t, bin, out)
			cfg.Render = true
			cfg.Env = append(cleanEnv(), tc.env...)
			err := localcluster.Run(context.Background(), cfg)
			if !errors.Is(err, localcluster.ErrNoChromium) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Run returned %v, want ErrNoChromium saying %q", err, tc.want)
			}
			if out.String() != "" {
				t.Errorf("something started: %s", out)
			}
		})
	}
}

func TestTheCommandExitsWithItsOwnStatusWhenRenderFindsNoChromium(t *testing.T) {
	launcher := buildLauncher(t)
	ports := freePorts(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, launcher, "--bin", fakeBin(t, nil), "--data-dir", "", "--color", "never", "--render",
		"--kafka-port", strconv.Itoa(ports[0]), "--redis-port", strconv.Itoa(ports[1]), "--rest-port", strconv.Itoa(ports[2]))
	cmd.Env = append(cleanEnv(), "PATH="+t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != localcluster.ExitNoChromium {
		t.Fatalf("local-cluster --render ended with %v, want exit status %d\nstderr:\n%s", err, localcluster.ExitNoChromium, &stderr)
	}
	if want := "local-cluster: --render: no Chromium found: none of chromium-headless-shell, chrome-headless-shell, chromium, chromium-browser is on PATH"; !strings.HasPrefix(stderr.String(), want) {
		t.Errorf("stderr %q, want it to start with %q", stderr.String(), want)
	}
	if stdout.Len() != 0 {
		t.Errorf("something started:\n%s", &stdout)
	}
}
