package zkwatch_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/zkwatch"
)

// config is the watcher configuration the tests start from. The periodic
// re-read is off, so the tests prove that watches alone deliver changes.
func config(addr, path string) zkwatch.Config {
	return zkwatch.Config{
		Hosts:          []string{addr},
		Path:           path,
		ValidInit:      true,
		MaxBackoff:     time.Second,
		ResyncInterval: -1,
	}
}

func TestPlainNodeDeliversInitialContentsAndEachChangeOnce(t *testing.T) {
	c, path := shared.Node(t, "/myconfig")
	put(t, c, path, "stuff here")

	r, w := watch(t, path)
	// ValidInit: the first read is done when New returns.
	if !w.IsValid() || w.GetFileContents() != "stuff here" {
		t.Fatalf("after New: valid=%v contents=%q", w.IsValid(), w.GetFileContents())
	}
	if got := w.GetPointerContents(); got != "" {
		t.Errorf("GetPointerContents in plain mode = %q, want empty", got)
	}

	put(t, c, path, "stuff here") // same contents again: no call
	put(t, c, path, "NEW stuff")
	waitFor(t, "NEW stuff delivered", r.lastConfig("NEW stuff"))
	put(t, c, path, "")
	waitFor(t, "empty contents delivered", r.lastConfig(""))
	state(t, w, true, "")
	r.expect(t, []string{"stuff here", "NEW stuff", ""}, []bool{true}, nil)
}

func TestBurstsOfChangesNeverLoseTheWatch(t *testing.T) {
	c, path := shared.Node(t, "/cfg")
	put(t, c, path, "start")
	r, w := watch(t, path)

	for round := range 20 {
		// Intermediate values may be coalesced; the last must arrive.
		for i := range 10 {
			put(t, c, path, fmt.Sprintf("round %d change %d", round, i))
		}
		state(t, w, true, fmt.Sprintf("round %d change 9", round))
	}
	configs, _, _ := r.snapshot()
	for i := 1; i < len(configs); i++ {
		if configs[i] == configs[i-1] {
			t.Fatalf("OnConfig(%q) called twice in a row", configs[i])
		}
	}
}

func TestEnsureCreatesTheMissingNodeAndItsParents(t *testing.T) {
	c, path := shared.Node(t, "/deep/er/node")

	var r recorder
	cfg := r.hook(config(shared.Addr, path))
	cfg.Ensure = true
	w := start(t, cfg)
	state(t, w, true, "")
	data, _, err := c.Get(path)
	if err != nil || data == nil || len(data) != 0 {
		t.Fatalf("node after Ensure: %#v, %v; want an empty (not null) node", data, err)
	}
	// Deleted later, it is created again: still valid, still empty.
	del(t, c, path)
	put(t, c, path, "back")
	waitFor(t, "back delivered", r.lastConfig("back"))
	r.expect(t, []string{"back"}, []bool{true}, nil)
}

func TestMissingNodeIsInvalidUntilCreatedAndDeletionClearsContents(t *testing.T) {
	c, path := shared.Node(t, "/cfg")

	r, w := watch(t, path)
	state(t, w, false, "")
	r.expect(t, nil, nil, []string{zkwatch.MsgInvalidGet})

	put(t, c, path, "created later")
	state(t, w, true, "created later")
	del(t, c, path)
	state(t, w, false, "")
	put(t, c, path, "created later")
	state(t, w, true, "created later")
	r.expect(t,
		[]string{"created later", "created later"},
		[]bool{true, false, true},
		[]string{zkwatch.MsgInvalidGet, zkwatch.MsgInvalidGet})
}

func TestPointerFollowsThePointerAndThePointedAtNode(t *testing.T) {
	c, b := shared.Node(t, "")
	put(t, c, b+"/tmp/myconfig", "EVENT TRIGGER config")
	put(t, c, b+"/tmp/myconfig2", "this is another config")
	// A trailing newline, as a text editor leaves it, is trimmed.
	put(t, c, b+"/tmp_pointers/pointer1", b+"/tmp/myconfig\n")

	var r recorder
	cfg := r.hook(config(shared.Addr, b+"/tmp_pointers/pointer1"))
	cfg.Pointer = true
	w := start(t, cfg)
	state(t, w, true, "EVENT TRIGGER config")
	if got := w.GetPointerContents(); got != b+"/tmp/myconfig\n" {
		t.Errorf("GetPointerContents = %q", got)
	}

	put(t, c, b+"/tmp/myconfig", "EVENT TRIGGER config v2")
	state(t, w, true, "EVENT TRIGGER config v2")

	// Re-pointing switches the configuration...
	put(t, c, b+"/tmp_pointers/pointer1", b+"/tmp/myconfig2")
	state(t, w, true, "this is another config")
	// ...the old node no longer matters...
	put(t, c, b+"/tmp/myconfig", "ignored")
	// ...and the new one is watched.
	put(t, c, b+"/tmp/myconfig2", "this is another config I ADDED NEW STUFF")
	state(t, w, true, "this is another config I ADDED NEW STUFF")
	// Same target with different white space: no change.
	put(t, c, b+"/tmp_pointers/pointer1", " "+b+"/tmp/myconfig2\n")
	waitFor(t, "pointer re-read", func() bool { return w.GetPointerContents() == " "+b+"/tmp/myconfig2\n" })

	r.expect(t,
		[]string{"EVENT TRIGGER config", "EVENT TRIGGER config v2", "this is another config", "this is another config I ADDED NEW STUFF"},
		[]bool{true}, nil)
}

func TestInvalidPointerMakesTheWatcherInvalid(t *testing.T) {
	c, b := shared.Node(t, "")
	ptr := b + "/pointer"
	put(t, c, b+"/good", "good config")
	put(t, c, ptr, b+"/good")

	var r recorder
	cfg := r.hook(config(shared.Addr, ptr))
	cfg.Pointer = true
	w := start(t, cfg)
	state(t, w, true, "good config")

	steps := []struct {
		name    string
		pointer string
	}{
		{"empty pointer", ""},
		{"white space only", "\n"},
		{"not a path", "good config"},
		{"two lines", b + "/good\n" + b + "/good"},
		{"missing node", b + "/missing"},
	}
	for _, s := range steps {
		put(t, c, ptr, b+"/good") // valid again between steps
		state(t, w, true, "good config")
		put(t, c, ptr, s.pointer)
		waitFor(t, s.name+" makes the watcher invalid", func() bool {
			return !w.IsValid() && w.GetFileContents() == "" && w.GetPointerContents() == s.pointer
		})
	}
	// The missing node appears: its contents are delivered.
	put(t, c, b+"/missing", "late config")
	state(t, w, true, "late config")

	configs, valids, errs := r.snapshot()
	if len(errs) == 0 {
		t.Fatal("OnError never called")
	}
	for _, e := range errs {
		if e != zkwatch.MsgInvalidPointer {
			t.Errorf("OnError(%q), want %q", e, zkwatch.MsgInvalidPointer)
		}
	}
	if configs[len(configs)-1] != "late config" || !valids[len(valids)-1] {
		t.Errorf("last calls: config %q valid %v", configs[len(configs)-1], valids[len(valids)-1])
	}
	for i := 1; i < len(valids); i++ {
		if valids[i] == valids[i-1] {
			t.Fatalf("OnValid called twice in a row with %v: %v", valids[i], valids)
		}
	}
}

func TestPollingWithoutHandlers(t *testing.T) {
	c, path := shared.Node(t, "/myconfig")
	put(t, c, path, "My configuration string here. Typically YAML or JSON")

	cfg := config(shared.Addr, path)
	cfg.ValidInit = false
	w := start(t, cfg)
	state(t, w, true, "My configuration string here. Typically YAML or JSON")
	if !w.Ping() {
		t.Error("Ping = false against a running server")
	}
	put(t, c, path, "NEW My configuration string here. Typically YAML or JSON")
	state(t, w, true, "NEW My configuration string here. Typically YAML or JSON")
}

func TestValidInitFailsFastAgainstADeadAddress(t *testing.T) {
	port := harness.Port(t)
	before := runtime.NumGoroutine()
	cfg := config(fmt.Sprintf("127.0.0.1:%d", port), "/nothing")
	cfg.ConnectTimeout = time.Second
	var r recorder
	w, err := zkwatch.New(context.Background(), r.hook(cfg))
	if err == nil {
		w.Close()
		t.Fatal("New succeeded against a dead address")
	}
	if !strings.Contains(err.Error(), "no session within 1s") || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("error %q should say it got no session and why", err)
	}
	r.expect(t, nil, nil, nil)
	waitFor(t, "goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
}

func TestNewRejectsAnIncompleteConfig(t *testing.T) {
	for _, tc := range []struct {
		name  string
		hosts []string
		path  string
	}{
		{"no hosts", nil, "/a"},
		{"empty path", []string{"127.0.0.1:1"}, ""},
		{"relative path", []string{"127.0.0.1:1"}, "a/b"},
		{"trailing slash", []string{"127.0.0.1:1"}, "/a/"},
		{"empty component", []string{"127.0.0.1:1"}, "/a//b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := zkwatch.New(context.Background(), zkwatch.Config{Hosts: tc.hosts, Path: tc.path})
			if err == nil {
				w.Close()
				t.Fatal("New accepted it")
			}
		})
	}
}

func TestWithoutValidInitNewReturnsAtOnceAndConnectsLater(t *testing.T) {
	c, path := shared.Node(t, "/cfg")
	put(t, c, path, "v1")
	p := startProxy(t, shared.Addr)
	p.Cut()

	var r recorder
	cfg := r.hook(config(p.Addr(), path))
	cfg.ValidInit = false
	w := start(t, cfg)
	if w.IsValid() || w.Ping() {
		t.Fatal("valid or pingable before ZooKeeper was reachable")
	}
	p.Restore()
	state(t, w, true, "v1")
	r.expect(t, []string{"v1"}, []bool{true}, nil)
}

// A ZooKeeper that is starting accepts a few connections and never answers
// them. go-zookeeper alone would wait ten times two thirds of the session
// timeout for the handshake's answer (13 s here, 67 s with the default 10 s
// session) before it tried again; the watcher gives up after the session
// timeout.
func TestAConnectionThatIsNeverAnsweredIsGivenUpAfterTheSessionTimeout(t *testing.T) {
	c, path := shared.Node(t, "/cfg")
	put(t, c, path, "v1")
	p := startProxy(t, shared.Addr)
	p.Silence(1)

	var r recorder
	cfg := r.hook(config(p.Addr(), path))
	cfg.ValidInit = false
	cfg.SessionTimeout = 2 * time.Second
	w := start(t, cfg)
	// 2 s on the silent connection, about 1 s of back-off, then a session:
	// 10 s leaves room for a busy machine and none for go-zookeeper's 13 s.
	harness.WaitFor(t, "the config through a second connection", 10*time.Second, func() bool {
		return w.IsValid() && w.GetFileContents() == "v1"
	})
	if n := p.Held(); n != 1 {
		t.Errorf("%d connections left unanswered, want the first one", n)
	}
	r.expect(t, []string{"v1"}, []bool{true}, nil)
}

// The key circuit-breaker case: the server goes away and comes back.
func TestKeepsLastContentsWhileZooKeeperRestartsAndSeesLaterChanges(t *testing.T) {
	z := harness.StartZooKeeper(t) // its own server: this test stops it
	c := harness.ZooKeeperClient(t, z.Addr)
	path := "/scrapy-cluster/crawler/all"
	put(t, c, path, "v1")

	var r recorder
	w := start(t, r.hook(config(z.Addr, path)))
	state(t, w, true, "v1")

	z.Stop()
	state(t, w, false, "v1") // invalid, last good contents kept
	if w.Ping() {
		t.Error("Ping = true while the server is down")
	}
	r.expect(t, []string{"v1"}, []bool{true, false}, []string{zkwatch.MsgBadConnection})

	if err := z.Restart(); err != nil {
		t.Fatal(err)
	}
	// Written right after the restart, possibly before the watcher is back.
	put(t, c, path, "v2")
	state(t, w, true, "v2")
	if !w.Ping() {
		t.Error("Ping = false after the restart")
	}
	// The watch is armed again: a later change arrives too.
	put(t, c, path, "v3")
	state(t, w, true, "v3")
	r.expect(t, []string{"v1", "v2", "v3"}, []bool{true, false, true}, []string{zkwatch.MsgBadConnection})
}

func TestChangeMadeWhileCutOffIsDeliveredOnReconnect(t *testing.T) {
	c, path := shared.Node(t, "/cfg")
	put(t, c, path, "v1")
	p := startProxy(t, shared.Addr)

	var r recorder
	w := start(t, r.hook(config(p.Addr(), path)))
	state(t, w, true, "v1")
	session := w.SessionID()

	p.Cut()
	state(t, w, false, "v1")
	put(t, c, path, "v2") // while the watcher cannot see the server
	p.Restore()
	state(t, w, true, "v2")
	if got := w.SessionID(); got != session {
		t.Errorf("session changed from 0x%x to 0x%x; a short cut should keep it", session, got)
	}
	put(t, c, path, "v3")
	state(t, w, true, "v3")
	r.expect(t, []string{"v1", "v2", "v3"}, []bool{true, false, true}, []string{zkwatch.MsgBadConnection})
}

func TestSessionExpiryStartsANewSessionAndRearmsWatches(t *testing.T) {
	c, b := shared.Node(t, "")
	put(t, c, b+"/cfg", "v1")
	put(t, c, b+"/ptr", b+"/cfg")
	p := startProxy(t, shared.Addr)

	var r recorder
	cfg := r.hook(config(p.Addr(), b+"/ptr"))
	cfg.Pointer = true
	cfg.SessionTimeout = 2 * time.Second
	w := start(t, cfg)
	state(t, w, true, "v1")
	session := w.SessionID()

	p.Cut()
	state(t, w, false, "v1")
	put(t, c, b+"/cfg", "v2")
	waitFor(t, "the server to expire the session", func() bool {
		dump, err := fourLetter(shared.Addr, "dump")
		return err == nil && strings.Contains(dump, "Session") && !strings.Contains(dump, fmt.Sprintf("0x%x", session))
	})
	p.Restore()
	state(t, w, true, "v2")
	if got := w.SessionID(); got == session || got == 0 {
		t.Errorf("session 0x%x after expiry of 0x%x; want a new one", got, session)
	}
	put(t, c, b+"/cfg", "v3") // watches on the new session
	state(t, w, true, "v3")
	put(t, c, b+"/cfg2", "other")
	put(t, c, b+"/ptr", b+"/cfg2")
	state(t, w, true, "other")
	r.expect(t, []string{"v1", "v2", "v3", "other"}, []bool{true, false, true}, []string{zkwatch.MsgBadConnection})
}

func TestCloseIsIdempotentAndLeavesNoGoroutines(t *testing.T) {
	c, path := shared.Node(t, "/cfg")
	put(t, c, path, "v1")

	before := runtime.NumGoroutine()
	var r recorder
	cfg := r.hook(config(shared.Addr, path))
	cfg.Pointer = false
	cfg.ResyncInterval = 0 // default ticker, to see it stop too
	w, err := zkwatch.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	state(t, w, true, "v1")
	w.Close()
	w.Close()
	if w.IsValid() || w.Ping() {
		t.Error("valid or pingable after Close")
	}
	if got := w.GetFileContents(); got != "v1" {
		t.Errorf("GetFileContents after Close = %q, want the last contents", got)
	}
	put(t, c, path, "v2")
	waitFor(t, "goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
	r.expect(t, []string{"v1"}, []bool{true}, nil)
}

func TestCancellingTheContextStopsTheWatcher(t *testing.T) {
	c, path := shared.Node(t, "/cfg")
	put(t, c, path, "v1")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := zkwatch.New(ctx, config(shared.Addr, path))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	state(t, w, true, "v1")
	cancel()
	select {
	case <-w.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("watcher still running 10 s after its context ended")
	}
	if w.IsValid() {
		t.Error("valid after the context ended")
	}
}

func TestBackoffGrowsAndIsCapped(t *testing.T) {
	max := 10 * time.Second
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 8 * time.Second, 5: max, 50: max} {
		got := zkwatch.BackoffDelay(n, max)
		lo := time.Duration(float64(want) * 0.8)
		if lo < time.Second {
			lo = time.Second
		}
		if got < lo || got > time.Duration(float64(want)*1.2) {
			t.Errorf("BackoffDelay(%d) = %s, want %s ±20%% and at least 1s", n, got, want)
		}
	}
}
