package recrawl

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisscripts"
)

// Re-crawls on a Redis Cluster (docs/recrawl.md, docs/redis-cluster.md).
// A crawl's ledger is split there into per-domain shares in the domains'
// slots, so a run cannot start in one script. The schedule, the due set
// and the crawl's completion marker share the tag {ledger}; a run starts
// in three steps, each idempotent:
//
//  1. the claim (recrawl_cluster_claim.lua), in the {ledger} slot: run n is
//     due, run n-1's crawl-complete is out (its marker says done), no
//     other monitor claimed it; runs_started becomes n, the schedule says
//     starting = n with the run's domains, and the marker holds
//     completers off the crawl;
//  2. per domain (recrawl_cluster_domain.lua), in the domain's slot: the
//     share of run n-1 archived and dropped with the domain's duplicate
//     filter and page counters, the domain's seeds queued with run n and
//     counted, at most once (the domain's runs hash records the run);
//  3. the start's end (recrawl_cluster_started.lua), in the {ledger} slot:
//     no longer starting, the marker's hold lifted.
//
// A monitor that dies between the steps leaves the crawl in the starting
// set; every monitor's next look finishes the starts it finds there.

// ClaimMargin is how long after run n-1's crawl-complete is marked done
// run n may be claimed on a Redis Cluster: the completer takes the crawl
// out of its shares' active sets just after it marks it done, and the
// margin lets that land before run n's shares enter them again. It is not
// what correctness rests on: a completer's late step leaves alone every
// share marked with a later run (ledger_deactivate.lua).
const ClaimMargin = 2 * time.Second

// FeedCluster is Feed on a Redis Cluster: it keeps s in its crawl's
// schedule at once, on rdb (recrawl_cluster_feed.lua, in the {ledger}
// slot: the schedule made when the crawl has none), and when run 1 is the
// run in progress adds to pipe the seed's queueing and count in its
// domain's ledger share (recrawl_cluster_seed.lua, in the domain's slot).
// Both may be repeated: a seed fed again is kept and queued once.
func FeedCluster(ctx context.Context, rdb redis.Cmdable, pipe redis.Pipeliner, s Seed, now time.Time, ttl time.Duration) error {
	l := rediskeys.Cluster
	c := s.Crawl
	now1, err := redisscripts.Eval(ctx, rdb, redisscripts.RecrawlClusterFeed{
		Schedule: ScheduleIn(l, c), Marker: l.Completed(c.SpiderID, c.AppID, c.CrawlID), Member: c.Member(),
		Every: time.Duration(s.Spec.Every) * time.Second, Runs: s.Spec.Runs, Emit: s.Spec.Emit, Adaptive: s.Spec.Adaptive,
		Expires: int64(s.Expires), SeedField: seedPrefix + s.URL, SeedKept: s.Queue + "\n" + s.Member,
		Stamp: ledger.Stamp(now), TTL: ttl,
	}).Int()
	if err != nil {
		return fmt.Errorf("keep a seed of crawl %s in its schedule: %w", c.CrawlID, err)
	}
	if now1 == 1 {
		redisscripts.Eval(ctx, pipe, redisscripts.RecrawlClusterSeed{Queue: s.Queue, Score: s.Score, Member: s.Member,
			Ledger: c.LedgerIn(l, s.Domain), Stamp: ledger.Stamp(now), TTL: ttl})
	}
	return nil
}

// startDueCluster is StartDue on a Redis Cluster: it first finishes the
// starts a monitor left half done, then starts the runs due.
func (s *Starter) startDueCluster(ctx context.Context) ([]Started, error) {
	l := rediskeys.Cluster
	var out []Started
	starting, err := s.cluster.ZRange(ctx, l.RecrawlStarting(), 0, int64(s.Batch)-1).Result()
	if err != nil {
		return nil, fmt.Errorf("list re-crawl runs being started: %w", err)
	}
	for _, m := range starting {
		c, err := ledger.ParseMember(m)
		if err != nil {
			s.cluster.ZRem(ctx, l.RecrawlStarting(), m)
			continue
		}
		st, err := s.resume(ctx, c)
		if err != nil {
			return out, err
		}
		out = append(out, st)
	}
	now := s.now()
	due, err := s.cluster.ZRangeByScoreWithScores(ctx, l.RecrawlDue(), &redis.ZRangeBy{
		Min: "-inf", Max: ledger.Stamp(now), Count: int64(s.Batch)}).Result()
	if err != nil {
		return out, fmt.Errorf("list re-crawl runs due: %w", err)
	}
	for _, z := range due {
		c, err := ledger.ParseMember(fmt.Sprint(z.Member))
		if err != nil {
			s.cluster.ZRem(ctx, l.RecrawlDue(), z.Member)
			continue
		}
		st, err := s.claim(ctx, c, now)
		if err != nil {
			return out, err
		}
		st.Due = time.UnixMilli(int64(z.Score * 1000))
		out = append(out, st)
	}
	return out, nil
}

// claim tries step 1 of run n of c's schedule (n: one after the last
// started) and, claimed, steps 2 and 3.
func (s *Starter) claim(ctx context.Context, c ledger.Crawl, now time.Time) (Started, error) {
	l := rediskeys.Cluster
	h, err := s.schedule(ctx, c)
	if err != nil {
		return Started{}, err
	}
	started, _ := strconv.Atoi(h["runs_started"])
	n := started + 1
	seeds, domains, problems := runSeeds(c, h, n)
	shares, err := ledger.ClusterShares(ctx, s.cluster, c.SpiderID, c.AppID, c.CrawlID)
	if err != nil {
		return Started{}, err
	}
	domains = union(domains, shares[c])
	st := Started{Crawl: c, Run: n, Problems: problems}
	st.Outcome, err = redisscripts.Eval(ctx, s.cluster, redisscripts.RecrawlClusterClaim{
		Schedule: ScheduleIn(l, c), Marker: l.Completed(c.SpiderID, c.AppID, c.CrawlID), Starting: l.RecrawlStarting(),
		Member: c.Member(), N: n, Hold: redisscripts.RecrawlHoldPrefix(n) + ledger.Stamp(now.Add(s.ttl)),
		Margin: ClaimMargin, Domains: domains, Stamp: ledger.Stamp(now), TTL: s.ttl,
	}).Text()
	if err != nil {
		return st, fmt.Errorf("claim run %d of crawl %s: %w", n, c.CrawlID, err)
	}
	if st.Outcome != "claimed" {
		return st, nil
	}
	if err := s.finish(ctx, c, n, domains, seeds, now); err != nil {
		return st, err
	}
	st.Outcome, st.At = "started", s.now()
	return st, nil
}

// resume finishes the start of c's run that a schedule says is starting
// (steps 2 and 3, both idempotent): "resumed".
func (s *Starter) resume(ctx context.Context, c ledger.Crawl) (Started, error) {
	h, err := s.schedule(ctx, c)
	if err != nil {
		return Started{}, err
	}
	return s.resumeFrom(ctx, c, h)
}

// schedule reads c's schedule hash on the cluster.
func (s *Starter) schedule(ctx context.Context, c ledger.Crawl) (map[string]string, error) {
	h, err := s.cluster.HGetAll(ctx, rediskeys.Cluster.Recrawl(c.SpiderID, c.AppID, c.CrawlID)).Result()
	if err != nil {
		return nil, fmt.Errorf("read the schedule of crawl %s: %w", c.CrawlID, err)
	}
	return h, nil
}

// resumeFrom is resume with c's schedule h read.
func (s *Starter) resumeFrom(ctx context.Context, c ledger.Crawl, h map[string]string) (Started, error) {
	n, _ := strconv.Atoi(h["starting"])
	st := Started{Crawl: c, Run: n, Outcome: "resumed"}
	if n == 0 { // another monitor finished it meanwhile: only the set's entry is left
		st.Outcome = ""
	}
	var domains []string
	var seeds map[string][]redisscripts.RunSeed
	if n > 0 {
		seeds, domains, st.Problems = runSeeds(c, h, n)
		if h["starting_domains"] != "" {
			domains = union(domains, strings.Split(h["starting_domains"], "\n"))
		}
	}
	if err := s.finish(ctx, c, n, domains, seeds, s.now()); err != nil {
		return st, err
	}
	st.At = s.now()
	return st, nil
}

// FinishStart finishes the start of c's run in progress on a Redis
// Cluster, when c's schedule says one is starting (steps 2 and 3, as any
// monitor's next look would), and reports whether it did. A stop or an
// expire calls it once it has ended the schedule and before it holds the
// crawl's completion: a start holds the completion marker until it ends,
// and the action must find the run started in every domain to record its
// end in the run's shares (else the run would complete as "finished").
// Ending the schedule first means no other start can begin meanwhile. On
// one Redis a run starts in one step: there is nothing to finish.
func (s *Starter) FinishStart(ctx context.Context, c ledger.Crawl) (bool, error) {
	if s.cluster == nil {
		return false, nil
	}
	h, err := s.schedule(ctx, c)
	if err != nil || h["starting"] == "" {
		return false, err
	}
	st, err := s.resumeFrom(ctx, c, h)
	return st.Outcome == "resumed", err
}

// finish is steps 2 and 3 of run n of c: the run starts in each of
// domains (one script each, one pipeline over the masters), then the
// start ends. n 0 (no start recorded) only takes c off the starting set.
func (s *Starter) finish(ctx context.Context, c ledger.Crawl, n int, domains []string, seeds map[string][]redisscripts.RunSeed, now time.Time) error {
	l := rediskeys.Cluster
	if len(domains) > 0 {
		pipe := s.cluster.Pipeline()
		for _, d := range domains {
			bits, meta := l.BloomFilter(c.SpiderID, d, c.CrawlID)
			redisscripts.Eval(ctx, pipe, redisscripts.RecrawlClusterDomain{Ledger: c.LedgerIn(l, d),
				Runs: l.LedgerRuns(c.SpiderID, c.AppID, c.CrawlID, d), Kept: s.Kept,
				Drop: []string{l.DupeFilter(c.SpiderID, d, c.CrawlID), bits, meta,
					l.DomainMaxPage(c.SpiderID, d, c.CrawlID), l.GlobalPageCount(c.SpiderID, d, c.CrawlID)},
				Channel: rediskeys.QueueChannel(c.SpiderID), N: n, Seeds: seeds[d], Stamp: ledger.Stamp(now), TTL: s.ttl})
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return fmt.Errorf("start run %d of crawl %s in its domains: %w", n, c.CrawlID, err)
		}
	}
	err := redisscripts.Eval(ctx, s.cluster, redisscripts.RecrawlClusterStarted{Schedule: ScheduleIn(l, c),
		Marker: l.Completed(c.SpiderID, c.AppID, c.CrawlID), Starting: l.RecrawlStarting(), Member: c.Member(),
		N: n, TTL: s.ttl}).Err()
	if err != nil {
		return fmt.Errorf("end the start of run %d of crawl %s: %w", n, c.CrawlID, err)
	}
	return nil
}

// runSeeds are the seeds of schedule h as queued in run n, by domain,
// their domains in the order found, and the seeds left out because they
// cannot be read.
func runSeeds(c ledger.Crawl, h map[string]string, n int) (map[string][]redisscripts.RunSeed, []string, []string) {
	byDomain := map[string][]redisscripts.RunSeed{}
	var domains, problems []string
	var fields []string
	for f := range h {
		if strings.HasPrefix(f, seedPrefix) {
			fields = append(fields, f)
		}
	}
	slices.Sort(fields)
	for _, f := range fields {
		seed, _, err := runSeed(h[f], n)
		var d string
		if err == nil {
			// The domain of the seed's queue: the domain's keys are in its slot.
			var ok bool
			if _, d, _, ok = rediskeys.Cluster.ParseAnyQueue(seed.Queue); !ok {
				err = errBadSeed
			}
		}
		if err != nil {
			problems = append(problems, f+": "+err.Error())
			continue
		}
		if byDomain[d] == nil {
			domains = append(domains, d)
		}
		byDomain[d] = append(byDomain[d], seed)
	}
	return byDomain, domains, problems
}

// union is a with the elements of b it lacks, in order.
func union(a, b []string) []string {
	for _, x := range b {
		if x != "" && !slices.Contains(a, x) {
			a = append(a, x)
		}
	}
	return a
}
