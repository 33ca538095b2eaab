package zkwatch_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/zkwatch"
)

// lines is a Logger that keeps what it is given.
type lines struct {
	mu  sync.Mutex
	got []string
}

func (l *lines) Printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, fmt.Sprintf(format, args...))
}

func (l *lines) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.got...)
}

func TestClientStartsWithoutZooKeeperAndConnectsWhenItComes(t *testing.T) {
	z := harness.StartZooKeeper(t) // its own server: this test stops it
	z.Stop()
	log := &lines{}
	c, err := zkwatch.NewClient(zkwatch.ClientConfig{Hosts: []string{z.Addr}, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.HasSession() {
		t.Fatal("a session with ZooKeeper down")
	}
	waitFor(t, "a failed connection attempt to be logged", func() bool { return len(log.snapshot()) > 0 })
	if got := log.snapshot()[0]; !strings.Contains(got, z.Addr) || !strings.Contains(got, "connection refused") {
		t.Errorf("logged %q, want the attempt's address and error", got)
	}

	if err := z.Restart(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a session", c.HasSession)
	if _, _, err := c.Conn().Exists("/"); err != nil {
		t.Errorf("Exists(/) = %v once connected", err)
	}

	// Gone again, and back: the client reconnects by itself.
	z.Stop()
	waitFor(t, "the session to be lost", func() bool { return !c.HasSession() })
	if err := z.Restart(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a session again", c.HasSession)
}

func TestClientBacksOffBetweenFailedAttempts(t *testing.T) {
	port := harness.Port(t)
	log := &lines{}
	c, err := zkwatch.NewClient(zkwatch.ClientConfig{Hosts: []string{fmt.Sprintf("127.0.0.1:%d", port)}, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Attempts at 0 s and after pauses of 1, 2, 4 s (±20%): 3 within
	// 4.5 s, where go-zookeeper alone tries (and logs) once a second.
	waitFor(t, "the first attempt", func() bool { return len(log.snapshot()) > 0 })
	first := time.Now()
	for time.Since(first) < 4500*time.Millisecond {
		time.Sleep(50 * time.Millisecond)
	}
	if got := log.snapshot(); len(got) < 2 || len(got) > 3 {
		t.Errorf("%d attempts logged in 4.5 s, want 2 or 3:\n%s", len(got), strings.Join(got, "\n"))
	}
}

func TestClientCloseIsIdempotentAndLeavesNoGoroutines(t *testing.T) {
	port := harness.Port(t)
	before := runtime.NumGoroutine()
	c, err := zkwatch.NewClient(zkwatch.ClientConfig{Hosts: []string{fmt.Sprintf("127.0.0.1:%d", port)}})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the client to be created", func() bool { return c.Conn() != nil })
	done := make(chan struct{})
	go func() { c.Close(); c.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return while the client was backing off")
	}
	if c.HasSession() || c.Conn() != nil {
		t.Error("a session or a connection after Close")
	}
	waitFor(t, "goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
}

func TestNewClientNeedsAHost(t *testing.T) {
	if c, err := zkwatch.NewClient(zkwatch.ClientConfig{}); err == nil {
		c.Close()
		t.Error("NewClient accepted no hosts")
	}
}

// Dial, like the watcher, leaves a connection that is never answered after
// the session timeout, instead of go-zookeeper's ten times two thirds of it
// (13 s here), and connects through the next one.
func TestDialGivesUpAConnectionThatIsNeverAnswered(t *testing.T) {
	p := startProxy(t, shared.Addr)
	p.Silence(1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := zkwatch.Dial(ctx, []string{p.Addr()}, 2*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, _, err := conn.Exists("/"); err != nil {
		t.Errorf("Exists through the second connection: %v", err)
	}
	if n := p.Held(); n != 1 {
		t.Errorf("%d connections left unanswered, want the first one", n)
	}
}
