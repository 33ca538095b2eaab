package localcluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync/atomic"
	"time"
)

// child is one process of the cluster.
type child struct {
	name string
	cmd  *exec.Cmd
	out  *lineWriter
	done chan struct{}
	err  error // the exit status, once done is closed

	stopping atomic.Bool // SIGTERM was sent: an exit now is expected
	reported atomic.Bool // its unexpected exit was reported already
}

// spec says how to start a child.
type spec struct {
	name string
	path string
	args []string
	env  []string
}

// startChild starts s with its output going to the console behind its name.
// exited receives the child when it ends.
func startChild(con *console, s spec, dir string, exited chan<- *child) (*child, error) {
	cmd := exec.Command(s.path, s.args...)
	cmd.Env = s.env
	cmd.Dir = dir
	out := con.stream(s.name)
	// The same comparable writer for both: os/exec then uses one pipe and
	// one goroutine, so lines of stdout and stderr never tear each other.
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group, so a terminal's Ctrl-C reaches the launcher
	// only and the processes are stopped in order; killed if the launcher
	// dies without stopping them (Linux).
	cmd.SysProcAttr = childSysProcAttr()
	// A grandchild keeping the output pipe open must not hang Wait.
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s (%s): %w", s.name, s.path, err)
	}
	c := &child{name: s.name, cmd: cmd, out: out, done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		out.Flush()
		close(c.done)
		exited <- c
	}()
	return c, nil
}

// pid is the process id.
func (c *child) pid() int { return c.cmd.Process.Pid }

// exitedYet reports whether the process has ended.
func (c *child) exitedYet() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// describeExit says how a process ended, for the console.
func describeExit(err error) string {
	if err == nil {
		return "exit status 0"
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ProcessState.String() // "exit status 1", "signal: killed"
	}
	return err.Error()
}

// stopChildren sends SIGTERM to every running child, waits up to timeout
// for them (or until force is closed) and then kills those left. It returns
// an error naming every child that did not exit 0.
func stopChildren(con *console, children []*child, timeout time.Duration, force <-chan struct{}) error {
	for _, c := range children {
		if c.exitedYet() {
			continue
		}
		c.stopping.Store(true)
		if err := terminate(c.cmd.Process); err != nil && !errors.Is(err, os.ErrProcessDone) {
			con.logf("SIGTERM to %s (pid %d): %v", c.name, c.pid(), err)
		}
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	killed := map[*child]string{} // why it was killed
	for _, c := range children {
		why := ""
		select {
		case <-c.done:
			continue
		case <-deadline.C:
			why = fmt.Sprintf("did not stop within %s of SIGTERM and was killed", timeout)
		case <-force:
			why = "was killed at once (second signal)"
		}
		for _, left := range children {
			if !left.exitedYet() {
				killed[left] = why
				_ = kill(left.cmd.Process)
			}
		}
		break
	}
	var errs []error
	for _, c := range children {
		<-c.done
		switch {
		case c.reported.Load():
		case !c.stopping.Load():
			errs = append(errs, fmt.Errorf("%s (pid %d) exited unexpectedly (%s)", c.name, c.pid(), describeExit(c.err)))
		case killed[c] != "":
			errs = append(errs, fmt.Errorf("%s (pid %d) %s", c.name, c.pid(), killed[c]))
		case c.err != nil:
			errs = append(errs, fmt.Errorf("%s (pid %d) ended with %s when stopped", c.name, c.pid(), describeExit(c.err)))
		}
	}
	return errors.Join(errs...)
}
