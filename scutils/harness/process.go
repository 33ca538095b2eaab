package harness

import (
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// serviceOutputLimit is how much of a service's output (redis-server's,
// ZooKeeper's) is kept for its error reports.
const serviceOutputLimit = 64 << 10

// ErrStillRunning is what Process.Stop reports (wrapped) when the process
// did not exit within its grace after SIGTERM and was killed.
var ErrStillRunning = errors.New("still running after SIGTERM")

// ProcessSpec is a program for StartProcess to run.
type ProcessSpec struct {
	// Name names the process in messages; the default is Path's base name.
	Name string
	// Path is the program to run, with the arguments Args.
	Path string
	Args []string
	// Env is the whole environment of the process; nil gives it the test's.
	Env []string
	// Dir is its working directory; "" is a new temporary directory of the test.
	Dir string
	// Stdout and Stderr, when set, receive the process's standard output and
	// standard error instead of Output (set both to one writer for one stream).
	Stdout, Stderr io.Writer
	// OutputLimit keeps only the last OutputLimit bytes in Output; 0 keeps all.
	OutputLimit int
	// StopGrace is how long the process has to exit after SIGTERM when the
	// test ends before it gets SIGKILL; 0 kills it at once.
	StopGrace time.Duration
	// Supervise fails the test if the process ends by itself before the test
	// ends it (with Signal, Stop or Kill), or if it is still running StopGrace
	// after the SIGTERM at the test's end.
	Supervise bool
}

// Process is a program a test runs as a child process. It has a process
// group of its own, so a signal reaches whatever it starts too, and it is
// killed should the test binary die first.
type Process struct {
	name           string
	cmd            *exec.Cmd
	out            *OutputBuffer
	stdout, stderr io.Writer
	done           chan struct{}
	err            error // the exit status, once done is closed

	mu        sync.Mutex
	signalled bool // the test sent it a signal
}

// StartProcess starts spec's program for tb. When tb ends the process is
// stopped as spec says (StopGrace, Supervise) and, if tb failed, the end of
// its output is logged. A program that cannot start fails tb.
func StartProcess(tb testing.TB, spec ProcessSpec) *Process {
	tb.Helper()
	if spec.Dir == "" {
		spec.Dir = tb.TempDir()
	}
	p, err := launchProcess(spec)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if spec.Supervise && p.Exited() && !p.Signalled() {
			tb.Errorf("%s exited by itself: %v", p.name, p.err)
		} else if spec.StopGrace == 0 {
			p.Kill()
		} else if err := p.Stop(spec.StopGrace); spec.Supervise && errors.Is(err, ErrStillRunning) {
			tb.Errorf("%s %v", p.name, err)
		}
		if tb.Failed() {
			p.logOutput(tb)
		}
	})
	return p
}

// launchProcess starts spec's program; the caller stops it.
func launchProcess(spec ProcessSpec) (*Process, error) {
	name := spec.Name
	if name == "" {
		name = filepath.Base(spec.Path)
	}
	cmd := exec.Command(spec.Path, spec.Args...)
	cmd.Env = spec.Env
	cmd.Dir = spec.Dir
	p := &Process{name: name, cmd: cmd, out: &OutputBuffer{max: spec.OutputLimit},
		stdout: spec.Stdout, stderr: spec.Stderr, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if spec.Stdout != nil {
		cmd.Stdout = spec.Stdout
	}
	if spec.Stderr != nil {
		cmd.Stderr = spec.Stderr
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Processes are the processes a test has started, found again by name.
type Processes []*Process

// Get is the process named name; it fails tb if there is none.
func (ps Processes) Get(tb testing.TB, name string) *Process {
	tb.Helper()
	for _, p := range ps {
		if p.Name() == name {
			return p
		}
	}
	tb.Fatalf("no process %s", name)
	return nil
}

// Name is the process's name in messages.
func (p *Process) Name() string { return p.name }

// Pid is the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Output is what the process wrote on its standard output and standard
// error, except where ProcessSpec.Stdout or Stderr took them.
func (p *Process) Output() *OutputBuffer { return p.out }

// Done is closed when the process has ended.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Wait waits until the process has ended and returns its exit status: nil
// for exit 0, else an *exec.ExitError.
func (p *Process) Wait() error {
	<-p.done
	return p.err
}

// ExitCode is the process's exit code, or -1 while it runs or if a signal
// ended it.
func (p *Process) ExitCode() int {
	if !p.Exited() {
		return -1
	}
	return p.cmd.ProcessState.ExitCode()
}

// Signal sends sig to the process group, unless the process has ended.
func (p *Process) Signal(sig syscall.Signal) {
	p.mu.Lock()
	p.signalled = true
	p.mu.Unlock()
	if !p.Exited() {
		_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	}
}

// Signalled reports whether the test has sent the process a signal (with
// Signal, Stop or Kill), as opposed to the process ending by itself.
func (p *Process) Signalled() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.signalled
}

// Stop ends the process as an operator does: SIGTERM, and SIGKILL if it is
// still running after grace. It returns the exit status (nil for exit 0), or
// an error wrapping ErrStillRunning when it had to kill the process. On a
// process that has ended it returns the exit status. A nil Process is
// stopped already.
func (p *Process) Stop(grace time.Duration) error {
	if p == nil {
		return nil
	}
	if !p.Exited() {
		p.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(grace):
			p.Kill()
			return fmt.Errorf("%w (%s); killed", ErrStillRunning, grace)
		}
	}
	return p.err
}

// Kill ends the process group at once with SIGKILL and waits for the
// process to end.
func (p *Process) Kill() {
	if p == nil {
		return
	}
	p.Signal(syscall.SIGKILL)
	<-p.done
}

// WaitReady polls probe until it succeeds, and fails with the process's
// output if the process ends first or timeout passes (then it is killed).
func (p *Process) WaitReady(timeout time.Duration, probe func() error) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		if p.Exited() {
			return fmt.Errorf("%s exited early (%v); output:\n%s", p.name, p.err, p.out.String())
		}
		if last = probe(); last == nil {
			return nil
		}
		time.Sleep(25 * time.Millisecond)
	}
	p.Kill()
	return fmt.Errorf("%s not ready after %s: %v; output:\n%s", p.name, timeout, last, p.out.String())
}

// logOutput logs the end of what the process wrote, for a failed test.
func (p *Process) logOutput(tb testing.TB) {
	const limit = 16 << 10
	logged := map[any]bool{}
	for _, o := range []struct {
		what string
		w    any
	}{{"output", p.out}, {"standard output", p.stdout}, {"standard error", p.stderr}} {
		s, ok := o.w.(fmt.Stringer)
		if !ok || logged[o.w] || s.String() == "" {
			continue
		}
		logged[o.w] = true
		tb.Logf("%s of %s (last 16 KiB):\n%s", o.what, p.name, Tail(s.String(), limit))
	}
}

// Tail is the end of s, at most n bytes, marked "..." where it was cut: the
// part of a long output a failure message shows.
func Tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
