package scheduler_test

import (
	"context"
	"maps"
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/scheduler"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// seedCounted queues a seed as the Kafka Monitor does, counted in its ledger.
func seedCounted(t *testing.T, rdb *redis.Client, url, crawlid string, priority int) {
	t.Helper()
	r, member := testRequest(t, url, crawlid, priority)
	ctx := context.Background()
	if err := ledger.LoadScripts(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	pipe := rdb.TxPipeline()
	ledger.QueueSeed(ctx, pipe, "link:"+domainOf(url)+":queue", r.Score(), string(member),
		ledger.Crawl{SpiderID: "link", AppID: "testapp", CrawlID: crawlid}, time.Now(), time.Hour)
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	rdb.Publish(ctx, "link:queue-announce", "link:"+domainOf(url)+":queue")
}

func readLedger(t *testing.T, rdb *redis.Client, crawlid string) *ledger.Progress {
	t.Helper()
	p, err := ledger.Read(context.Background(), rdb, ledger.Crawl{SpiderID: "link", AppID: "testapp", CrawlID: crawlid})
	if err != nil || p[0] == nil {
		t.Fatalf("read ledger of %s: %v, %v", crawlid, p, err)
	}
	return p[0]
}

// leaseTwo queues first and second as seeds of crawl crawlid, counted in
// its ledger (priorities 5 and 4), and leases both: a is first's item.
func leaseTwo(t *testing.T, f *fixture, crawlid, first, second string) (a, b *scheduler.Item) {
	t.Helper()
	seedCounted(t, f.rdb, first, crawlid, 5)
	seedCounted(t, f.rdb, second, crawlid, 4)
	a, b = next(t, f.sched, 5*time.Second), next(t, f.sched, 5*time.Second)
	if a.Request.URL != first {
		a, b = b, a
	}
	return a, b
}

func TestTheLedgerCountsFollowUpsRefusalsAndFatesWithTheirQueueAndLeaseChanges(t *testing.T) {
	f := start(t, config())
	ctx := context.Background()
	a, b := leaseTwo(t, f, "c1", "http://a.com/1", "http://a.com/2")
	crawl := a.Crawl()
	if crawl != (ledger.Crawl{SpiderID: "link", AppID: "testapp", CrawlID: "c1"}) {
		t.Fatalf("item's crawl %+v", crawl)
	}
	kids := []*crawlrequest.Request{
		a.Request.Follow("http://a.com/x"), a.Request.Follow("http://a.com/x#frag"), a.Request.Follow("http://a.com/1"),
		a.Request.Follow("http://b.com/y"), a.Request.Follow("not a url"),
	}
	got, err := f.sched.Enqueue(ctx, a.Request, kids, map[ledger.Reason]int{ledger.RefusedOffDomain: 2, ledger.RefusedRegex: 1})
	if err != nil {
		t.Fatal(err)
	}
	wantRefused := map[ledger.Reason]int{ledger.RefusedDuplicate: 2, ledger.RefusedInvalidURL: 1, ledger.RefusedOffDomain: 2, ledger.RefusedRegex: 1}
	if got.Queued != 2 || !maps.Equal(got.Refused, wantRefused) {
		t.Fatalf("enqueued %+v, want 2 queued and refused %v", got, wantRefused)
	}
	var pub ledger.Tally
	pub.Fetched(crawl, 200)
	pub.Published(crawl, true)
	if err := f.sched.Done(ctx, a, &pub); err != nil {
		t.Fatal(err)
	}
	var retry ledger.Tally
	retry.Fetched(crawl, 504)
	retry.Retried(crawl)
	if err := f.sched.Retry(ctx, b, b.Request.Retry(), &retry); err != nil {
		t.Fatal(err)
	}
	p := readLedger(t, f.rdb, "c1")
	want := map[string]int64{
		"seeds": 2, "enqueued": 2, "done": 1, "published": 1, "published_truncated": 1, "retried": 1, "fetched": 2,
		"queued": 3, "in_flight": 0,
	}
	gotFields := map[string]int64{
		"seeds": p.Seeds, "enqueued": p.Enqueued, "done": p.Done, "published": p.Published, "published_truncated": p.PublishedTruncated,
		"retried": p.Retried, "fetched": p.Fetched, "queued": p.Queued, "in_flight": p.InFlight,
	}
	if !maps.Equal(gotFields, want) {
		t.Fatalf("ledger %v\nwant %v", gotFields, want)
	}
	if !maps.Equal(p.Refused, map[string]int64{"duplicate": 2, "invalid_url": 1, "off_domain": 2, "regex": 1}) ||
		!maps.Equal(p.StatusCodes, map[string]int64{"200": 1, "504": 1}) {
		t.Fatalf("refused %v, status codes %v", p.Refused, p.StatusCodes)
	}
	var queued int64
	for _, key := range []string{"link:a.com:queue", "link:b.com:queue"} {
		queued += f.rdb.ZCard(ctx, key).Val()
	}
	if queued != p.Queued {
		t.Fatalf("%d queued, the ledger says %d", queued, p.Queued)
	}
	// A crawl that is stopped counts what it refused, in the same script.
	f.rdb.SAdd(ctx, rediskeys.BlacklistKey("link"), "testapp||c1")
	got, err = f.sched.Enqueue(ctx, a.Request, kids[:2], map[ledger.Reason]int{ledger.RefusedExtension: 1})
	if err != nil || got.Queued != 0 || got.Refused[ledger.RefusedCrawlBlacklisted] != 2 || got.Refused[ledger.RefusedExtension] != 1 {
		t.Fatalf("enqueued in a stopped crawl: %+v, %v", got, err)
	}
	if p := readLedger(t, f.rdb, "c1"); p.Refused["crawl_blacklisted"] != 2 || p.Refused["extension"] != 1 || p.Enqueued != 2 {
		t.Fatalf("after the stop: refused %v, enqueued %d", p.Refused, p.Enqueued)
	}
}

func TestAFateAcknowledgedAfterItsLeaseWasReapedIsNotCounted(t *testing.T) {
	f := start(t, config())
	ctx := context.Background()
	seedCounted(t, f.rdb, "http://a.com/1", "c2", 5)
	it := next(t, f.sched, 5*time.Second)
	// The crawler's lease owner misses its deadline and a reaper puts the
	// request back in its queue.
	owners, _ := f.sched.Leases().Keys()
	f.rdb.ZAdd(ctx, owners, redis.Z{Score: 1, Member: f.sched.Leases().Owner()})
	if n, err := f.sched.Leases().Reap(ctx, 10); err != nil || n != 1 {
		t.Fatalf("returned %d, %v", n, err)
	}
	var pub ledger.Tally
	pub.Fetched(it.Crawl(), 200)
	pub.Published(it.Crawl(), false)
	if err := f.sched.Done(ctx, it, &pub); err != nil {
		t.Fatal(err)
	}
	p := readLedger(t, f.rdb, "c2")
	if p.Done != 0 || p.Published != 0 || p.Fetched != 0 || p.Queued != 1 || p.Seeds != 1 {
		t.Fatalf("ledger after a lost lease's ack: %+v; want its counts taken back, 1 queued", p)
	}
	if f.sched.Stats().Lost != 1 {
		t.Fatalf("lost %d, want 1", f.sched.Stats().Lost)
	}
	// Done once more, from the queue: counted once.
	again := next(t, f.sched, 5*time.Second)
	if err := f.sched.Done(ctx, again, &pub); err != nil {
		t.Fatal(err)
	}
	if p := readLedger(t, f.rdb, "c2"); p.Done != 1 || p.Published != 1 || p.Outstanding() != 0 {
		t.Fatalf("ledger after the second crawl: %+v", p)
	}
}

// Finish queues a page's follow-ups in the step that ends its lease: the
// ledger counts them and the page's fate together, once, even when the
// acknowledgement is sent again; a page whose lease was reaped queues
// nothing and counts nothing (the crawl of its request again will).
func TestFinishQueuesFollowUpsWithTheAcknowledgementOnce(t *testing.T) {
	f := start(t, config())
	ctx := context.Background()
	a, b := leaseTwo(t, f, "c3", "http://a.com/1", "http://b.com/1")
	fate := func(it *scheduler.Item) *ledger.Tally {
		var tl ledger.Tally
		tl.Fetched(it.Crawl(), 200)
		tl.Published(it.Crawl(), false)
		return &tl
	}
	kids := []*crawlrequest.Request{a.Request.Follow("http://a.com/2"), a.Request.Follow("http://a.com/3"), a.Request.Follow("http://a.com/1")}
	got, err := f.sched.Finish(ctx, a, fate(a), kids, map[ledger.Reason]int{ledger.RefusedRegex: 1})
	if err != nil || got.Queued != 2 || got.Refused[ledger.RefusedDuplicate] != 1 || got.Refused[ledger.RefusedRegex] != 1 {
		t.Fatalf("finish: %+v, %v; want 2 queued, the page itself a duplicate, 1 refused by regex", got, err)
	}
	if held, _ := f.rdb.HExists(ctx, "leases:link:items", a.LeaseID()).Result(); held {
		t.Fatal("the page's lease is held after Finish")
	}
	p := readLedger(t, f.rdb, "c3")
	if p.Seeds != 2 || p.Enqueued != 2 || p.Done != 1 || p.Published != 1 || p.Queued != 2 || p.InFlight != 1 ||
		p.Refused["duplicate"] != 1 || p.Refused["regex"] != 1 {
		t.Fatalf("ledger after Finish %+v", p)
	}
	// The same acknowledgement again (its first answer lost): nothing
	// happens twice.
	if _, err := f.sched.Finish(ctx, a, fate(a), kids, map[ledger.Reason]int{ledger.RefusedRegex: 1}); err != nil {
		t.Fatal(err)
	}
	if again := readLedger(t, f.rdb, "c3"); !reflect.DeepEqual(again, p) {
		t.Fatalf("ledger after the same Finish again %+v\nwant %+v", again, p)
	}
	// b's lease is reaped (its crawler missed its deadline): its Finish
	// queues nothing and counts nothing; b is back in its queue.
	owners, _ := f.sched.Leases().Keys()
	f.rdb.ZAdd(ctx, owners, redis.Z{Score: 1, Member: f.sched.Leases().Owner()})
	if n, err := f.sched.Leases().Reap(ctx, 10); err != nil || n != 1 {
		t.Fatalf("reaped %d, %v", n, err)
	}
	if _, err := f.sched.Finish(ctx, b, fate(b), []*crawlrequest.Request{b.Request.Follow("http://b.com/2")}, nil); err != nil {
		t.Fatal(err)
	}
	if f.sched.Stats().Lost != 1 || f.rdb.Exists(ctx, "link:b.com:queue").Val() != 1 || f.rdb.ZScore(ctx, "link:b.com:queue", string(mustEncode(t, b.Request))).Err() != nil {
		t.Fatalf("lost %d; want b lost and back in its queue, alone", f.sched.Stats().Lost)
	}
	if n := f.rdb.ZCard(ctx, "link:b.com:queue").Val(); n != 1 {
		t.Fatalf("link:b.com:queue holds %d, want b alone: the follow-up of a reaped lease was queued", n)
	}
	if after := readLedger(t, f.rdb, "c3"); after.Done != 1 || after.Enqueued != 2 || after.Queued != 3 {
		t.Fatalf("ledger after the reaped lease's Finish %+v", after)
	}
}

func mustEncode(t *testing.T, r *crawlrequest.Request) []byte {
	t.Helper()
	b, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}
