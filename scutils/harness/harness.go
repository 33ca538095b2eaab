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
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// ErrMissing reports that a service's program is not installed here.
var ErrMissing = errors.New("service not installed")

// InCI reports whether the tests run in CI (CI=true), where a missing service
// is a failure rather than a skip.
func InCI() bool { return strings.EqualFold(os.Getenv("CI"), "true") }

// Tool is the path of name, a program the test needs (LookPath); without it
// the test is skipped, or fails when CI=true. pkg is the Debian package
// that installs it, for the message.
func Tool(tb testing.TB, name, pkg string) string {
	tb.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if InCI() {
			tb.Fatalf("%s is not installed (apt-get install %s)", name, pkg)
		}
		tb.Skipf("%s is not installed (apt-get install %s; set CI=true to make this a failure)", name, pkg)
	}
	return p
}

// handleStartError skips or fails tb for a service that could not start.
func handleStartError(tb testing.TB, service string, err error) {
	tb.Helper()
	if errors.Is(err, ErrMissing) && !InCI() {
		tb.Skipf("%s: %v (set CI=true to make this a failure)", service, err)
	}
	tb.Fatalf("start %s: %v", service, err)
}

// FreePort returns a loopback TCP port nothing listens on now. It picks one
// below the kernel's ephemeral range (ip_local_port_range) where it can: a
// port the kernel hands out for ":0" comes from that range, which the
// outgoing connections of every test running beside it use too, and one of
// them can take the port before the test's server binds it ("address
// already in use"). Below the range only another listener can.
func FreePort() (int, error) {
	low := ephemeralLow()
	for range 50 {
		if low <= minPickedPort {
			break
		}
		port := minPickedPort + rand.IntN(low-minPickedPort)
		if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			l.Close()
			return port, nil
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// minPickedPort is the lowest port FreePort picks: above the well-known and
// commonly configured ones.
const minPickedPort = 10000

// ephemeralLow is the first port of the kernel's ephemeral range, or 0 when
// it cannot be read (then FreePort asks the kernel for one).
func ephemeralLow() int {
	raw, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	var low, high int
	if _, err := fmt.Sscan(string(raw), &low, &high); err != nil {
		return 0
	}
	return low
}

// Port is FreePort for a test: it fails tb when no port can be found.
func Port(tb testing.TB) int {
	tb.Helper()
	return must(tb, FreePort)
}

// must is get's value; get's error fails tb.
func must[T any](tb testing.TB, get func() (T, error)) T {
	tb.Helper()
	v, err := get()
	if err != nil {
		tb.Fatal(err)
	}
	return v
}

// WaitFor polls cond until it holds, and fails tb if timeout passes first
// (Until).
func WaitFor(tb testing.TB, what string, timeout time.Duration, cond func() bool) {
	tb.Helper()
	if !Until(timeout, cond) {
		tb.Fatalf("timed out after %s waiting for %s", timeout, what)
	}
}

// Until polls cond until it holds or timeout passes, and reports whether it
// held. It polls every 10 ms for the first second, then every 100 ms, so a
// quick condition is seen at once and a long wait costs little.
func Until(timeout time.Duration, cond func() bool) bool {
	start := time.Now()
	for !cond() {
		waited := time.Since(start)
		if waited > timeout {
			return false
		}
		if waited < time.Second {
			time.Sleep(10 * time.Millisecond)
		} else {
			time.Sleep(100 * time.Millisecond)
		}
	}
	return true
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
	mu  sync.Mutex
	b   []byte
	max int // keep only the last max bytes; 0 keeps all
}

// Write appends p.
func (o *OutputBuffer) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.b = append(o.b, p...)
	if o.max > 0 && len(o.b) > o.max {
		o.b = append([]byte(nil), o.b[len(o.b)-o.max:]...)
	}
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
