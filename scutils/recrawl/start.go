package recrawl

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisscripts"
)

var errBadSeed = errors.New("a kept seed without its queue")

func itoa(n int) string { return strconv.Itoa(n) }

// A Starter starts the runs due of every schedule (a Redis Monitor runs
// one). Several Starters may run at once: each run starts exactly once.
type Starter struct {
	rdb redis.Cmdable
	// cluster is rdb on a Redis Cluster (cluster.go), else nil.
	cluster *redis.ClusterClient
	ttl     time.Duration
	// Kept is how many past runs' ledgers a crawl keeps (RECRAWL_RUNS_KEPT).
	Kept int
	// Batch is the most schedules looked at per StartDue (default 1,000).
	Batch int
	now   func() time.Time
}

// NewStarter returns a Starter whose runs' ledgers live ttl (LEDGER_TTL).
// With a Redis Cluster client it starts runs in the cluster's steps
// (cluster.go).
func NewStarter(rdb redis.Cmdable, ttl time.Duration, kept int) *Starter {
	cc, _ := rdb.(*redis.ClusterClient)
	return &Starter{rdb: rdb, cluster: cc, ttl: ttl, Kept: max(kept, 1), Batch: 1000, now: time.Now}
}

// Started is a run a Starter started: its crawl, its number, when it was
// due and when it started.
type Started struct {
	Crawl   ledger.Crawl
	Run     int
	Due, At time.Time
	// Outcome is "started", or why not (recrawl_start.lua's answers; on a
	// Redis Cluster recrawl_cluster_claim.lua's), or "resumed": a start a
	// monitor left half done, finished.
	Outcome  string
	Problems []string
}

// StartDue starts every run due now (at most Batch schedules). It returns
// what it tried, started or not; a schedule whose run n-1 goes on is
// looked at again a second later.
func (s *Starter) StartDue(ctx context.Context) ([]Started, error) {
	if s.cluster != nil {
		return s.startDueCluster(ctx)
	}
	now := s.now()
	due, err := s.rdb.ZRangeByScoreWithScores(ctx, rediskeys.RecrawlDueKey, &redis.ZRangeBy{
		Min: "-inf", Max: ledger.Stamp(now), Count: int64(s.Batch)}).Result()
	if err != nil {
		return nil, fmt.Errorf("list re-crawl runs due: %w", err)
	}
	if len(due) == 0 {
		return nil, nil
	}
	crawls := make([]ledger.Crawl, 0, len(due))
	pipe := s.rdb.Pipeline()
	var hashes []*redis.MapStringStringCmd
	var dueAt []time.Time
	for _, z := range due {
		c, err := ledger.ParseMember(fmt.Sprint(z.Member))
		if err != nil {
			s.rdb.ZRem(ctx, rediskeys.RecrawlDueKey, z.Member)
			continue
		}
		crawls = append(crawls, c)
		dueAt = append(dueAt, time.UnixMilli(int64(z.Score*1000)))
		hashes = append(hashes, pipe.HGetAll(ctx, ScheduleOf(c).Hash))
	}
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return nil, fmt.Errorf("read re-crawl schedules: %w", err)
	}
	out := make([]Started, len(crawls))
	cmds := make([]*redis.Cmd, len(crawls))
	pipe = s.rdb.Pipeline()
	for i, c := range crawls {
		out[i] = Started{Crawl: c, Due: dueAt[i]}
		args, problems, err := s.startArgs(c, hashes[i].Val(), now)
		out[i].Problems = problems
		if err != nil {
			out[i].Outcome = err.Error()
			continue
		}
		out[i].Run = args.N
		cmds[i] = redisscripts.Eval(ctx, pipe, args)
	}
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return nil, fmt.Errorf("start re-crawl runs: %w", err)
	}
	at := s.now()
	for i, cmd := range cmds {
		if cmd == nil {
			continue
		}
		out[i].Outcome, _ = cmd.Text()
		out[i].At = at
	}
	return out, nil
}

// startArgs is the start of run n of c's schedule h (n: one after the last
// started), and the seeds left out because they cannot be read.
func (s *Starter) startArgs(c ledger.Crawl, h map[string]string, now time.Time) (redisscripts.RecrawlStart, []string, error) {
	bits, meta := rediskeys.BloomFilterKeys(c.SpiderID, c.CrawlID) // DUPEFILTER_MODE bloom's
	a := redisscripts.RecrawlStart{Schedule: ScheduleOf(c), Ledger: c.Ledger(),
		Runs: rediskeys.LedgerRunsKey(c.SpiderID, c.AppID, c.CrawlID), Kept: s.Kept,
		Drop:    []string{rediskeys.DupeFilterKey(c.SpiderID, c.CrawlID), bits, meta},
		Channel: rediskeys.QueueChannel(c.SpiderID), Stamp: ledger.Stamp(now), TTL: s.ttl}
	if len(h) == 0 {
		// No schedule: the script takes the crawl off recrawl:due.
		a.N = 1
		return a, nil, nil
	}
	started, _ := strconv.Atoi(h["runs_started"])
	a.N = started + 1
	var problems []string
	domains := map[string]bool{}
	for f, v := range h {
		if !strings.HasPrefix(f, seedPrefix) {
			continue
		}
		seed, url, err := runSeed(v, a.N)
		if err != nil {
			problems = append(problems, f+": "+err.Error())
			continue
		}
		a.Seeds = append(a.Seeds, seed)
		if d, err := rediskeys.DomainOfURL(url); err == nil && !domains[d] {
			domains[d] = true
			a.Drop = append(a.Drop, rediskeys.DomainMaxPageKey(c.SpiderID, d, c.CrawlID),
				rediskeys.GlobalPageCountKey(c.SpiderID, d, c.CrawlID))
		}
	}
	return a, problems, nil
}
