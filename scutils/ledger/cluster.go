package ledger

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisconn"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisscripts"
)

// In Redis Cluster mode a crawl's ledger is split by domain: each domain
// its crawl has work in holds the crawl's share (Crawl.LedgerIn), counted
// in the steps that write the domain's queue, and the crawl in that
// domain's index sets. The crawl's domains are found by scanning every
// master for the domains' active sets (ActiveShares); its totals are the
// sum of its shares (ReadSum), read so that the sum is one instant's; its
// crawl-complete is claimed once across the shards with a marker in one
// slot (ClusterCompleter).

// Shares are the active crawls of a cluster, each with the domains whose
// active set holds it and, per domain, its last new work there (epoch
// seconds, the set's score).
type Shares map[Crawl]map[string]float64

// Domains are the crawl's domains in s, sorted.
func (s Shares) Domains(c Crawl) []string { return slices.Sorted(maps.Keys(s[c])) }

// LastWork is the crawl's last new work in any of its domains.
func (s Shares) LastWork(c Crawl) float64 {
	last := 0.0
	for _, t := range s[c] {
		last = max(last, t)
	}
	return last
}

// ActiveShares reads every master's per-domain active sets
// (rediskeys.Layout.LedgerActive, found with SCAN on each master: no one
// node's SCAN is the cluster's). An entry that is no crawl's is skipped.
func ActiveShares(ctx context.Context, rdb *redis.ClusterClient) (Shares, error) {
	l := rediskeys.Cluster
	keys, err := redisconn.MasterKeys(ctx, rdb, l.LedgerActivePattern())
	if err != nil {
		return nil, fmt.Errorf("read the ledger's active crawls on every master: %w", err)
	}
	pipe := rdb.Pipeline()
	domains := make([]string, 0, len(keys))
	cmds := make([]*redis.ZSliceCmd, 0, len(keys))
	for _, k := range keys {
		if d, ok := l.ParseLedgerActive(k); ok {
			domains = append(domains, d)
			cmds = append(cmds, pipe.ZRangeWithScores(ctx, k, 0, -1))
		}
	}
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return nil, fmt.Errorf("read the ledger's active crawls: %w", err)
	}
	out := Shares{}
	for i, cmd := range cmds {
		for _, z := range cmd.Val() {
			member, _ := z.Member.(string)
			c, err := ParseMember(member)
			if err != nil {
				continue
			}
			if out[c] == nil {
				out[c] = map[string]float64{}
			}
			out[c][domains[i]] = z.Score
		}
	}
	return out, nil
}

// ReadSum is the sum of c's ledger shares in domains (Progress; nil when
// none exists), read twice: consistent is true when both reads agree.
// The counts only grow, so when each share reads the same twice it held
// that value over the whole time between its two reads; every first read
// precedes every second, so at the instant between the passes every
// share held what was read: the sum is that instant's, though the shares
// are on different masters. A caller that must not act on a sum torn
// between instants (a completion) acts only when consistent, and reads
// again later otherwise.
func ReadSum(ctx context.Context, rdb redis.Cmdable, c Crawl, domains []string) (p *Progress, consistent bool, err error) {
	first, err := readShares(ctx, rdb, c, domains)
	if err != nil {
		return nil, false, err
	}
	second, err := readShares(ctx, rdb, c, domains)
	if err != nil {
		return nil, false, err
	}
	consistent = slices.EqualFunc(first, second, maps.Equal)
	return parseProgress(sumShares(second)), consistent, nil
}

// readShares reads c's shares in domains in one pipeline (a cluster
// client sends each master its part).
func readShares(ctx context.Context, rdb redis.Cmdable, c Crawl, domains []string) ([]map[string]string, error) {
	pipe := rdb.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(domains))
	for i, d := range domains {
		cmds[i] = pipe.HGetAll(ctx, c.LedgerIn(rediskeys.Cluster, d).Hash)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("read crawl %s's ledger shares: %w", c.CrawlID, err)
	}
	out := make([]map[string]string, len(cmds))
	for i, cmd := range cmds {
		out[i] = cmd.Val()
	}
	return out, nil
}

// sumShares is the one ledger hash the shares add up to: counts summed,
// started the earliest, last_activity and completed the latest, ended_by
// any share's (a stop or an expire writes every share), the false drops
// estimate summed as a float; a claim in progress (completing) is no
// share's business in cluster mode and is left out.
func sumShares(shares []map[string]string) map[string]string {
	out := map[string]string{}
	floats := map[string]float64{}
	ints := map[string]int64{}
	for _, h := range shares {
		for f, v := range h {
			switch f {
			case FieldStarted:
				t, _ := strconv.ParseFloat(v, 64)
				if cur, ok := floats[f]; !ok || t < cur {
					floats[f] = t
				}
			case FieldLastActivity, FieldCompleted:
				t, _ := strconv.ParseFloat(v, 64)
				floats[f] = max(floats[f], t)
			case FieldFalseDropsEstimate:
				t, _ := strconv.ParseFloat(v, 64)
				floats[f] += t
			case FieldEndedBy:
				out[f] = v
			case FieldCompleting:
			case FieldRun:
				n, _ := strconv.ParseInt(v, 10, 64)
				ints[f] = max(ints[f], n)
			default:
				n, _ := strconv.ParseInt(v, 10, 64)
				ints[f] += n
			}
		}
	}
	for f, t := range floats {
		out[f] = strconv.FormatFloat(t, 'f', -1, 64)
	}
	for f, n := range ints {
		out[f] = strconv.FormatInt(n, 10)
	}
	return out
}

// A ClusterCompleter is the Completer of Redis Cluster mode: it finds
// finished crawls by their summed shares and hands each to exactly one of
// the completers running it, across every shard, through the crawl's
// completion marker (ledger_mark.lua, rediskeys.Layout.Completed): Claim,
// publish each crawl-complete, Finish each. A claim lasts ClaimTTL; one
// whose completer died is taken over after that. A crawl completes once
// in cluster mode: work that arrives after its crawl-complete is counted
// but announces no second one (the marker lives LEDGER_TTL).
type ClusterCompleter struct {
	rdb   *redis.ClusterClient
	owner string
	ttl   time.Duration
	// ClaimTTL is how long a claim keeps other completers off (default 30 s).
	ClaimTTL time.Duration
	// Quiet is LEDGER_COMPLETE_QUIET, as Completer's.
	Quiet time.Duration
	now   func() time.Time
}

// NewClusterCompleter returns a completer for the monitor owner (a unique
// id); markers and completed shares live ttl (LEDGER_TTL).
func NewClusterCompleter(rdb *redis.ClusterClient, owner string, ttl time.Duration) *ClusterCompleter {
	return &ClusterCompleter{rdb: rdb, owner: owner, ttl: ttl, ClaimTTL: 30 * time.Second, now: time.Now}
}

// Claim claims the finished crawls: every active crawl whose shares sum,
// consistently (ReadSum) and over the same domains before and after the
// read, to nothing outstanding, with no new work for Quiet unless a stop
// or an expire ended it, and whose marker it takes (ledger_mark.lua). A
// crawl whose marker says done leaves its domains' active sets.
func (c *ClusterCompleter) Claim(ctx context.Context) ([]Finished, error) {
	before, err := ActiveShares(ctx, c.rdb)
	if err != nil || len(before) == 0 {
		return nil, err
	}
	now := c.now()
	type candidate struct {
		crawl    Crawl
		progress *Progress
		domains  []string
	}
	var found []candidate
	for _, cr := range slices.SortedFunc(maps.Keys(before), compareCrawls) {
		domains := before.Domains(cr)
		p, consistent, err := ReadSum(ctx, c.rdb, cr, domains)
		if err != nil {
			return nil, err
		}
		if !consistent || p == nil || p.Outstanding() != 0 {
			continue
		}
		if p.EndedBy == "" && before.LastWork(cr) > epoch(now.Add(-c.Quiet)) {
			continue
		}
		found = append(found, candidate{cr, p, domains})
	}
	if len(found) == 0 {
		return nil, nil
	}
	after, err := ActiveShares(ctx, c.rdb)
	if err != nil {
		return nil, err
	}
	claim := c.owner + "|" + strconv.FormatFloat(epoch(now.Add(c.ClaimTTL)), 'f', 3, 64)
	var out []Finished
	for _, f := range found {
		if !slices.Equal(after.Domains(f.crawl), f.domains) { // a new domain meanwhile: read again later
			continue
		}
		res, err := redisscripts.Run(ctx, c.rdb, c.mark(f.crawl, claim, false, now)).Int()
		if err != nil {
			return nil, fmt.Errorf("claim the completion of crawl %s: %w", f.crawl.CrawlID, err)
		}
		switch res {
		case 1:
			f.progress.State = StateComplete
			out = append(out, Finished{Crawl: f.crawl, Progress: f.progress, claim: claim, domains: f.domains})
		case 2:
			if err := c.deactivate(ctx, f.crawl, f.domains, f.progress.run, now, false); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// Finish marks a claimed crawl done once its crawl-complete is out: the
// marker says done, its shares say completed, and it leaves its domains'
// active sets. It fails when the claim was taken over meanwhile.
func (c *ClusterCompleter) Finish(ctx context.Context, f Finished) error {
	now := c.now()
	n, err := redisscripts.Run(ctx, c.rdb, c.mark(f.Crawl, f.claim, true, now)).Int()
	if err != nil {
		return fmt.Errorf("complete crawl %s: %w", f.Crawl.CrawlID, err)
	}
	if n == 0 {
		return fmt.Errorf("complete crawl %s: its claim was taken over by another completer", f.Crawl.CrawlID)
	}
	return c.deactivate(ctx, f.Crawl, f.domains, f.Progress.run, now, true)
}

func (c *ClusterCompleter) mark(cr Crawl, claim string, done bool, now time.Time) redisscripts.Mark {
	return redisscripts.Mark{Marker: rediskeys.Cluster.Completed(cr.SpiderID, cr.AppID, cr.CrawlID), Done: done,
		Claim: claim, Now: Stamp(now), TTL: c.ttl}
}

// deactivate takes cr out of its domains' active sets (and with completed
// stamps its shares completed), one pipeline over the masters
// (ledger_deactivate.lua per domain, sent whole: it never fails with
// NOSCRIPT on a node that has not run it). run is the run that completed, as
// its shares said when they were read: a share of a later run (a
// re-crawl's next run started in the domain since) is left alone however
// late this lands.
func (c *ClusterCompleter) deactivate(ctx context.Context, cr Crawl, domains []string, run int64, now time.Time, completed bool) error {
	stamp := ""
	if completed {
		stamp = Stamp(now)
	}
	pipe := c.rdb.Pipeline()
	for _, d := range domains {
		l := cr.LedgerIn(rediskeys.Cluster, d)
		redisscripts.Eval(ctx, pipe, redisscripts.Deactivate{Share: l.Hash, Active: l.Active, Member: l.Member,
			Run: run, Completed: stamp, TTL: c.ttl})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("complete crawl %s: %w", cr.CrawlID, err)
	}
	return nil
}

func compareCrawls(a, b Crawl) int {
	return strings.Compare(a.SpiderID+"\x00"+a.AppID+"\x00"+a.CrawlID, b.SpiderID+"\x00"+b.AppID+"\x00"+b.CrawlID)
}
