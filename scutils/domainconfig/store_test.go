package domainconfig_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/domainconfig"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/zkwatch"
)

// backend is one kind of store with a way to look at and change what it
// stores behind its back, as an operator (file-pusher, redis-cli) would.
type backend struct {
	path string
	// open returns a new store on the document with its own connection, as
	// another process would have.
	open func(t *testing.T) domainconfig.Store
	// raw returns the stored bytes and whether there are any.
	raw func(t *testing.T) (string, bool)
	// put stores data as it is (in Redis without an announcement).
	put func(t *testing.T, data string)
	// settings name the document's place, as a crawler's would; rdb is
	// the Redis client for Watch (nil with ZooKeeper).
	settings func(t *testing.T) *settings.Settings
	rdb      *redis.Client
}

// loadSettings loads the ZooKeeper settings with env (and not the
// process's environment) over their defaults.
func loadSettings(t *testing.T, env ...string) *settings.Settings {
	t.Helper()
	s, err := settings.Load(domainconfig.Settings(), settings.Options{Environ: append([]string{}, env...)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// settingsFor names path with ZOOKEEPER_HOSTS set to hosts.
func settingsFor(hosts, path string) func(t *testing.T) *settings.Settings {
	return func(t *testing.T) *settings.Settings {
		folder, id := path[:strings.LastIndex(path, "/")+1], path[strings.LastIndex(path, "/")+1:]
		return loadSettings(t, "ZOOKEEPER_HOSTS="+hosts, "ZOOKEEPER_ASSIGN_PATH="+folder, "ZOOKEEPER_ID="+id)
	}
}

func zooKeeperBackend(t *testing.T) backend {
	path := nodePath(t)
	conn := harness.ZooKeeperClient(t, zkServer.Addr)
	return backend{
		path: path,
		open: func(t *testing.T) domainconfig.Store { return zkStore(t, zkServer.Addr, path) },
		raw: func(t *testing.T) (string, bool) {
			data, _, err := conn.Get(path)
			if errors.Is(err, zk.ErrNoNode) {
				return "", false
			}
			if err != nil {
				t.Fatal(err)
			}
			return string(data), true
		},
		put: func(t *testing.T, data string) {
			if err := zkwatch.EnsurePath(conn, path); err != nil {
				t.Fatal(err)
			}
			if _, err := conn.Set(path, []byte(data), -1); err != nil {
				t.Fatal(err)
			}
		},
		settings: settingsFor(zkServer.Addr, path),
	}
}

func redisBackend(t *testing.T, r *harness.Redis) backend {
	path := nodePath(t)
	rdb := r.TestClient(t)
	key := rediskeys.DomainConfigKey(path)
	return backend{
		path: path,
		open: func(t *testing.T) domainconfig.Store { return domainconfig.NewRedisStore(r.TestClient(t), path) },
		raw: func(t *testing.T) (string, bool) {
			data, err := rdb.Get(context.Background(), key).Result()
			if errors.Is(err, redis.Nil) {
				return "", false
			}
			if err != nil {
				t.Fatal(err)
			}
			return data, true
		},
		put: func(t *testing.T, data string) {
			if err := rdb.Set(context.Background(), key, data, 0).Err(); err != nil {
				t.Fatal(err)
			}
		},
		settings: settingsFor("", path),
		rdb:      r.TestClient(t),
	}
}

// forEachStore runs test against a ZooKeeper store and a Redis store.
func forEachStore(t *testing.T, test func(t *testing.T, b backend)) {
	t.Run("ZooKeeper", func(t *testing.T) { test(t, zooKeeperBackend(t)) })
	t.Run("Redis", func(t *testing.T) { test(t, redisBackend(t, harness.StartRedis(t))) })
}

const specDocument = "blacklist:\n- ebay.com\ndomains:\n  dmoz.org:\n    hits: 60\n    scale: 0.9\n    window: 60\n"

func TestGetReadsAMissingDocumentAsEmpty(t *testing.T) {
	forEachStore(t, func(t *testing.T, b backend) {
		got, err := b.open(t).Get(testContext(t))
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Blacklist) != 0 || len(got.Domains) != 0 {
			t.Errorf("Get() = %+v, want the empty document", got)
		}
		if _, ok := b.raw(t); ok {
			t.Errorf("Get created the document")
		}
	})
}

func TestUpdateStoresWhatTheOriginalWrites(t *testing.T) {
	forEachStore(t, func(t *testing.T, b backend) {
		s := b.open(t)
		err := s.Update(testContext(t), func(d *domainconfig.Document) error {
			d.UpdateDomain("dmoz.org", 60, 60, 0.9)
			d.AddBlacklist("ebay.com")
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := b.raw(t); got != specDocument {
			t.Errorf("stored\n%s\nwant\n%s", got, specDocument)
		}
		doc, err := b.open(t).Get(testContext(t))
		if err != nil {
			t.Fatal(err)
		}
		if string(doc.Marshal()) != specDocument {
			t.Errorf("another store reads\n%s\nwant\n%s", doc.Marshal(), specDocument)
		}
	})
}

func TestUpdateEditsAHandWrittenDocument(t *testing.T) {
	forEachStore(t, func(t *testing.T, b backend) {
		b.put(t, "# pushed with file-pusher\nblacklist:\n    - ebay.com\ndomains:\n    dmoz.org:\n        window: 60\n        hits: 60\n        scale: 0.9\n")
		err := b.open(t).Update(testContext(t), func(d *domainconfig.Document) error {
			d.AddBlacklist("amazon.com")
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		want := "blacklist:\n- ebay.com\n- amazon.com\ndomains:\n  dmoz.org:\n    hits: 60\n    scale: 0.9\n    window: 60\n"
		if got, _ := b.raw(t); got != want {
			t.Errorf("stored\n%s\nwant\n%s", got, want)
		}
	})
}

func TestUpdateThatChangesNothingOnAMissingDocumentCreatesTheEmptyOne(t *testing.T) {
	// The original writes the document back on every request, so a
	// domain-remove on a fresh cluster leaves the empty document behind.
	forEachStore(t, func(t *testing.T, b backend) {
		err := b.open(t).Update(testContext(t), func(d *domainconfig.Document) error {
			d.RemoveDomain("dmoz.org")
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := b.raw(t); !ok || got != "blacklist: []\ndomains: {}\n" {
			t.Errorf("stored %q (present %v), want the empty document", got, ok)
		}
	})
}

func TestUpdateReturnsTheEditsErrorAndWritesNothing(t *testing.T) {
	forEachStore(t, func(t *testing.T, b backend) {
		b.put(t, specDocument)
		refuse := errors.New("refused")
		err := b.open(t).Update(testContext(t), func(d *domainconfig.Document) error {
			d.AddBlacklist("amazon.com")
			return refuse
		})
		if err != refuse {
			t.Errorf("Update() = %v, want the edit's error itself", err)
		}
		if got, _ := b.raw(t); got != specDocument {
			t.Errorf("stored\n%s\nafter a refused edit, want it unchanged", got)
		}
	})
}

func TestAMalformedStoredDocumentIsAReadError(t *testing.T) {
	forEachStore(t, func(t *testing.T, b backend) {
		const bad = "domains:\n  dmoz.org: {hits: lots, window: 60}\n"
		b.put(t, bad)
		s := b.open(t)
		_, err := s.Get(testContext(t))
		if !errors.Is(err, domainconfig.ErrRead) || !strings.Contains(err.Error(), `"lots" is not a number`) {
			t.Errorf("Get() error = %v, want ErrRead naming the problem", err)
		}
		called := false
		err = s.Update(testContext(t), func(d *domainconfig.Document) error { called = true; return nil })
		if !errors.Is(err, domainconfig.ErrRead) || errors.Is(err, domainconfig.ErrWrite) {
			t.Errorf("Update() error = %v, want ErrRead", err)
		}
		if called {
			t.Error("Update ran the edit on a malformed document")
		}
		if got, _ := b.raw(t); got != bad {
			t.Errorf("stored %q, want the malformed document left alone", got)
		}
	})
}

// TestConcurrentUpdatesLoseNothing is the guarantee the Redis Monitors rely
// on: many writers, each with its own connection, all starting at once.
func TestConcurrentUpdatesLoseNothing(t *testing.T) {
	forEachStore(t, func(t *testing.T, b backend) {
		const writers = 20
		stores := make([]domainconfig.Store, writers)
		for i := range stores {
			stores[i] = b.open(t)
		}
		var edits atomic.Int64
		start := make(chan struct{})
		errs := make(chan error, writers)
		var wg sync.WaitGroup
		for i, s := range stores {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				errs <- s.Update(testContext(t), func(d *domainconfig.Document) error {
					edits.Add(1)
					d.AddBlacklist(fmt.Sprintf("domain%02d.com", i))
					d.UpdateDomain(fmt.Sprintf("throttled%02d.com", i), i+1, 60, 0.5)
					return nil
				})
			}()
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
		doc, err := b.open(t).Get(testContext(t))
		if err != nil {
			t.Fatal(err)
		}
		bl := slices.Clone(doc.Blacklist)
		slices.Sort(bl)
		var want []string
		for i := range writers {
			want = append(want, fmt.Sprintf("domain%02d.com", i))
			if d, ok := doc.Domains[fmt.Sprintf("throttled%02d.com", i)]; !ok || d.Hits != i+1 {
				t.Errorf("throttled%02d.com = %+v (present %v), want hits %d", i, d, ok, i+1)
			}
		}
		if !slices.Equal(bl, want) {
			t.Errorf("blacklist = %q, want all %d domains once: %q", doc.Blacklist, writers, want)
		}
		t.Logf("%d writers ran their edit %d times", writers, edits.Load())
	})
}

func TestRedisStoreAnnouncesEachNewDocumentInOrder(t *testing.T) {
	r := harness.StartRedis(t)
	path := nodePath(t)
	ctx := testContext(t)
	sub := harness.Subscribe(t, r.TestClient(t), rediskeys.DomainConfigChannel(path))
	s := domainconfig.NewRedisStore(r.TestClient(t), path)
	edits := []func(*domainconfig.Document) bool{
		func(d *domainconfig.Document) bool { return d.AddBlacklist("ebay.com") },
		func(d *domainconfig.Document) bool { return d.AddBlacklist("ebay.com") }, // no change: no announcement
		func(d *domainconfig.Document) bool { return d.UpdateDomain("dmoz.org", 60, 60, 0.9) },
	}
	for _, edit := range edits {
		if err := s.Update(ctx, func(d *domainconfig.Document) error { edit(d); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	got := harness.Messages(t, sub, 2, 30*time.Second)
	for i, want := range []string{"blacklist:\n- ebay.com\ndomains: {}\n", specDocument} {
		if got[i] != want {
			t.Errorf("announced\n%s\nwant\n%s", got[i], want)
		}
	}
}

func TestZooKeeperStoreLeavesAnUnchangedNodeAlone(t *testing.T) {
	b := zooKeeperBackend(t)
	b.put(t, specDocument)
	conn := harness.ZooKeeperClient(t, zkServer.Addr)
	_, before, err := conn.Get(b.path)
	if err != nil {
		t.Fatal(err)
	}
	err = b.open(t).Update(testContext(t), func(d *domainconfig.Document) error {
		d.AddBlacklist("ebay.com")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	_, after, err := conn.Get(b.path)
	if err != nil {
		t.Fatal(err)
	}
	if after.Version != before.Version {
		t.Errorf("node version went from %d to %d for an edit that changed nothing", before.Version, after.Version)
	}
}

func TestZooKeeperStoreReportsAFailedWrite(t *testing.T) {
	b := zooKeeperBackend(t)
	b.put(t, specDocument)
	conn := harness.ZooKeeperClient(t, zkServer.Addr)
	if _, err := conn.SetACL(b.path, zk.WorldACL(zk.PermRead), -1); err != nil {
		t.Fatal(err)
	}
	err := b.open(t).Update(testContext(t), func(d *domainconfig.Document) error {
		d.AddBlacklist("amazon.com")
		return nil
	})
	if !errors.Is(err, domainconfig.ErrWrite) || !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("Update() on a read-only node = %v, want ErrWrite with zk.ErrNoAuth", err)
	}
}

func TestRedisStoreReportsAKeyOfTheWrongType(t *testing.T) {
	r := harness.StartRedis(t)
	path := nodePath(t)
	rdb := r.TestClient(t)
	if err := rdb.HSet(context.Background(), rediskeys.DomainConfigKey(path), "a", "b").Err(); err != nil {
		t.Fatal(err)
	}
	err := domainconfig.NewRedisStore(rdb, path).Update(testContext(t), func(*domainconfig.Document) error { return nil })
	if !errors.Is(err, domainconfig.ErrRead) || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Errorf("Update() = %v, want ErrRead with Redis's WRONGTYPE", err)
	}
	if errors.Is(err, domainconfig.ErrUnavailable) {
		t.Errorf("Update() = %v, marked ErrUnavailable though Redis answered", err)
	}
}

func TestRedisStoreReportsAnOutageAsUnavailable(t *testing.T) {
	r := harness.StartRedis(t)
	s := domainconfig.NewRedisStore(r.TestClient(t), nodePath(t))
	r.Stop()
	edit := func(d *domainconfig.Document) error { d.AddBlacklist("ebay.com"); return nil }
	for name, call := range map[string]func() error{
		"Get":    func() error { _, err := s.Get(testContext(t)); return err },
		"Update": func() error { return s.Update(testContext(t), edit) },
	} {
		if err := call(); !errors.Is(err, domainconfig.ErrUnavailable) || !errors.Is(err, domainconfig.ErrRead) {
			t.Errorf("%s() with Redis down = %v, want ErrUnavailable and ErrRead", name, err)
		}
	}
	if !s.Connected() {
		t.Error("a Redis store says it is not connected; it should leave that to its calls")
	}
}

// TestZooKeeperStoreWaitsOutAnOutage: a write asked for while ZooKeeper is
// down happens when it is back; one whose ctx ends first fails, saying so.
func TestZooKeeperStoreWaitsOutAnOutage(t *testing.T) {
	z := harness.StartZooKeeper(t)
	path := nodePath(t)
	s := zkStore(t, z.Addr, path)
	z.Stop()

	short, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := s.Update(short, func(d *domainconfig.Document) error { d.AddBlacklist("early.com"); return nil })
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, domainconfig.ErrRead) || !errors.Is(err, domainconfig.ErrUnavailable) {
		t.Errorf("Update() while ZooKeeper is down = %v, want ErrUnavailable, ErrRead and the deadline", err)
	}
	if s.Connected() {
		t.Error("Connected() while ZooKeeper is down")
	}

	done := make(chan error, 1)
	go func() {
		done <- s.Update(testContext(t), func(d *domainconfig.Document) error { d.AddBlacklist("ebay.com"); return nil })
	}()
	if err := z.Restart(); err != nil {
		t.Fatal(err)
	}
	harness.WaitDone(t, "Update() across the outage", 60*time.Second, done)
	if got := zkData(t, harness.ZooKeeperClient(t, z.Addr), path); got != "blacklist:\n- ebay.com\ndomains: {}\n" {
		t.Errorf("stored %q, want only ebay.com blacklisted (the abandoned write must not land)", got)
	}
	if !s.Connected() {
		t.Error("not Connected() after a write went through")
	}
}

// TestOpenZooKeeperNeedsNoZooKeeperYet: the store opens at once with
// ZooKeeper down, says it is not connected, fails calls as unavailable,
// and works once ZooKeeper is up; its connection attempts are logged once
// each, with their error, and back off.
func TestOpenZooKeeperNeedsNoZooKeeperYet(t *testing.T) {
	z := harness.StartZooKeeper(t)
	z.Stop()
	log, out := testLogger(t)
	path := nodePath(t)
	s, err := domainconfig.OpenZooKeeper([]string{z.Addr}, path, log)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Connected() {
		t.Error("Connected() with ZooKeeper down")
	}
	short, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := s.Get(short); !errors.Is(err, domainconfig.ErrUnavailable) {
		t.Errorf("Get() with ZooKeeper down = %v, want ErrUnavailable", err)
	}

	// Over 5 s, attempts after 1, 2 and 4 s of back-off (±20%): at most
	// 4 lines, where a client without back-off writes one a second.
	start := time.Now()
	waitFor(t, "a failed connection attempt to be logged", func() bool { return out.Contains("connection refused") })
	for time.Since(start) < 5*time.Second {
		time.Sleep(100 * time.Millisecond)
	}
	if n := strings.Count(out.String(), "connection refused"); n < 1 || n > 4 {
		t.Errorf("%d connection attempts logged in 5 s, want 1 to 4 (back-off):\n%s", n, out)
	}
	if n := strings.Count(out.String(), "\n"); n != strings.Count(out.String(), "connection refused") {
		t.Errorf("lines other than the failed attempts while ZooKeeper is down:\n%s", out)
	}

	if err := z.Restart(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a session", s.Connected)
	update(t, s, func(d *domainconfig.Document) { d.AddBlacklist("ebay.com") })
	if got := zkData(t, harness.ZooKeeperClient(t, z.Addr), path); got != ebayDocument {
		t.Errorf("stored %q, want %q", got, ebayDocument)
	}
}

func TestClosedZooKeeperStoreFailsAtOnce(t *testing.T) {
	s := zkStore(t, zkServer.Addr, nodePath(t))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.Get(ctx); err == nil || ctx.Err() != nil {
		t.Errorf("Get() on a closed store = %v (ctx %v), want a prompt error", err, ctx.Err())
	}
}

func TestFromSettingsPicksTheStore(t *testing.T) {
	r := harness.StartRedis(t)
	rdb := r.TestClient(t)
	load := loadSettings
	t.Run("ZooKeeper when ZOOKEEPER_HOSTS is set", func(t *testing.T) {
		s := load(t, "ZOOKEEPER_HOSTS="+zkServer.Addr, "ZOOKEEPER_ASSIGN_PATH="+strings.TrimSuffix(nodePath(t), "all"), "ZOOKEEPER_ID=all")
		store, err := domainconfig.FromSettings(s, rdb, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		zs, ok := store.(*domainconfig.ZooKeeperStore)
		if !ok {
			t.Fatalf("FromSettings returned %T, want *ZooKeeperStore", store)
		}
		if err := zs.Update(testContext(t), func(d *domainconfig.Document) error { d.AddBlacklist("ebay.com"); return nil }); err != nil {
			t.Fatal(err)
		}
		if got := zkData(t, harness.ZooKeeperClient(t, zkServer.Addr), zs.Path()); got != "blacklist:\n- ebay.com\ndomains: {}\n" {
			t.Errorf("node holds %q", got)
		}
	})
	t.Run("Redis when ZOOKEEPER_HOSTS is empty", func(t *testing.T) {
		s := load(t, "ZOOKEEPER_HOSTS=")
		store, err := domainconfig.FromSettings(s, rdb, nil)
		if err != nil {
			t.Fatal(err)
		}
		rs, ok := store.(*domainconfig.RedisStore)
		if !ok || rs.Path() != "/scrapy-cluster/crawler/all" {
			t.Fatalf("FromSettings returned %T %+v, want the Redis store of the default path", store, store)
		}
	})
	t.Run("an invalid path is refused", func(t *testing.T) {
		s := load(t, "ZOOKEEPER_HOSTS=", "ZOOKEEPER_ASSIGN_PATH=scrapy-cluster/")
		if _, err := domainconfig.FromSettings(s, rdb, nil); err == nil || !strings.Contains(err.Error(), "ZOOKEEPER_ASSIGN_PATH") {
			t.Errorf("FromSettings with a relative path = %v, want an error naming the setting", err)
		}
	})
	t.Run("an unreachable ZooKeeper is opened at once", func(t *testing.T) {
		port := harness.Port(t)
		s := load(t, fmt.Sprintf("ZOOKEEPER_HOSTS=127.0.0.1:%d", port))
		store, err := domainconfig.FromSettings(s, rdb, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		if store.Connected() {
			t.Error("Connected() without a ZooKeeper")
		}
	})
}

func TestDescribeSaysWhereTheDocumentIs(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		want string
	}{
		{"ZooKeeper by default", nil, "ZooKeeper localhost:2181 node /scrapy-cluster/crawler/all"},
		{"several ZooKeeper servers", []string{"ZOOKEEPER_HOSTS=zk1:2181, zk2:2181", "ZOOKEEPER_ID=test"},
			"ZooKeeper zk1:2181,zk2:2181 node /scrapy-cluster/crawler/test"},
		{"Redis without ZooKeeper", []string{"ZOOKEEPER_HOSTS="}, "Redis key domainconfig:/scrapy-cluster/crawler/all"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := domainconfig.Describe(loadSettings(t, tt.env...))
			if err != nil || got != tt.want {
				t.Errorf("Describe() = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	if _, err := domainconfig.Describe(loadSettings(t, "ZOOKEEPER_ASSIGN_PATH=relative/")); err == nil {
		t.Error("Describe accepted a relative path")
	}
}
