package opscheck_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

// proc is a child process of a test: its output is kept, and it is stopped
// with SIGTERM (then SIGKILL) when the test ends.
type proc struct {
	*harness.Process
	stdout, stderr *harness.OutputBuffer
}

// startProc starts path with args in dir (the test's temporary directory
// when empty), with the test's environment plus env.
func startProc(tb testing.TB, dir string, env []string, path string, args ...string) *proc {
	tb.Helper()
	p := &proc{stdout: &harness.OutputBuffer{}, stderr: &harness.OutputBuffer{}}
	p.Process = harness.StartProcess(tb, harness.ProcessSpec{Path: path, Args: args, Dir: dir,
		Env: append(append(os.Environ(), adminAnyPort), env...), Stdout: p.stdout, Stderr: p.stderr, StopGrace: 20 * time.Second})
	return p
}

// stop sends SIGTERM to the process group and waits up to grace before
// killing it; it reports whether the process exited by itself.
func (p *proc) stop(grace time.Duration) bool {
	return !errors.Is(p.Stop(grace), harness.ErrStillRunning)
}

// waitFor polls cond until it holds or timeout passes.
func waitFor(tb testing.TB, timeout time.Duration, what string, cond func() bool) {
	tb.Helper()
	harness.WaitFor(tb, what, timeout, cond)
}

// run runs path with args to completion within timeout and returns its
// standard output; a failure or a timeout fails the test with the output.
func run(tb testing.TB, timeout time.Duration, env []string, path string, args ...string) string {
	tb.Helper()
	out, err := runErr(timeout, env, path, args...)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

func runErr(timeout time.Duration, env []string, path string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s %q: %w\nstdout:\n%s\nstderr:\n%s", path, args, err, tail(stdout.String()), tail(stderr.String()))
	}
	return stdout.String(), nil
}

// adminAnyPort puts the components' admin endpoints on free ports: the
// defaults are fixed ports, and tests run side by side.
const adminAnyPort = "ADMIN_ADDR=127.0.0.1:0"

// tail is the end of a long output, for failure messages.
func tail(s string) string {
	const max = 6000
	if len(s) > max {
		return "..." + s[len(s)-max:]
	}
	return s
}
