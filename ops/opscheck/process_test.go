package opscheck_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

// proc is a child process of a test: its output is kept, and it is stopped
// with SIGTERM (then SIGKILL) when the test ends.
type proc struct {
	name   string
	cmd    *exec.Cmd
	stdout harness.OutputBuffer
	stderr harness.OutputBuffer
	done   chan struct{}
	err    error
}

// startProc starts path with args in dir (the test's temporary directory
// when empty), with the test's environment plus env.
func startProc(tb testing.TB, dir string, env []string, path string, args ...string) *proc {
	tb.Helper()
	p := &proc{name: path, done: make(chan struct{})}
	p.cmd = exec.Command(path, args...)
	if dir == "" {
		dir = tb.TempDir()
	}
	p.cmd.Dir = dir
	p.cmd.Env = append(append(os.Environ(), adminAnyPort), env...)
	p.cmd.Stdout = &p.stdout
	p.cmd.Stderr = &p.stderr
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		tb.Fatalf("start %s: %v", path, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	tb.Cleanup(func() {
		p.stop(20 * time.Second)
		if tb.Failed() {
			tb.Logf("%s %v\nstdout:\n%s\nstderr:\n%s", path, args, tail(p.stdout.String()), tail(p.stderr.String()))
		}
	})
	return p
}

// stop sends SIGTERM to the process group and waits up to grace before
// killing it; it reports whether the process exited by itself.
func (p *proc) stop(grace time.Duration) bool {
	select {
	case <-p.done:
		return true
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
		return true
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		return false
	}
}

// exited reports whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// waitFor polls cond every 50 ms until it holds or timeout passes.
func waitFor(tb testing.TB, timeout time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
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
