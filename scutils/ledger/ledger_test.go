package ledger_test

import (
	"context"
	"fmt"
	"maps"
	"path"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/throttle"
)

var redisServer harness.SharedRedis

func TestMain(m *testing.M) { redisServer.Main(m) }

var (
	ctx   = context.Background()
	crawl = ledger.Crawl{SpiderID: "link", AppID: "app", CrawlID: "c1"}
	t0    = time.Unix(1700000000, 0)
)

// client is a client of the shared server, emptied for this test.
func client(t *testing.T) *redis.Client {
	t.Helper()
	if err := redisServer.FlushAll(ctx); err != nil {
		t.Fatal(err)
	}
	return redisServer.TestClient(t)
}

func mustRead(t *testing.T, rdb redis.Cmdable, c ledger.Crawl) *ledger.Progress {
	t.Helper()
	ps, err := ledger.Read(ctx, rdb, c)
	if err != nil {
		t.Fatal(err)
	}
	if ps[0] == nil {
		t.Fatalf("no ledger for %v", c)
	}
	return ps[0]
}

// mustExec runs pipe and fails the test on an error.
func mustExec(t *testing.T, pipe redis.Pipeliner) {
	t.Helper()
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
}

// write writes the counts f tallies in one transaction at now.
func write(t *testing.T, rdb *redis.Client, now time.Time, f func(*ledger.Tally)) {
	t.Helper()
	var tl ledger.Tally
	f(&tl)
	pipe := rdb.TxPipeline()
	tl.Write(ctx, pipe, now, time.Hour)
	mustExec(t, pipe)
}

// writeDone writes crawl with its one request enqueued and published:
// nothing is left of it.
func writeDone(t *testing.T, rdb *redis.Client) {
	t.Helper()
	write(t, rdb, time.Now(), func(tl *ledger.Tally) {
		tl.Enqueued(crawl, 1)
		tl.Published(crawl, false)
	})
}

// claimDone writes crawl done (writeDone) and has c claim it.
func claimDone(t *testing.T, rdb *redis.Client, c *ledger.Completer) ledger.Finished {
	t.Helper()
	writeDone(t, rdb)
	fs, err := c.Claim(ctx)
	if err != nil || len(fs) != 1 {
		t.Fatalf("claim: %v %v", fs, err)
	}
	return fs[0]
}

// seed queues one seed for c the way the Kafka Monitor does.
func seed(t *testing.T, rdb *redis.Client, c ledger.Crawl, member string) int64 {
	t.Helper()
	pipe := rdb.Pipeline()
	cmd := ledger.QueueSeed(ctx, pipe, rediskeys.QueueKey(c.SpiderID, "example.com"), -50, member, c, t0, time.Hour)
	mustExec(t, pipe)
	return cmd.Val().(int64)
}

func TestASeedFedTwiceIsQueuedAndCountedOnce(t *testing.T) {
	rdb := client(t)
	if err := ledger.LoadScripts(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	member := `{"url":"http://example.com/","appid":"app","crawlid":"c1"}`
	if got := seed(t, rdb, crawl, member); got != 1 {
		t.Fatalf("first seed: %d, want 1", got)
	}
	if got := seed(t, rdb, crawl, member); got != 0 {
		t.Fatalf("same seed again: %d, want 0", got)
	}
	p := mustRead(t, rdb, crawl)
	if p.Seeds != 1 || p.Queued != 1 || p.State != ledger.StateRunning || p.Started != 1700000000 {
		t.Fatalf("progress %+v, want 1 seed queued, running, started at t0", p)
	}
	if n := rdb.ZCard(ctx, "link:example.com:queue").Val(); n != 1 {
		t.Fatalf("queue holds %d, want 1", n)
	}
	for _, key := range []string{rediskeys.LedgerActiveKey, rediskeys.LedgerCrawlsKey, rediskeys.LedgerAppCrawlsKey("app")} {
		if m := rdb.ZRange(ctx, key, 0, -1).Val(); len(m) != 1 || m[0] != crawl.Member() {
			t.Errorf("%s = %v, want [%s]", key, m, crawl.Member())
		}
	}
	if ttl := rdb.TTL(ctx, crawl.Key()).Val(); ttl <= 0 || ttl > time.Hour {
		t.Errorf("ledger ttl %v, want within an hour", ttl)
	}
}

// A seed queued after the crawl completed makes it run again, started as
// before, and it completes again once done; seeds of a running crawl leave
// its start and its index as they are.
func TestASeedAfterTheCrawlCompletedRunsItAgain(t *testing.T) {
	rdb := client(t)
	if err := ledger.LoadScripts(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	seed(t, rdb, crawl, `{"n":1}`)
	seed(t, rdb, crawl, `{"n":2}`)
	write(t, rdb, time.Now(), func(tl *ledger.Tally) { tl.Published(crawl, false); tl.Published(crawl, false) })
	c := ledger.NewCompleter(rdb, "a", time.Hour)
	if fs := finishAll(t, c); len(fs) != 1 {
		t.Fatalf("completions %+v, want 1", fs)
	}
	started := rdb.HGet(ctx, crawl.Key(), ledger.FieldStarted).Val()
	seed(t, rdb, crawl, `{"n":3}`)
	p := mustRead(t, rdb, crawl)
	if p.State != ledger.StateRunning || p.Seeds != 3 || p.Queued != 1 || rdb.HExists(ctx, crawl.Key(), ledger.FieldCompleted).Val() {
		t.Fatalf("progress after a new seed %+v, want running with 1 queued", p)
	}
	if got := rdb.HGet(ctx, crawl.Key(), ledger.FieldStarted).Val(); got != started {
		t.Fatalf("started %s, want %s as before", got, started)
	}
	if m := rdb.ZRange(ctx, rediskeys.LedgerActiveKey, 0, -1).Val(); len(m) != 1 || m[0] != crawl.Member() {
		t.Fatalf("active %v", m)
	}
	write(t, rdb, time.Now(), func(tl *ledger.Tally) { tl.Published(crawl, false) })
	if fs := finishAll(t, c); len(fs) != 1 {
		t.Fatalf("second completions %+v, want 1", fs)
	}
}

// everything is every key in Redis with its content (harness.RedisContents)
// and whether each key expires within the hour.
func everything(t *testing.T, rdb *redis.Client) map[string]any {
	t.Helper()
	out := harness.RedisContents(t, rdb)
	for k := range maps.Clone(out) {
		ttl := rdb.TTL(ctx, k).Val()
		out["expiry of "+k] = ttl > 0 && ttl <= time.Hour
	}
	return out
}

// seedsOfTwoCrawls are seeds of two crawls in three queues, with a member
// given twice.
func seedsOfTwoCrawls() []ledger.Seed {
	other := ledger.Crawl{SpiderID: "link", AppID: "app2", CrawlID: "c2"}
	return []ledger.Seed{
		{Queue: "link:example.com:queue", Score: -50, Member: `{"n":1}`, Crawl: crawl},
		{Queue: "link:example.org:queue", Score: -1, Member: `{"n":2}`, Crawl: crawl},
		{Queue: "link:example.com:queue", Score: -7, Member: `{"n":3}`, Crawl: other},
		{Queue: "link:example.com:queue", Score: -50, Member: `{"n":1}`, Crawl: crawl},
		{Queue: "link:example.net:queue", Score: -100, Member: `{"n":4}`, Crawl: other},
		{Queue: "link:example.com:queue", Score: -2, Member: `{"n":5}`, Crawl: crawl},
	}
}

func TestQueueSeedsLeavesWhatQueueSeedLeavesForEachSeed(t *testing.T) {
	rdb := client(t)
	if err := ledger.LoadScripts(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	seeds := seedsOfTwoCrawls()
	pipe := rdb.Pipeline()
	for _, s := range seeds {
		ledger.QueueSeed(ctx, pipe, s.Queue, s.Score, s.Member, s.Crawl, t0, time.Hour)
	}
	mustExec(t, pipe)
	oneByOne := everything(t, rdb)

	rdb = client(t)
	pipe = rdb.Pipeline()
	cmds := ledger.QueueSeeds(ctx, pipe, seeds, t0, time.Hour)
	mustExec(t, pipe)
	if len(cmds) != 1 || cmds[0].Val() != int64(5) {
		t.Fatalf("QueueSeeds ran %d scripts, the first queueing %v; want 1 queueing 5 (one member given twice)", len(cmds), cmds[0].Val())
	}
	if batched := everything(t, rdb); !reflect.DeepEqual(batched, oneByOne) {
		t.Fatalf("QueueSeeds left\n%v\nQueueSeed for each seed left\n%v", batched, oneByOne)
	}
	if p := mustRead(t, rdb, crawl); p.Seeds != 3 || p.Queued != 3 {
		t.Errorf("progress %+v, want 3 seeds, 3 queued", p)
	}
}

// A batch stored again (its pipeline's reply was lost) queues and counts
// nothing more, and a crawl with no new seed is left as it was.
func TestQueueSeedsAgainCountsNothingTwice(t *testing.T) {
	rdb := client(t)
	seeds := seedsOfTwoCrawls()
	for _, at := range []time.Time{t0, t0.Add(time.Minute)} {
		pipe := rdb.Pipeline()
		ledger.QueueSeeds(ctx, pipe, seeds, at, time.Hour)
		mustExec(t, pipe)
	}
	first := everything(t, rdb)
	pipe := rdb.Pipeline()
	more := append(seeds[:1:1], ledger.Seed{Queue: "link:example.com:queue", Score: -1, Member: `{"n":6}`, Crawl: crawl})
	cmds := ledger.QueueSeeds(ctx, pipe, more, t0.Add(time.Hour), time.Hour)
	mustExec(t, pipe)
	if cmds[0].Val() != int64(1) {
		t.Fatalf("queued %v, want only the new seed", cmds[0].Val())
	}
	p := mustRead(t, rdb, crawl)
	if p.Seeds != 4 || p.Queued != 4 || p.LastActivity != float64(t0.Add(time.Hour).Unix()) || p.Started != float64(t0.Unix()) {
		t.Errorf("progress %+v, want 4 seeds, all queued, started at t0 and active an hour later", p)
	}
	other := ledger.Crawl{SpiderID: "link", AppID: "app2", CrawlID: "c2"}
	if h := rdb.HGetAll(ctx, other.Key()).Val(); !reflect.DeepEqual(h, first[other.Key()]) {
		t.Errorf("the other crawl's ledger became %v without a new seed, want %v", h, first[other.Key()])
	}
}

func TestQueueSeedsSplitsLongBatchesAndNeedsNoLoadedScript(t *testing.T) {
	rdb := client(t)
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // the shared server's later tests rely on them
		if err := ledger.LoadScripts(ctx, rdb); err != nil {
			t.Error(err)
		}
	})
	seeds := make([]ledger.Seed, 2500)
	for i := range seeds {
		seeds[i] = ledger.Seed{Queue: fmt.Sprintf("link:d%d.com:queue", i%7), Score: -1, Member: fmt.Sprintf(`{"n":%d}`, i), Crawl: crawl}
	}
	pipe := rdb.Pipeline()
	cmds := ledger.QueueSeeds(ctx, pipe, seeds, t0, time.Hour)
	mustExec(t, pipe)
	var queued int64
	for _, c := range cmds {
		queued += c.Val().(int64)
	}
	if len(cmds) != 3 || queued != 2500 {
		t.Fatalf("%d scripts queued %d, want 3 scripts (at most 1000 seeds each) queueing 2500", len(cmds), queued)
	}
	if p := mustRead(t, rdb, crawl); p.Seeds != 2500 || p.Queued != 2500 {
		t.Errorf("progress %+v, want 2500 seeds queued", p)
	}
}

// A script is not undone when it fails half-way: a key of the wrong type
// must fail it before its first write, or seeds queued before the failure
// would never be counted (a retry finds them queued).
func TestQueueSeedsWritesNothingWhenAKeyHasTheWrongType(t *testing.T) {
	for _, bad := range []string{"link:example.net:queue", crawl.Key(), rediskeys.LedgerAppCrawlsKey("app2")} {
		t.Run(bad, func(t *testing.T) {
			rdb := client(t)
			if err := rdb.Set(ctx, bad, "x", 0).Err(); err != nil {
				t.Fatal(err)
			}
			pipe := rdb.Pipeline()
			ledger.QueueSeeds(ctx, pipe, seedsOfTwoCrawls(), t0, time.Hour)
			if _, err := pipe.Exec(ctx); err == nil || !strings.Contains(err.Error(), "WRONGTYPE "+bad) {
				t.Fatalf("exec = %v, want WRONGTYPE naming %s", err, bad)
			}
			if keys := rdb.Keys(ctx, "*").Val(); len(keys) != 1 {
				t.Errorf("Redis holds %v, want only the wrong key", keys)
			}
		})
	}
}

func TestATallyCountsEveryFateAndQueuedPlusInFlightIsWhatIsLeft(t *testing.T) {
	rdb := client(t)
	var tl ledger.Tally
	tl.Enqueued(crawl, 10)
	tl.Refused(crawl, ledger.RefusedDuplicate, 4)
	tl.Refused(crawl, ledger.RefusedOffDomain, 2)
	tl.Fetched(crawl, 200)
	tl.Fetched(crawl, 200)
	tl.Fetched(crawl, 404)
	tl.Published(crawl, false)
	tl.Published(crawl, true)
	tl.Retried(crawl)
	tl.Dropped(crawl, ledger.DroppedTimeout)
	tl.RefusedPopped(crawl, ledger.RefusedRobots)
	var more ledger.Tally
	more.Purged(crawl, ledger.PurgedStop, 2)
	tl.Merge(&more)
	pipe := rdb.TxPipeline()
	tl.Write(ctx, pipe, t0, time.Hour)
	// Two requests leased by a crawler, one in a record of an earlier
	// version; one of another crawl.
	for id, m := range map[string]string{
		"a": throttle.Record{Queue: "link:example.com:queue", Score: "-50", Member: `{"url":"http://example.com/1","appid":"app","crawlid":"c1"}`}.String(),
		"b": `{"q":"link:example.com:queue","s":"-50","m":"{\"url\":\"http://example.com/2\",\"meta\":{\"appid\":\"app\",\"crawlid\":\"c1\"}}"}`,
		"c": throttle.Record{Queue: "link:example.com:queue", Score: "-50", Member: `{"url":"http://example.com/3","appid":"app","crawlid":"other"}`}.String(),
	} {
		pipe.HSet(ctx, rediskeys.LeaseKey("link")+":items", id, m)
	}
	mustExec(t, pipe)
	p := mustRead(t, rdb, crawl)
	want := ledger.Progress{
		State: ledger.StateRunning, Enqueued: 10, Queued: 2, InFlight: 2, Fetched: 3,
		StatusCodes: map[string]int64{"200": 2, "404": 1}, Published: 2, PublishedTruncated: 1, Retried: 1,
		Dropped: map[string]int64{"timeout": 1}, Refused: map[string]int64{"duplicate": 4, "off_domain": 2, "robots": 1},
		Purged: map[string]int64{"stop": 2}, Done: 6, LastActivity: 1700000000, Started: 1700000000,
	}
	if got, exp := harness.JSONText(t, p), harness.JSONText(t, &want); got != exp {
		t.Fatalf("progress\n got %s\nwant %s", got, exp)
	}
	if p.Queued+p.InFlight != p.Seeds+p.Enqueued-p.Done {
		t.Fatal("queued + in flight is not what is left")
	}
}

func TestALedgerFirstWrittenByACrawlerExpires(t *testing.T) {
	rdb := client(t)
	var tl ledger.Tally
	tl.Published(crawl, false)
	pipe := rdb.TxPipeline()
	tl.Write(ctx, pipe, t0, time.Hour)
	mustExec(t, pipe)
	if ttl := rdb.TTL(ctx, crawl.Key()).Val(); ttl <= 0 || ttl > time.Hour {
		t.Fatalf("ledger ttl %v, want within an hour", ttl)
	}
}

func TestPurgeRemovesTheCrawlsMembersAndCountsThemDone(t *testing.T) {
	rdb := client(t)
	members := []string{`{"n":1}`, `{"n":2}`, `{"n":3}`}
	var tl ledger.Tally
	tl.Enqueued(crawl, 3)
	pipe := rdb.TxPipeline()
	tl.Write(ctx, pipe, t0, time.Hour)
	for _, m := range members {
		pipe.ZAdd(ctx, "link:example.com:queue", redis.Z{Score: -1, Member: m})
	}
	mustExec(t, pipe)
	pipe = rdb.TxPipeline()
	cmds := ledger.PurgeQueued(ctx, pipe, "link:example.com:queue", crawl, ledger.PurgedExpire, append(members[:2:2], `{"gone":1}`), t0)
	ledger.EndedBy(ctx, pipe, crawl, ledger.PurgedExpire, "expirer", t0, t0.Add(time.Minute))
	mustExec(t, pipe)
	if n := cmds[0].Val().(int64); n != 2 {
		t.Fatalf("purged %d, want 2", n)
	}
	p := mustRead(t, rdb, crawl)
	if p.Done != 2 || p.Purged["expire"] != 2 || p.Queued != 1 || p.EndedBy != "expire" || p.Reason() != "expired" {
		t.Fatalf("progress %+v", p)
	}
	// A crawl without a ledger (fed by the original's Kafka Monitor) gets none.
	other := ledger.Crawl{SpiderID: "link", AppID: "app", CrawlID: "python"}
	pipe = rdb.TxPipeline()
	ledger.PurgeQueued(ctx, pipe, "link:example.com:queue", other, ledger.PurgedStop, members[2:], t0)
	ledger.EndedBy(ctx, pipe, other, ledger.PurgedStop, "stopper", t0, t0.Add(time.Minute))
	mustExec(t, pipe)
	if n := rdb.Exists(ctx, other.Key()).Val(); n != 0 {
		t.Fatal("a purge created a ledger for a crawl that had none")
	}
	if n := rdb.ZCard(ctx, "link:example.com:queue").Val(); n != 0 {
		t.Fatalf("queue holds %d, want 0", n)
	}
}

func finishAll(t *testing.T, c *ledger.Completer) []ledger.Finished {
	t.Helper()
	fs, err := c.Claim(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fs {
		if err := c.Finish(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	return fs
}

func TestACrawlCompletesOnceWhenNothingIsLeftAndAgainAfterNewSeeds(t *testing.T) {
	rdb := client(t)
	a, b := ledger.NewCompleter(rdb, "a", time.Hour), ledger.NewCompleter(rdb, "b", time.Hour)
	write(t, rdb, time.Now(), func(tl *ledger.Tally) { tl.Enqueued(crawl, 2) })
	write(t, rdb, time.Now(), func(tl *ledger.Tally) { tl.Published(crawl, false) })
	if fs := finishAll(t, a); len(fs) != 0 {
		t.Fatalf("completed with one request left: %+v", fs)
	}
	write(t, rdb, time.Now(), func(tl *ledger.Tally) { tl.Dropped(crawl, ledger.Dropped504) })
	// Two monitors at once: exactly one claims it.
	var wg sync.WaitGroup
	var mu sync.Mutex
	var got []ledger.Finished
	for _, c := range []*ledger.Completer{a, b} {
		wg.Go(func() {
			fs := finishAll(t, c)
			mu.Lock()
			got = append(got, fs...)
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(got) != 1 || got[0].Crawl != crawl || got[0].Progress.Published != 1 || got[0].Progress.Dropped["504"] != 1 {
		t.Fatalf("finished %+v, want the crawl once with its counts", got)
	}
	msg := got[0].Message(time.Unix(1700000001, 0))
	if msg["action"] != "crawl-complete" || msg["reason"] != "finished" || msg["server_time"] != int64(1700000001) {
		t.Fatalf("message %v", msg)
	}
	if p := mustRead(t, rdb, crawl); p.State != ledger.StateComplete {
		t.Fatalf("state %q after completion", p.State)
	}
	if fs := finishAll(t, b); len(fs) != 0 {
		t.Fatal("completed twice")
	}
	if n := rdb.ZCard(ctx, rediskeys.LedgerActiveKey).Val(); n != 0 {
		t.Fatalf("%d crawls still active", n)
	}
	// New seeds: running again, and complete again once done.
	write(t, rdb, time.Now(), func(tl *ledger.Tally) { tl.Enqueued(crawl, 1) })
	if p := mustRead(t, rdb, crawl); p.State != ledger.StateRunning {
		t.Fatalf("state %q after new work", p.State)
	}
	write(t, rdb, time.Now(), func(tl *ledger.Tally) { tl.Published(crawl, false) })
	if fs := finishAll(t, a); len(fs) != 1 {
		t.Fatalf("second completion: %d", len(fs))
	}
}

// A crawl fed as several seed messages is one crawl: with nothing left it
// still waits for LEDGER_COMPLETE_QUIET after its last new work (a seed or
// a follow-up), so that a seed arriving in that time joins it; a stop ends
// it at once.
func TestACrawlCompletesOnlyAfterItsQuietPeriodUnlessAStopEndedIt(t *testing.T) {
	rdb := client(t)
	if err := ledger.LoadScripts(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	c := ledger.NewCompleter(rdb, "a", time.Hour)
	c.Quiet = time.Hour
	now := time.Now()
	// The first seed, two hours ago, is done; a second one arrives now.
	write(t, rdb, now.Add(-2*time.Hour), func(tl *ledger.Tally) { tl.Enqueued(crawl, 1) })
	write(t, rdb, now, func(tl *ledger.Tally) { tl.Published(crawl, false) })
	write(t, rdb, now.Add(-30*time.Minute), func(tl *ledger.Tally) { tl.Enqueued(crawl, 1) })
	write(t, rdb, now, func(tl *ledger.Tally) { tl.Published(crawl, false) })
	if fs := finishAll(t, c); len(fs) != 0 {
		t.Fatalf("completed %+v half an hour after its last seed, quiet period an hour", fs)
	}
	if p := mustRead(t, rdb, crawl); p.State != ledger.StateRunning || p.Outstanding() != 0 {
		t.Fatalf("progress %+v, want running with nothing left", p)
	}
	c.Quiet = 29 * time.Minute
	fs := finishAll(t, c)
	if len(fs) != 1 || fs[0].Progress.Seeds+fs[0].Progress.Enqueued != 2 || fs[0].Progress.Reason() != "finished" {
		t.Fatalf("finished %+v, want the crawl with both requests, finished", fs)
	}

	// A stop ends a crawl at once, however recent its last seed.
	other := ledger.Crawl{SpiderID: "link", AppID: "app", CrawlID: "stopped"}
	member := `{"url":"http://example.com/","appid":"app","crawlid":"stopped"}`
	seed(t, rdb, other, member)
	rdb.ZAdd(ctx, rediskeys.LedgerActiveKey, redis.Z{Score: float64(now.Unix()), Member: other.Member()})
	c.Quiet = time.Hour
	pipe := rdb.TxPipeline()
	ledger.EndedBy(ctx, pipe, other, ledger.PurgedStop, "stopper", now, now.Add(time.Minute))
	ledger.PurgeQueued(ctx, pipe, rediskeys.QueueKey("link", "example.com"), other, ledger.PurgedStop, []string{member}, now)
	mustExec(t, pipe)
	if err := ledger.Release(ctx, rdb, other, "stopper"); err != nil {
		t.Fatal(err)
	}
	if fs := finishAll(t, c); len(fs) != 1 || fs[0].Crawl != other || fs[0].Progress.Reason() != "stopped" {
		t.Fatalf("finished %+v, want the stopped crawl at once", fs)
	}
}

func TestWorkArrivingWhileACompletionIsPublishedKeepsTheCrawlActive(t *testing.T) {
	rdb := client(t)
	c := ledger.NewCompleter(rdb, "a", time.Hour)
	claimed := claimDone(t, rdb, c)
	write(t, rdb, time.Now(), func(tl *ledger.Tally) { tl.Enqueued(crawl, 1) })
	if err := c.Finish(ctx, claimed); err != nil {
		t.Fatal(err)
	}
	if p := mustRead(t, rdb, crawl); p.State != ledger.StateRunning {
		t.Fatalf("state %q, want running", p.State)
	}
	if n := rdb.ZCard(ctx, rediskeys.LedgerActiveKey).Val(); n != 1 {
		t.Fatal("the crawl left the active set with work outstanding")
	}
}

// A stop purges the crawl's last queued requests: no completer may claim
// it (and publish "finished", or publish before the stop's own answer)
// until the stop releases it; then it completes as stopped.
func TestAnEndingHoldsCompletersOffUntilItsAnswerIsOut(t *testing.T) {
	rdb := client(t)
	if err := ledger.LoadScripts(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	completer := ledger.NewCompleter(rdb, "monitor", time.Hour)
	member := `{"url":"http://example.com/","appid":"app","crawlid":"c1"}`
	seed(t, rdb, crawl, member)
	now := time.Now()
	pipe := rdb.TxPipeline()
	ended := ledger.EndedBy(ctx, pipe, crawl, ledger.PurgedStop, "stopper", now, now.Add(time.Minute))
	ledger.PurgeQueued(ctx, pipe, rediskeys.QueueKey("link", "example.com"), crawl, ledger.PurgedStop, []string{member}, now)
	mustExec(t, pipe)
	if n, _ := ended.Int(); n != 1 {
		t.Fatalf("EndedBy = %d, want 1 (recorded)", n)
	}
	if fs := finishAll(t, completer); len(fs) != 0 {
		t.Fatalf("claimed %v while the stop holds the crawl", fs)
	}
	if err := ledger.Release(ctx, rdb, crawl, "another"); err != nil {
		t.Fatal(err)
	}
	if fs := finishAll(t, completer); len(fs) != 0 {
		t.Fatal("another holder's release let the crawl be claimed")
	}
	if err := ledger.Release(ctx, rdb, crawl, "stopper"); err != nil {
		t.Fatal(err)
	}
	fs := finishAll(t, completer)
	if len(fs) != 1 || fs[0].Progress.Reason() != "stopped" || fs[0].Progress.Purged["stop"] != 1 {
		t.Fatalf("finished %+v, want the crawl, stopped with 1 purged", fs)
	}
	// A stop of the completed crawl records nothing: it finished as it did.
	pipe = rdb.TxPipeline()
	ended = ledger.EndedBy(ctx, pipe, crawl, ledger.PurgedExpire, "expirer", now, now.Add(time.Minute))
	mustExec(t, pipe)
	if n, _ := ended.Int(); n != 0 {
		t.Fatalf("EndedBy on a completed crawl = %d, want 0", n)
	}
	if p := mustRead(t, rdb, crawl); p.EndedBy != "stop" || p.State != ledger.StateComplete {
		t.Fatalf("progress %+v, want complete and ended by the stop", p)
	}
}

// A crawl a completer is publishing as finished stays finished: an ending
// arriving meanwhile records nothing.
func TestAnEndingDuringACompletionRecordsNothing(t *testing.T) {
	rdb := client(t)
	completer := ledger.NewCompleter(rdb, "monitor", time.Hour)
	claimed := claimDone(t, rdb, completer)
	now := time.Now()
	pipe := rdb.TxPipeline()
	ended := ledger.EndedBy(ctx, pipe, crawl, ledger.PurgedStop, "stopper", now, now.Add(time.Minute))
	mustExec(t, pipe)
	if n, _ := ended.Int(); n != 0 {
		t.Fatalf("EndedBy = %d during a completion, want 0", n)
	}
	if err := completer.Finish(ctx, claimed); err != nil {
		t.Fatal(err)
	}
	if p := mustRead(t, rdb, crawl); p.State != ledger.StateComplete || p.Reason() != "finished" {
		t.Fatalf("progress %+v, want complete and finished", p)
	}
}

func TestAClaimOfADeadMonitorIsTakenOverAfterItsDeadline(t *testing.T) {
	rdb := client(t)
	dead, live := ledger.NewCompleter(rdb, "dead", time.Hour), ledger.NewCompleter(rdb, "live", time.Hour)
	dead.ClaimTTL = 300 * time.Millisecond
	writeDone(t, rdb)
	if fs, _ := dead.Claim(ctx); len(fs) != 1 {
		t.Fatal("no claim")
	}
	if fs := finishAll(t, live); len(fs) != 0 {
		t.Fatal("claimed while another monitor's claim is live")
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(finishAll(t, live)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the dead monitor's claim was never taken over")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestClaimReloadsScriptsRedisForgot(t *testing.T) {
	rdb := client(t)
	writeDone(t, rdb)
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if fs := finishAll(t, ledger.NewCompleter(rdb, "a", time.Hour)); len(fs) != 1 {
		t.Fatalf("finished %d, want 1", len(fs))
	}
}

func TestListShowsCrawlsNewestFirstAndForgetsExpiredOnes(t *testing.T) {
	rdb := client(t)
	for i, id := range []string{"old", "mid", "new"} {
		write(t, rdb, t0.Add(time.Duration(i)*time.Minute), func(tl *ledger.Tally) {
			tl.Enqueued(ledger.Crawl{SpiderID: "link", AppID: "app", CrawlID: id}, 1)
		})
	}
	write(t, rdb, t0, func(tl *ledger.Tally) { tl.Enqueued(ledger.Crawl{SpiderID: "link", AppID: "other", CrawlID: "x"}, 1) })
	entries, total, err := ledger.List(ctx, rdb, "app", 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	if total != 3 || len(entries) != 2 || entries[0].CrawlID != "new" || entries[1].CrawlID != "mid" {
		t.Fatalf("page 1: %d %+v", total, entries)
	}
	if entries, _, _ := ledger.List(ctx, rdb, "app", 2, 2); len(entries) != 1 || entries[0].CrawlID != "old" {
		t.Fatalf("page 2: %+v", entries)
	}
	if _, total, _ := ledger.List(ctx, rdb, "", 0, 10); total != 4 {
		t.Fatalf("all apps: %d crawls, want 4", total)
	}
	rdb.Del(ctx, ledger.Crawl{SpiderID: "link", AppID: "app", CrawlID: "mid"}.Key())
	entries, total, _ = ledger.List(ctx, rdb, "app", 0, 10)
	if total != 2 || len(entries) != 2 {
		t.Fatalf("after expiry: %d %+v", total, entries)
	}
	if n := rdb.ZCard(ctx, rediskeys.LedgerCrawlsKey).Val(); n != 3 {
		t.Fatalf("global index holds %d, want 3", n)
	}
}

// The original's components scan these patterns; no ledger key may match
// one, whatever the ids hold.
func TestNoLedgerKeyMatchesAPatternTheOriginalScans(t *testing.T) {
	patterns := []string{"*:*:queue", "*:queue", "info:*", "stop:*", "expire:*", "statsrequest:*", "zk:*", "stats:*",
		"timeout:*", "*:dupefilter:*", "*:blacklist", "*:*:throttle_*", "lock:*"}
	ids := []string{"queue", "blacklist", "link", "app", "stats", "info"}
	var keys []string
	for _, s := range ids {
		for _, a := range ids {
			for _, c := range ids {
				keys = append(keys, ledger.Crawl{SpiderID: s, AppID: a, CrawlID: c}.Key(), rediskeys.LedgerAppCrawlsKey(a))
			}
		}
	}
	keys = append(keys, rediskeys.LedgerActiveKey, rediskeys.LedgerCrawlsKey)
	for _, k := range keys {
		for _, p := range patterns {
			if ok, _ := path.Match(p, k); ok {
				t.Errorf("key %q matches %q", k, p)
			}
		}
	}
}
