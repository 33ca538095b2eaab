package domainconfig_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/domainconfig"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// watchWith runs a watch function until the test ends and returns its
// recorder.
func watchWith(t *testing.T, run func(ctx context.Context, onChange func(domainconfig.Document)) error) *recorder {
	t.Helper()
	r := &recorder{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, r.record) }()
	t.Cleanup(func() {
		cancel()
		harness.WaitDone(t, "the watch after ctx ended", 30*time.Second, done)
	})
	return r
}

// watch runs Watch on b's settings until the test ends.
func watch(t *testing.T, b backend, opts ...domainconfig.WatchOption) *recorder {
	t.Helper()
	s := b.settings(t)
	return watchWith(t, func(ctx context.Context, onChange func(domainconfig.Document)) error {
		return domainconfig.Watch(ctx, s, b.rdb, onChange, opts...)
	})
}

func update(t *testing.T, s domainconfig.Store, edit func(d *domainconfig.Document)) {
	t.Helper()
	if err := s.Update(testContext(t), func(d *domainconfig.Document) error { edit(d); return nil }); err != nil {
		t.Fatal(err)
	}
}

const (
	emptyDocument = "blacklist: []\ndomains: {}\n"
	ebayDocument  = "blacklist:\n- ebay.com\ndomains: {}\n"
)

func TestWatchDeliversTheDocumentAtStartAndEachChangeOnce(t *testing.T) {
	forEachStore(t, func(t *testing.T, b backend) {
		s := b.open(t)
		update(t, s, func(d *domainconfig.Document) { d.AddBlacklist("ebay.com") })

		// A long resync: only announcements and watches can deliver the
		// changes in time.
		rec := watch(t, b, domainconfig.WithResync(time.Hour))
		waitFor(t, "the document at start", rec.last(ebayDocument))

		update(t, s, func(d *domainconfig.Document) { d.UpdateDomain("dmoz.org", 60, 60, 0.9) })
		waitFor(t, "the domain-update", rec.last(specDocument))
		update(t, s, func(d *domainconfig.Document) { d.UpdateDomain("dmoz.org", 60, 60, 0.9) }) // no change
		update(t, s, func(d *domainconfig.Document) { d.RemoveBlacklist("ebay.com"); d.RemoveDomain("dmoz.org") })
		waitFor(t, "the removals", rec.last(emptyDocument))

		if got, want := rec.snapshot(), []string{ebayDocument, specDocument, emptyDocument}; !slices.Equal(got, want) {
			t.Errorf("delivered %q, want %q", got, want)
		}
	})
}

func TestWatchDeliversTheEmptyDocumentWhenThereIsNone(t *testing.T) {
	forEachStore(t, func(t *testing.T, b backend) {
		rec := watch(t, b)
		waitFor(t, "the empty document", rec.last(emptyDocument))
	})
}

func TestWatchDeliversAnEmptyNodeOrKeyAsTheEmptyDocument(t *testing.T) {
	forEachStore(t, func(t *testing.T, b backend) {
		b.put(t, "")
		rec := watch(t, b)
		waitFor(t, "the empty document", rec.last(emptyDocument))
	})
}

func TestWatchCreatesTheMissingZooKeeperNodeEmpty(t *testing.T) {
	b := zooKeeperBackend(t)
	rec := watch(t, b)
	waitFor(t, "the empty document", rec.last(emptyDocument))
	if data, ok := b.raw(t); !ok || data != "" {
		t.Errorf("node = %q (exists %v), want it created empty as kazoo's ensure_path does", data, ok)
	}
}

func TestWatchKeepsTheLastGoodDocumentOverAMalformedOne(t *testing.T) {
	forEachStore(t, func(t *testing.T, b backend) {
		log, out := testLogger(t)
		update(t, b.open(t), func(d *domainconfig.Document) { d.AddBlacklist("ebay.com") })
		// A short resync, for the Redis writes made without an announcement.
		rec := watch(t, b, domainconfig.WithLogger(log), domainconfig.WithResync(50*time.Millisecond))
		waitFor(t, "the document at start", rec.last(ebayDocument))

		b.put(t, "blacklist: ebay.com\n")
		waitFor(t, "the malformed document to be logged", func() bool {
			return out.Contains("Malformed domain configuration in") && out.Contains("not a list")
		})
		// The same document in another layout is no change.
		b.put(t, "# reformatted\nblacklist: [ebay.com]\n")
		b.put(t, "blacklist: [ebay.com, amazon.com]\n")
		want := "blacklist:\n- ebay.com\n- amazon.com\ndomains: {}\n"
		waitFor(t, "the next good document", rec.last(want))
		if got := rec.snapshot(); !slices.Equal(got, []string{ebayDocument, want}) {
			t.Errorf("delivered %q, want only the good, different documents", got)
		}
		if n := strings.Count(out.String(), "Malformed domain configuration"); n != 1 {
			t.Errorf("the malformed document was logged %d times, want once", n)
		}
	})
}

func TestWatchZooKeeperKeepsTheDocumentThroughAnOutageAndCatchesUp(t *testing.T) {
	z := harness.StartZooKeeper(t) // its own server: this test stops it
	path := nodePath(t)
	log, out := testLogger(t)
	rec := watchWith(t, func(ctx context.Context, onChange func(domainconfig.Document)) error {
		return domainconfig.WatchZooKeeper(ctx, []string{z.Addr}, path, onChange, domainconfig.WithLogger(log))
	})
	s := zkStore(t, z.Addr, path)
	update(t, s, func(d *domainconfig.Document) { d.AddBlacklist("ebay.com") })
	waitFor(t, "the document", rec.last(ebayDocument))

	z.Stop()
	waitFor(t, "the outage to be logged", func() bool { return out.Contains("Domain config source in trouble") })
	if err := z.Restart(); err != nil {
		t.Fatal(err)
	}
	update(t, s, func(d *domainconfig.Document) { d.UpdateDomain("dmoz.org", 60, 60, 0.9) })
	waitFor(t, "the change after the restart", rec.last(specDocument))
	if got, want := rec.snapshot(), []string{emptyDocument, ebayDocument, specDocument}; !slices.Equal(got, want) &&
		!slices.Equal(got, want[1:]) {
		t.Errorf("delivered %q, want %q: nothing while ZooKeeper was away", got, want)
	}
}

func TestWatchRedisCatchesUpOnAMissedAnnouncement(t *testing.T) {
	b := redisBackend(t, harness.StartRedis(t))
	rec := watch(t, b, domainconfig.WithResync(50*time.Millisecond))
	waitFor(t, "the empty document", rec.last(emptyDocument))
	b.put(t, ebayDocument) // without an announcement, as a lost message would leave it
	waitFor(t, "the unannounced change", rec.last(ebayDocument))
}

func TestWatchRedisReadsAgainAfterReconnecting(t *testing.T) {
	r := harness.StartRedis(t, harness.RedisOptions{AppendOnly: true})
	b := redisBackend(t, r)
	admin := r.TestClient(t)
	rec := watch(t, b, domainconfig.WithResync(time.Hour))
	waitFor(t, "the empty document", rec.last(emptyDocument))

	// Unannounced, so only the read after the reconnection can deliver it.
	b.put(t, ebayDocument)
	if err := admin.ClientKillByFilter(context.Background(), "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the change after the subscription came back", rec.last(ebayDocument))

	// The same after Redis itself restarts.
	b.put(t, specDocument)
	if err := r.Restart(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the change after Redis restarted", rec.last(specDocument))
}

func TestWatchRedisFollowsTheAnnouncements(t *testing.T) {
	r := harness.StartRedis(t)
	b := redisBackend(t, r)
	rdb := r.TestClient(t)
	rec := watch(t, b, domainconfig.WithResync(time.Hour))
	waitFor(t, "the empty document", rec.last(emptyDocument))
	// Written and announced by hand, as a Python component or an operator
	// with redis-cli would.
	b.put(t, ebayDocument)
	if err := rdb.Publish(context.Background(), rediskeys.DomainConfigChannel(b.path), ebayDocument).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the announced change", rec.last(ebayDocument))
}

func TestWatchRefusesInvalidSettings(t *testing.T) {
	rdb := harness.StartRedis(t).TestClient(t)
	tests := []struct {
		name string
		env  []string
		rdb  bool
	}{
		{"a relative path in Redis", []string{"ZOOKEEPER_HOSTS=", "ZOOKEEPER_ASSIGN_PATH=relative/"}, true},
		{"a relative path in ZooKeeper", []string{"ZOOKEEPER_HOSTS=127.0.0.1:1", "ZOOKEEPER_ASSIGN_PATH=relative/"}, true},
		{"Redis without a client", []string{"ZOOKEEPER_HOSTS="}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var client redis.UniversalClient = rdb
			if !tt.rdb {
				client = nil
			}
			err := domainconfig.Watch(testContext(t), loadSettings(t, tt.env...), client, func(domainconfig.Document) {
				t.Error("onChange called for invalid settings")
			})
			if err == nil {
				t.Error("Watch accepted them")
			}
		})
	}
}
