package redisscripts_test

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisscripts"
)

const fifoQueue = "link:fifo.com:queue"

// fifoWriter queues requests in fifoQueue through one of the scripts that
// add to a queue, and remembers the order in which they went in.
type fifoWriter struct {
	t       *testing.T
	rdb     *redis.Client
	n       int
	arrived map[float64][]string // by score (-priority): members in arrival order
}

// member is the next request's member: its names sort in the reverse of
// their arrival, so a queue that falls back to member order fails.
func (w *fifoWriter) member(score float64, crawl string) string {
	w.n++
	m := fmt.Sprintf(`{"n":%05d,"crawlid":%q,"priority":%v}`, 99999-w.n, crawl, -score)
	w.arrived[score] = append(w.arrived[score], m)
	return m
}

func (w *fifoWriter) check(err error) {
	w.t.Helper()
	if err != nil && err != redis.Nil {
		w.t.Fatal(err)
	}
}

var fifoCrawls = []redisscripts.Ledger{crawl1, crawl2, crawl3}

// seeds is a Kafka Monitor batch: n seeds, their crawls interleaved.
func (w *fifoWriter) seeds(n int, score float64) {
	var reqs []redisscripts.SeedRequest
	for i := range n {
		c := fifoCrawls[i%len(fifoCrawls)]
		reqs = append(reqs, redisscripts.SeedRequest{Queue: fifoQueue, Score: score, Member: w.member(score, c.Member), Ledger: c})
	}
	w.check(redisscripts.Eval(ctx, w.rdb, redisscripts.Seeds{Requests: reqs, Stamp: stamp, TTL: time.Hour}).Err())
}

func (w *fifoWriter) seed(score float64) {
	r := redisscripts.SeedRequest{Queue: fifoQueue, Score: score, Member: w.member(score, "c1"), Ledger: crawl1}
	w.check(redisscripts.Run(ctx, w.rdb, redisscripts.Seed{Request: r, Stamp: stamp, TTL: time.Hour}).Err())
}

// page is a crawled page's n links (a crawler's finish script), of two
// crawls' pages in one batch.
func (w *fifoWriter) page(n int, score float64) {
	f := &redisscripts.Finish{LeaseOwners: "leases:link:owners", LeaseRecords: "leases:link:items", Stamp: stamp,
		LedgerTTL: time.Hour, DupeFilterTTL: time.Hour, DomainMaxPageTTL: time.Hour, GlobalPageTTL: time.Hour}
	for p, c := range []string{"c1", "c2"} {
		page := redisscripts.FinishPage{Blacklist: "link:blacklist", Crawl: "app||" + c, DupeFilter: "link:dupefilter:" + c,
			Groups: []redisscripts.FinishGroup{{Queue: fifoQueue, Channel: "link:queue-announce", Ledger: fifoCrawls[p], Score: score}}}
		for range n / 2 {
			m := w.member(score, c)
			page.Groups[0].Requests = append(page.Groups[0].Requests, redisscripts.FinishRequest{Fingerprint: m, Member: m})
		}
		f.Pages = append(f.Pages, page)
	}
	_, err := f.Run(ctx, w.rdb)
	w.check(err)
}

// retry is a crawler's retry of a leased request (lease_requeue).
func (w *fifoWriter) retry(score float64) {
	id := "owner:" + strconv.Itoa(w.n)
	w.check(w.rdb.HSet(ctx, "leases:link:items", id, "x").Err())
	w.check(redisscripts.Eval(ctx, w.rdb, redisscripts.LeaseRequeue{Records: "leases:link:items", Queue: fifoQueue, LeaseID: id,
		Score: score, Member: w.member(score, "c2")}).Err())
}

// feed is a scheduled crawl's seed (recrawl_feed).
func (w *fifoWriter) feed(score float64) {
	f := recrawlFeed(w.member(score, "c3"))
	f.Queue, f.Score = fifoQueue, score
	w.check(redisscripts.Eval(ctx, w.rdb, f).Err())
}

// pythonPops pops the queue as the original's crawler does: ZRANGE 0 0,
// then ZREMRANGEBYRANK 0 0.
func pythonPops(t *testing.T, rdb *redis.Client) []string {
	var out []string
	for {
		top, err := rdb.ZRange(ctx, fifoQueue, 0, 0).Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(top) == 0 {
			return out
		}
		out = append(out, top[0])
		rdb.ZRemRangeByRank(ctx, fifoQueue, 0, 0)
	}
}

// 1,000 requests of one priority, from three crawls, Kafka Monitor batches,
// crawlers' pages, retries and scheduled seeds, come out of their queue in
// the order they went in; other priorities still come first or last; a
// pop as the original's crawler does it sees the same order as ZPOPMIN.
func TestRequestsOfOnePriorityComeOutInTheOrderTheyWentIn(t *testing.T) {
	for _, c := range servers(t) {
		t.Run(c.name, func(t *testing.T) {
			w := &fifoWriter{t: t, rdb: c.rdb, arrived: map[float64][]string{}}
			w.seeds(5, -60)
			for round := range 10 {
				w.seeds(40, -50) // 400 in all
				w.seed(-50)      // 10
				w.page(30, -50)  // 300
				w.seeds(3, -40)
				w.page(4, -60)
				w.retry(-50)     // 10
				w.feed(-50)      // 10
				w.seeds(27, -50) // 270
				if round%3 == 0 {
					w.seed(-60)
				}
			}
			if n := len(w.arrived[-50]); n != 1000 {
				t.Fatalf("the test queued %d requests of priority 50, want 1000", n)
			}
			want := slices.Concat(w.arrived[-60], w.arrived[-50], w.arrived[-40])
			zpopmin, err := c.rdb.ZRange(ctx, fifoQueue, 0, -1).Result() // ZPOPMIN's order
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(zpopmin, want) {
				t.Errorf("the queue holds %d requests out of arrival order: first difference %s", len(zpopmin), firstDiff(zpopmin, want))
			}
			if got := pythonPops(t, c.rdb); !slices.Equal(got, want) {
				t.Errorf("a Python-style pop sees another order: first difference %s", firstDiff(got, want))
			}
		})
	}
}

func firstDiff(got, want []string) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("at %d: got %s, want %s", i, got[i], want[i])
		}
	}
	return fmt.Sprintf("got %d, want %d", len(got), len(want))
}

// The tiebreak's limits: a member queued already keeps its place; a
// request of an original component (score -priority exactly) goes before
// ours; a band whose tiebreak is used up ties (member order); a score
// outside the tiebreak's range is used as it is.
func TestTheTiebreakKeepsPlacesAndHasLimits(t *testing.T) {
	for _, c := range servers(t) {
		t.Run(c.name, func(t *testing.T) {
			w := &fifoWriter{t: t, rdb: c.rdb, arrived: map[float64][]string{}}
			w.seed(-5)
			first := w.arrived[-5][0]
			w.seed(-5)
			// fed again: not queued, and it keeps its place
			r := redisscripts.SeedRequest{Queue: fifoQueue, Score: -5, Member: first, Ledger: crawl1}
			if n, _ := redisscripts.Run(ctx, c.rdb, redisscripts.Seed{Request: r, Stamp: stamp, TTL: time.Hour}).Int(); n != 0 {
				t.Errorf("a request fed twice was queued again (%d)", n)
			}
			c.rdb.ZAdd(ctx, fifoQueue, redis.Z{Score: -5, Member: "python"})
			got := c.rdb.ZRange(ctx, fifoQueue, 0, -1).Val()
			if want := []string{"python", first, w.arrived[-5][1]}; !slices.Equal(got, want) {
				t.Errorf("queue %q, want %q", got, want)
			}
			score := c.rdb.ZScore(ctx, fifoQueue, first).Val()
			if score != -5+1.0/(1<<32) {
				t.Errorf("the first request's score is %v, want -5 + 2^-32", score)
			}

			full := -7 + float64(1<<32-1)/(1<<32)
			c.rdb.ZAdd(ctx, fifoQueue, redis.Z{Score: full, Member: "z-last"})
			w.seed(-7)
			if s := c.rdb.ZScore(ctx, fifoQueue, w.arrived[-7][0]).Val(); s != full {
				t.Errorf("after the band's last tiebreak a request got %v, want the same %v (a tie)", s, full)
			}
			if s := c.rdb.ZScore(ctx, fifoQueue, "z-last").Val(); s >= -6 {
				t.Errorf("the band's last tiebreak reached the next priority: %v", s)
			}

			for _, big := range []float64{-3000000, 2.5} {
				w.seed(big)
				if s := c.rdb.ZScore(ctx, fifoQueue, w.arrived[big][0]).Val(); s != big {
					t.Errorf("score %v was queued at %v, want it as it is", big, s)
				}
			}
		})
	}
}
