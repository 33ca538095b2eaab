package zkwatch_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/zkwatch"
)

// shared is one ZooKeeper server for the tests that do not stop it; each
// test works under its own path.
var shared harness.SharedZooKeeper

func TestMain(m *testing.M) { shared.Main(m) }

// watch starts a watcher of path on the shared server (config), recording
// what it reports.
func watch(t *testing.T, path string) (*recorder, *zkwatch.Watcher) {
	t.Helper()
	var r recorder
	return &r, start(t, r.hook(config(shared.Addr, path)))
}

// put writes data at path, creating it and its parents if needed; it retries
// while the client reconnects after a server restart.
func put(t *testing.T, conn *zk.Conn, path, data string) {
	t.Helper()
	waitFor(t, "write "+path, func() bool {
		parent := path[:strings.LastIndex(path, "/")]
		if parent != "" {
			if err := zkwatch.EnsurePath(conn, parent); err != nil {
				return false
			}
		}
		_, err := conn.Create(path, []byte(data), 0, zk.WorldACL(zk.PermAll))
		if errors.Is(err, zk.ErrNodeExists) {
			_, err = conn.Set(path, []byte(data), -1)
		}
		return err == nil
	})
}

func del(t *testing.T, conn *zk.Conn, path string) {
	t.Helper()
	if err := conn.Delete(path, -1); err != nil {
		t.Fatalf("delete %s: %v", path, err)
	}
}

// waitFor polls cond until it holds or 30 s pass (generous: the test machine
// may be busy).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	harness.WaitFor(t, what, 30*time.Second, cond)
}

// recorder keeps every handler call in order.
type recorder struct {
	mu      sync.Mutex
	configs []string
	valids  []bool
	errs    []string
}

// hook sets cfg's handlers to record into r.
func (r *recorder) hook(cfg zkwatch.Config) zkwatch.Config {
	cfg.OnConfig = func(s string) { r.mu.Lock(); r.configs = append(r.configs, s); r.mu.Unlock() }
	cfg.OnValid = func(v bool) { r.mu.Lock(); r.valids = append(r.valids, v); r.mu.Unlock() }
	cfg.OnError = func(m string) { r.mu.Lock(); r.errs = append(r.errs, m); r.mu.Unlock() }
	return cfg
}

func (r *recorder) snapshot() (configs []string, valids []bool, errs []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.configs), slices.Clone(r.valids), slices.Clone(r.errs)
}

// expect fails unless the calls recorded so far are exactly these.
func (r *recorder) expect(t *testing.T, configs []string, valids []bool, errs []string) {
	t.Helper()
	c, v, e := r.snapshot()
	if !slices.Equal(c, configs) {
		t.Errorf("OnConfig calls = %q, want %q", c, configs)
	}
	if !slices.Equal(v, valids) {
		t.Errorf("OnValid calls = %v, want %v", v, valids)
	}
	if !slices.Equal(e, errs) {
		t.Errorf("OnError calls = %q, want %q", e, errs)
	}
}

// lastConfig reports whether the latest OnConfig call carried s.
func (r *recorder) lastConfig(s string) func() bool {
	return func() bool {
		c, _, _ := r.snapshot()
		return len(c) > 0 && c[len(c)-1] == s
	}
}

// start runs a watcher that is closed when the test ends.
func start(t *testing.T, cfg zkwatch.Config) *zkwatch.Watcher {
	t.Helper()
	w, err := zkwatch.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w
}

// state waits until the watcher is (in)valid with the given contents.
func state(t *testing.T, w *zkwatch.Watcher, valid bool, contents string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("valid=%v contents=%q", valid, contents), func() bool {
		return w.IsValid() == valid && w.GetFileContents() == contents
	})
}

// proxy is a TCP proxy in front of ZooKeeper that a test can cut, to take the
// server away from one client without stopping it, or make answer nothing
// on some connections, as a starting server does.
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	silent int // connections still to accept and leave unanswered
	held   int // connections accepted and left unanswered so far
	conns  map[net.Conn]struct{}
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		p.Cut()
	})
	return p
}

func (p *proxy) Addr() string { return p.ln.Addr().String() }

func (p *proxy) accept() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		cut := p.cut
		p.mu.Unlock()
		if cut {
			in.Close()
			continue
		}
		p.mu.Lock()
		silent := p.silent > 0
		if silent {
			p.silent--
			p.held++
			p.conns[in] = struct{}{} // open, never read or answered, until Cut
		}
		p.mu.Unlock()
		if silent {
			continue
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			in.Close()
			continue
		}
		p.mu.Lock()
		p.conns[in], p.conns[out] = struct{}{}, struct{}{}
		p.mu.Unlock()
		pipe := func(dst, src net.Conn) {
			_, _ = io.Copy(dst, src)
			dst.Close()
			src.Close()
		}
		go pipe(in, out)
		go pipe(out, in)
	}
}

// Cut closes every proxied connection and refuses new ones until Restore.
func (p *proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// Silence makes the next n connections accepted and never answered, as a
// ZooKeeper server that is starting leaves some (see zkwatch.boundedDialer).
func (p *proxy) Silence(n int) {
	p.mu.Lock()
	p.silent = n
	p.mu.Unlock()
}

// Held is how many connections were accepted and left unanswered.
func (p *proxy) Held() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held
}

// Restore lets connections through again.
func (p *proxy) Restore() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
}

// fourLetter sends a ZooKeeper four-letter command and returns the answer.
func fourLetter(addr, cmd string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte(cmd)); err != nil {
		return "", err
	}
	b, err := io.ReadAll(c)
	return string(b), err
}
