// Package harness starts real services for tests: a redis-server, a ZooKeeper
// server and an in-process kfake Kafka broker, each on a free loopback port,
// and stops them when the test ends, even when it fails.
//
// Every module's tests use it the same way:
//
//	func TestSomething(t *testing.T) {
//		r := harness.StartRedis(t)        // real redis-server, stopped by t.Cleanup
//		zk := harness.StartZooKeeper(t)   // real ZooKeeper (Debian package)
//		k := harness.StartKafka(t)        // kfake broker speaking the Kafka protocol
//		...
//	}
//
// When a service's binary is missing the test is skipped, except when the
// environment variable CI is "true": then a missing service fails the test,
// so CI can never pass by skipping.
//
// For packages that share one service across many tests, LaunchRedis,
// LaunchZooKeeper and LaunchKafka return the service without a testing.TB;
// call Close when done (typically from TestMain).
package harness

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ErrMissing reports that a service's program is not installed here.
var ErrMissing = errors.New("service not installed")

// InCI reports whether the tests run in CI (CI=true), where a missing service
// is a failure rather than a skip.
func InCI() bool { return strings.EqualFold(os.Getenv("CI"), "true") }

// handleStartError skips or fails tb for a service that could not start.
func handleStartError(tb testing.TB, service string, err error) {
	tb.Helper()
	if errors.Is(err, ErrMissing) && !InCI() {
		tb.Skipf("%s: %v (set CI=true to make this a failure)", service, err)
	}
	tb.Fatalf("start %s: %v", service, err)
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// process is a child service process with its output kept for error reports.
type process struct {
	name string
	cmd  *exec.Cmd
	out  *tailBuffer
	done chan struct{}
	err  error
}

func startProcess(name string, dir string, argv ...string) (*process, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	out := &tailBuffer{max: 64 << 10}
	cmd.Stdout = out
	cmd.Stderr = out
	// Own process group, and killed if the test binary dies first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, out: out, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop ends the process group with SIGTERM, then SIGKILL after grace.
func (p *process) stop(grace time.Duration) {
	if p == nil || p.exited() {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// kill ends the process group at once with SIGKILL.
func (p *process) kill() {
	if p == nil || p.exited() {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// waitReady polls probe until it succeeds, the process exits or timeout passes.
func (p *process) waitReady(timeout time.Duration, probe func() error) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		if p.exited() {
			return fmt.Errorf("%s exited early (%v); output:\n%s", p.name, p.err, p.out.String())
		}
		if last = probe(); last == nil {
			return nil
		}
		time.Sleep(25 * time.Millisecond)
	}
	p.kill()
	return fmt.Errorf("%s not ready after %s: %v; output:\n%s", p.name, timeout, last, p.out.String())
}

// lineCommand sends a one-line command (a Redis inline command or a ZooKeeper
// four-letter word) and returns the first line of the reply.
func lineCommand(addr, command string, timeout time.Duration) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(timeout))
	if _, err := conn.Write([]byte(command)); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil && line == "" {
		return "", err
	}
	return line, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > b.max {
		b.buf = append([]byte(nil), b.buf[len(b.buf)-b.max:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// RunWithRedis is a TestMain body for packages whose tests share one
// redis-server: it launches the server into *server, runs the tests, stops
// the server and returns the exit code. A missing redis-server skips the
// package (or fails it when CI=true).
//
//	var server *harness.Redis
//	func TestMain(m *testing.M) { os.Exit(harness.RunWithRedis(m, &server)) }
func RunWithRedis(m *testing.M, server **Redis) int {
	r, err := LaunchRedis(RedisOptions{})
	if err != nil {
		return reportLaunchError("redis-server", err)
	}
	defer r.Close()
	*server = r
	return m.Run()
}

// RunWithZooKeeper is RunWithRedis for a shared ZooKeeper server.
func RunWithZooKeeper(m *testing.M, server **ZooKeeper) int {
	z, err := LaunchZooKeeper()
	if err != nil {
		return reportLaunchError("zookeeper", err)
	}
	defer z.Close()
	*server = z
	return m.Run()
}

// reportLaunchError turns a failed launch in TestMain into an exit code:
// 0 (skipped) for a missing service outside CI, 1 otherwise.
func reportLaunchError(service string, err error) int {
	if errors.Is(err, ErrMissing) && !InCI() {
		fmt.Printf("skipping: %s: %v (set CI=true to make this a failure)\n", service, err)
		return 0
	}
	fmt.Printf("start %s: %v\n", service, err)
	return 1
}

// OutputBuffer collects output (a logger's, a child process's) while a test
// reads it: Write and String are safe to call from different goroutines.
type OutputBuffer struct {
	mu sync.Mutex
	b  []byte
}

// Write appends p.
func (o *OutputBuffer) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.b = append(o.b, p...)
	return len(p), nil
}

// String returns everything written so far.
func (o *OutputBuffer) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return string(o.b)
}

// Contains reports whether s has been written.
func (o *OutputBuffer) Contains(s string) bool { return strings.Contains(o.String(), s) }
