package recrawl

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

var crawl = ledger.Crawl{SpiderID: "link", AppID: "app", CrawlID: "c1"}

// feed queues a scheduled crawl's seed as the Kafka Monitor does.
func feed(t *testing.T, rdb *redis.Client, spec Spec, now time.Time) string {
	t.Helper()
	fed := map[string]any{"url": "http://example.com/", "appid": "app", "crawlid": "c1", "spiderid": "link",
		"priority": json.Number("1"), "maxdepth": json.Number("2"), FieldRun: FirstRun,
		FieldRecrawl: map[string]any{"every": json.Number("10")}}
	member, r, err := crawlrequest.FromFed(fed)
	if err != nil {
		t.Fatal(err)
	}
	queue := "link:example.com:queue"
	pipe := rdb.TxPipeline()
	Feed(context.Background(), pipe, Seed{Queue: queue, Score: r.Score(), Member: member, Crawl: crawl, URL: r.URL, Spec: spec}, now, time.Hour)
	if _, err := pipe.Exec(context.Background()); err != nil {
		t.Fatal(err)
	}
	return queue
}

func TestFromFedReadsTheScheduleWithItsDefaultsAndRefusesBadOnes(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string
	}{
		{`{"every": 60}`, `{"every":60,"runs":0,"emit":"all","adaptive":false}`},
		{`{"every": 1, "runs": 3, "emit": "changed", "adaptive": true}`, `{"every":1,"runs":3,"emit":"changed","adaptive":true}`},
		{`{"every": 0}`, "error"},
		{`{"every": 5, "runs": -1}`, "error"},
		{`{"every": 5, "emit": "some"}`, "error"},
	} {
		var v any
		json.Unmarshal([]byte(c.in), &v) //nolint:errcheck // literals
		s, ok, err := FromFed(map[string]any{FieldRecrawl: v})
		got := "error"
		if err == nil && ok {
			b, _ := json.Marshal(s)
			got = string(b)
		}
		if got != c.want {
			t.Errorf("FromFed(%s) = %s, want %s", c.in, got, c.want)
		}
	}
	if _, ok, err := FromFed(map[string]any{"url": "x"}); ok || err != nil {
		t.Errorf("a request without recrawl has a schedule: %v %v", ok, err)
	}
}

// Eight starters race for each run: every run starts exactly once, only
// when due and after the run before completed, with run n on its seed and
// the duplicate filter dropped; the last run leaves the due set.
func TestEachRunStartsOnceHoweverManyStartersTry(t *testing.T) {
	rdb := harness.StartRedis(t).TestClient(t)
	ctx := context.Background()
	t0 := time.Unix(1_800_000_000, 0)
	queue := feed(t, rdb, Spec{Every: 10, Runs: 3, Emit: EmitAll}, t0)
	at := func(now time.Time) []Started {
		var mu sync.Mutex
		var all []Started
		var wg sync.WaitGroup
		for range 8 {
			s := NewStarter(rdb, time.Hour, 10)
			s.now = func() time.Time { return now }
			wg.Go(func() {
				got, err := s.StartDue(ctx)
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				all = append(all, got...)
				mu.Unlock()
			})
		}
		wg.Wait()
		var started []Started
		for _, s := range all {
			if s.Outcome == "started" {
				started = append(started, s)
			}
		}
		return started
	}
	complete := func() {
		rdb.HSet(ctx, crawl.Key(), "completed", "1", "done", rdb.HGet(ctx, crawl.Key(), "seeds").Val())
	}
	if got := at(t0.Add(5 * time.Second)); len(got) != 0 {
		t.Fatalf("a run started before it was due: %+v", got)
	}
	if got := at(t0.Add(11 * time.Second)); len(got) != 0 {
		t.Fatalf("run 2 started while run 1 goes on: %+v", got)
	}
	complete()
	rdb.SAdd(ctx, rediskeys.DupeFilterKey("link", "c1"), "fp")
	got := at(t0.Add(12 * time.Second))
	if len(got) != 1 || got[0].Run != 2 {
		t.Fatalf("run 2 started %+v, want once", got)
	}
	if rdb.Exists(ctx, rediskeys.DupeFilterKey("link", "c1")).Val() != 0 {
		t.Error("run 2 kept run 1's duplicate filter")
	}
	members := rdb.ZRange(ctx, queue, 0, -1).Val()
	if len(members) != 2 || !strings.Contains(members[0]+members[1], `"run":2`) {
		t.Errorf("queue after run 2's start: %v, want run 1's seed and run 2's", members)
	}
	p, _ := ledger.Read(ctx, rdb, crawl)
	if p[0].Run() != 2 || p[0].Seeds != 1 || p[0].State != ledger.StateRunning {
		t.Errorf("run 2's ledger %+v (run %d), want run 2 afresh with its seed", p[0], p[0].Run())
	}
	complete()
	if got := at(t0.Add(21 * time.Second)); len(got) != 0 {
		t.Fatalf("run 3 started before its due time (every 10 s from run 2's start): %+v", got)
	}
	if got := at(t0.Add(22 * time.Second)); len(got) != 1 || got[0].Run != 3 {
		t.Fatalf("run 3 started %+v, want once", got)
	}
	if n := rdb.ZCard(ctx, rediskeys.RecrawlDueKey).Val(); n != 0 {
		t.Errorf("the due set holds %d after the last run started", n)
	}
	in, err := Read(ctx, rdb, crawl)
	if err != nil || in.RunsStarted != 3 || in.NextRunAt != nil || in.State != "active" {
		t.Errorf("info %+v %v, want 3 runs started and no next run", in, err)
	}
	cur, _ := ledger.Read(ctx, rdb, crawl)
	runs, err := ledger.Runs(ctx, rdb, crawl, cur[0])
	if err != nil || len(runs) != 3 || runs[0].Run != 1 || runs[2].Run != 3 || runs[0].Completed == nil || runs[2].Completed != nil {
		t.Errorf("runs %+v %v, want 1 and 2 completed, 3 going on", runs, err)
	}
}

func TestCancelAndExpiresEndTheSchedule(t *testing.T) {
	rdb := harness.StartRedis(t).TestClient(t)
	ctx := context.Background()
	t0 := time.Unix(1_800_000_000, 0)
	feed(t, rdb, Spec{Every: 10, Emit: EmitAll}, t0)
	pipe := rdb.TxPipeline()
	Cancel(ctx, pipe, crawl, "stop", time.Hour)
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	s := NewStarter(rdb, time.Hour, 10)
	s.now = func() time.Time { return t0.Add(time.Minute) }
	if got, _ := s.StartDue(ctx); len(got) != 0 {
		t.Errorf("a run started after the stop: %+v", got)
	}
	in, _ := Read(ctx, rdb, crawl)
	if in.State != "ended" || in.EndedBy != "stop" || in.NextRunAt != nil {
		t.Errorf("info after the stop %+v", in)
	}

	rdb.FlushAll(ctx)
	fed := Spec{Every: 10, Emit: EmitAll}
	feedExpiring(t, rdb, fed, t0, t0.Add(15*time.Second))
	rdb.HSet(ctx, crawl.Key(), "completed", "1", "done", "1")
	got, _ := s.StartDue(ctx) // a minute later: expired
	if len(got) != 1 || got[0].Outcome != "expired" {
		t.Errorf("a run past expires: %+v, want the schedule expired", got)
	}
}

// CancelSchedule ends a live schedule alone: no run starts after it, the
// ledger of the run in progress is left as it is, and a second cancel (or
// one of a crawl without a schedule) says so.
func TestCancelScheduleEndsOnlyTheSchedule(t *testing.T) {
	rdb := harness.StartRedis(t).TestClient(t)
	ctx := context.Background()
	t0 := time.Unix(1_800_000_000, 0)
	feed(t, rdb, Spec{Every: 10, Emit: EmitAll}, t0)
	before := rdb.HGetAll(ctx, crawl.Key()).Val()
	if ended, err := CancelSchedule(ctx, rdb, crawl); err != nil || !ended {
		t.Fatalf("cancel: ended %v, %v; want ended", ended, err)
	}
	in, _ := Read(ctx, rdb, crawl)
	if in == nil || in.State != "ended" || in.EndedBy != EndedByCancel || in.NextRunAt != nil || in.RunsStarted != 1 {
		t.Errorf("info after the cancel %+v, want ended by cancel, no next run, 1 run started", in)
	}
	if ttl := rdb.TTL(ctx, ScheduleOf(crawl).Hash).Val(); ttl <= 0 || ttl > EndedKeep {
		t.Errorf("the ended schedule lives %v, want up to %v", ttl, EndedKeep)
	}
	if after := rdb.HGetAll(ctx, crawl.Key()).Val(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("the cancel changed the run's ledger: %v, was %v", after, before)
	}
	if n := rdb.ZCard(ctx, "link:example.com:queue").Val(); n != 1 {
		t.Errorf("the seed's queue holds %d requests after the cancel, want its 1", n)
	}
	rdb.HSet(ctx, crawl.Key(), "completed", "1", "done", "1")
	s := NewStarter(rdb, time.Hour, 10)
	s.now = func() time.Time { return t0.Add(time.Minute) }
	if got, _ := s.StartDue(ctx); len(got) != 0 {
		t.Errorf("a run started after the cancel: %+v", got)
	}
	if ended, err := CancelSchedule(ctx, rdb, crawl); err != nil || ended {
		t.Errorf("a second cancel: ended %v, %v; want not ended", ended, err)
	}
	other := ledger.Crawl{SpiderID: "link", AppID: "app", CrawlID: "unscheduled"}
	if ended, err := CancelSchedule(ctx, rdb, other); err != nil || ended {
		t.Errorf("the cancel of a crawl without a schedule: ended %v, %v; want not ended", ended, err)
	}
}

func feedExpiring(t *testing.T, rdb *redis.Client, spec Spec, now, expires time.Time) {
	t.Helper()
	pipe := rdb.TxPipeline()
	Feed(context.Background(), pipe, Seed{Queue: "link:example.com:queue", Score: -1,
		Member: `{"appid":"app","crawlid":"c1","run":1,"url":"http://example.com/"}`, Crawl: crawl,
		URL: "http://example.com/", Spec: spec, Expires: float64(expires.Unix())}, now, time.Hour)
	if _, err := pipe.Exec(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkRunStartDrift makes 1,000 schedules whose run 2 falls due over
// 2 to 4 seconds, their run 1 complete, and starts them with one Starter
// looking every RECRAWL_INTERVAL (0.5 s, the default) as a Redis Monitor
// does: how late each run started after its due time, p50 and p99.
func BenchmarkRunStartDrift(b *testing.B) {
	rdb := harness.StartRedis(b).TestClient(b)
	ctx := context.Background()
	const schedules = 1000
	for range b.N {
		rdb.FlushAll(ctx)
		t0 := time.Now()
		pipe := rdb.Pipeline()
		for i := range schedules {
			c := ledger.Crawl{SpiderID: "link", AppID: "bench", CrawlID: fmt.Sprintf("c%d", i)}
			member := fmt.Sprintf(`{"appid":"bench","crawlid":"c%d","run":1,"url":"http://example.com/%d"}`, i, i)
			Feed(ctx, pipe, Seed{Queue: "link:example.com:queue", Score: -1, Member: member, Crawl: c,
				URL: fmt.Sprintf("http://example.com/%d", i), Spec: Spec{Every: 2 + i%3, Emit: EmitAll}}, t0, time.Hour)
			pipe.HSet(ctx, c.Key(), "completed", "1", "done", "1")
		}
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatal(err)
		}
		s := NewStarter(rdb, time.Hour, 10)
		var late []time.Duration
		for deadline := time.Now().Add(30 * time.Second); len(late) < schedules && time.Now().Before(deadline); {
			got, err := s.StartDue(ctx)
			if err != nil {
				b.Fatal(err)
			}
			for _, g := range got {
				if g.Outcome == "started" {
					late = append(late, g.At.Sub(g.Due))
				}
			}
			time.Sleep(Interval.Default())
		}
		if len(late) != schedules {
			b.Fatalf("%d of %d runs started", len(late), schedules)
		}
		slices.Sort(late)
		b.ReportMetric(float64(late[len(late)/2].Milliseconds()), "drift-p50-ms")
		b.ReportMetric(float64(late[len(late)*99/100].Milliseconds()), "drift-p99-ms")
	}
}
