package domainconfig_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/domainconfig"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// watch runs WatchRedis until the test ends and returns its recorder.
func watch(t *testing.T, rdb *redis.Client, path string, opts ...domainconfig.WatchOption) *recorder {
	t.Helper()
	r := &recorder{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- domainconfig.WatchRedis(ctx, rdb, path, r.record, opts...) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("WatchRedis returned %v after ctx ended, want nil", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("WatchRedis did not return after ctx ended")
		}
	})
	return r
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

func TestWatchRedisDeliversTheDocumentAtStartAndEachChange(t *testing.T) {
	r := harness.StartRedis(t)
	path := nodePath(t)
	s := domainconfig.NewRedisStore(r.TestClient(t), path)
	update(t, s, func(d *domainconfig.Document) { d.AddBlacklist("ebay.com") })

	// A long resync: only announcements can deliver the changes in time.
	rec := watch(t, r.TestClient(t), path, domainconfig.WithResync(time.Hour))
	waitFor(t, "the document at start", rec.last(ebayDocument))

	update(t, s, func(d *domainconfig.Document) { d.UpdateDomain("dmoz.org", 60, 60, 0.9) })
	waitFor(t, "the domain-update", rec.last(specDocument))
	update(t, s, func(d *domainconfig.Document) { d.UpdateDomain("dmoz.org", 60, 60, 0.9) }) // no change
	update(t, s, func(d *domainconfig.Document) { d.RemoveBlacklist("ebay.com"); d.RemoveDomain("dmoz.org") })
	waitFor(t, "the removals", rec.last(emptyDocument))

	if got, want := rec.snapshot(), []string{ebayDocument, specDocument, emptyDocument}; !slices.Equal(got, want) {
		t.Errorf("delivered %q, want %q", got, want)
	}
}

func TestWatchRedisDeliversTheEmptyDocumentWhenThereIsNone(t *testing.T) {
	r := harness.StartRedis(t)
	rec := watch(t, r.TestClient(t), nodePath(t))
	waitFor(t, "the empty document", rec.last(emptyDocument))
}

func TestWatchRedisCatchesUpOnAMissedAnnouncement(t *testing.T) {
	r := harness.StartRedis(t)
	path := nodePath(t)
	rec := watch(t, r.TestClient(t), path, domainconfig.WithResync(50*time.Millisecond))
	waitFor(t, "the empty document", rec.last(emptyDocument))
	// Written without an announcement, as a lost message would leave it.
	if err := r.TestClient(t).Set(context.Background(), rediskeys.DomainConfigKey(path), ebayDocument, 0).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the unannounced change", rec.last(ebayDocument))
}

func TestWatchRedisReadsAgainAfterReconnecting(t *testing.T) {
	r := harness.StartRedis(t, harness.RedisOptions{AppendOnly: true})
	path := nodePath(t)
	admin := r.TestClient(t)
	rec := watch(t, r.TestClient(t), path, domainconfig.WithResync(time.Hour))
	waitFor(t, "the empty document", rec.last(emptyDocument))

	// Unannounced, so only the read after the reconnection can deliver it.
	if err := admin.Set(context.Background(), rediskeys.DomainConfigKey(path), ebayDocument, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin.ClientKillByFilter(context.Background(), "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the change after the subscription came back", rec.last(ebayDocument))

	// The same after Redis itself restarts.
	if err := admin.Set(context.Background(), rediskeys.DomainConfigKey(path), specDocument, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := r.Restart(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the change after Redis restarted", rec.last(specDocument))
}

func TestWatchRedisKeepsTheLastGoodDocumentOverAMalformedOne(t *testing.T) {
	r := harness.StartRedis(t)
	path := nodePath(t)
	rdb := r.TestClient(t)
	log, out := testLogger(t)
	s := domainconfig.NewRedisStore(rdb, path)
	update(t, s, func(d *domainconfig.Document) { d.AddBlacklist("ebay.com") })
	rec := watch(t, r.TestClient(t), path, domainconfig.WithLogger(log), domainconfig.WithResync(time.Hour))
	waitFor(t, "the document at start", rec.last(ebayDocument))

	ctx := context.Background()
	announce := func(data string) {
		t.Helper()
		if err := rdb.Set(ctx, rediskeys.DomainConfigKey(path), data, 0).Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.Publish(ctx, rediskeys.DomainConfigChannel(path), data).Err(); err != nil {
			t.Fatal(err)
		}
	}
	announce("blacklist: ebay.com\n")
	waitFor(t, "the malformed document to be logged", func() bool {
		return out.Contains("Malformed domain configuration in Redis") && out.Contains("not a list")
	})
	// The same document in another layout is no change.
	announce("# reformatted\nblacklist: [ebay.com]\n")
	announce("blacklist: [ebay.com, amazon.com]\n")
	want := "blacklist:\n- ebay.com\n- amazon.com\ndomains: {}\n"
	waitFor(t, "the next good document", rec.last(want))
	if got := rec.snapshot(); !slices.Equal(got, []string{ebayDocument, want}) {
		t.Errorf("delivered %q, want only the good, different documents", got)
	}
}

func TestWatchRedisRefusesAnInvalidPath(t *testing.T) {
	r := harness.StartRedis(t)
	err := domainconfig.WatchRedis(context.Background(), r.TestClient(t), "relative/path", func(domainconfig.Document) {
		t.Error("onChange called for an invalid path")
	})
	if err == nil {
		t.Error("WatchRedis accepted a relative path")
	}
}
