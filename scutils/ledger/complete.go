package ledger

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisscripts"
)

// A Completer finds finished crawls and hands each to exactly one of the
// Redis Monitors running it: Claim a batch, publish each crawl-complete,
// Finish each. A claim lasts ClaimTTL; a monitor that dies holding one lets
// another claim the crawl after that (and publish it, possibly again).
type Completer struct {
	rdb   redis.Cmdable
	owner string
	ttl   time.Duration
	// ClaimTTL is how long a claim keeps other monitors off (default 30 s).
	ClaimTTL time.Duration
	// Batch is the most active crawls looked at per Claim (default 10,000).
	Batch int
	// Quiet is how long a crawl with nothing left must also have had no
	// new work before it counts as finished (LEDGER_COMPLETE_QUIET; zero:
	// at once). A crawl a stop or an expire ended is finished at once.
	Quiet time.Duration
	now   func() time.Time
}

// NewCompleter returns a completer for the monitor owner (a unique id);
// completed ledgers live ttl (LEDGER_TTL).
func NewCompleter(rdb redis.Cmdable, owner string, ttl time.Duration) *Completer {
	return &Completer{rdb: rdb, owner: owner, ttl: ttl, ClaimTTL: 30 * time.Second, Batch: 10000, now: time.Now}
}

// Finished is a claimed crawl with its final progress.
type Finished struct {
	Crawl    Crawl
	Progress *Progress
	claim    string
	domains  []string // in cluster mode, the crawl's shares (ClusterCompleter)
}

// Claim claims the finished crawls among the active ones
// (ledger_claim.lua): nothing outstanding, no new work (a seed or a
// follow-up queued) for Quiet unless a stop or an expire ended it, not
// completed yet, and no live claim by another monitor. A crawl without a ledger, or already
// completed, leaves the active set.
func (c *Completer) Claim(ctx context.Context) ([]Finished, error) {
	members, err := c.rdb.ZRange(ctx, rediskeys.LedgerActiveKey, 0, int64(c.Batch-1)).Result()
	if err != nil {
		return nil, fmt.Errorf("list active crawls: %w", err)
	}
	if len(members) == 0 {
		return nil, nil
	}
	crawls := make([]Crawl, 0, len(members))
	for _, m := range members {
		cr, err := ParseMember(m)
		if err != nil { // not ours: drop it from the set
			c.rdb.ZRem(ctx, rediskeys.LedgerActiveKey, m)
			continue
		}
		crawls = append(crawls, cr)
	}
	now := c.now()
	claim := c.owner + "|" + strconv.FormatFloat(epoch(now.Add(c.ClaimTTL)), 'f', 3, 64)
	cmds, err := c.claim(ctx, crawls, now, claim)
	if IsNoScript(err) { // Redis restarted and lost its scripts
		if err := LoadScripts(ctx, c.rdb); err != nil {
			return nil, err
		}
		cmds, err = c.claim(ctx, crawls, now, claim)
	}
	if err != nil {
		return nil, err
	}
	var out []Finished
	for i, cmd := range cmds {
		vals, err := cmd.StringSlice()
		if err != nil || len(vals) == 0 {
			continue
		}
		h := make(map[string]string, len(vals)/2)
		for j := 0; j+1 < len(vals); j += 2 {
			h[vals[j]] = vals[j+1]
		}
		p := parseProgress(h)
		p.State = StateComplete
		out = append(out, Finished{Crawl: crawls[i], Progress: p, claim: claim})
	}
	return out, nil
}

// claim runs the claim script for each crawl in one round trip.
func (c *Completer) claim(ctx context.Context, crawls []Crawl, now time.Time, claim string) ([]*redis.Cmd, error) {
	pipe := c.rdb.Pipeline()
	cmds := make([]*redis.Cmd, len(crawls))
	for i, cr := range crawls {
		cmds[i] = redisscripts.Run(ctx, pipe, redisscripts.Claim{Ledger: cr.Ledger(), Now: Stamp(now), Claim: claim,
			QuietSince: Stamp(now.Add(-c.Quiet))})
	}
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return nil, fmt.Errorf("claim finished crawls: %w", err)
	}
	for _, cmd := range cmds {
		if err := cmd.Err(); err != nil && err != redis.Nil {
			return nil, fmt.Errorf("claim finished crawls: %w", err)
		}
	}
	return cmds, nil
}

// Finish marks a claimed crawl completed once its crawl-complete is out
// (ledger_complete.lua): it leaves the active set, unless new work arrived
// meanwhile (then it stays active and completes again later).
func (c *Completer) Finish(ctx context.Context, f Finished) error {
	err := redisscripts.Run(ctx, c.rdb, redisscripts.Complete{Ledger: f.Crawl.Ledger(), Claim: f.claim, Stamp: Stamp(c.now()), TTL: c.ttl}).Err()
	if err != nil {
		return fmt.Errorf("complete crawl %s: %w", f.Crawl.CrawlID, err)
	}
	return nil
}

// Message is the crawl-complete message for f, published on the outbound
// topics: action, appid, crawlid, spiderid, reason ("finished", "stopped"
// or "expired"), progress and server_time (epoch seconds), and for a
// scheduled crawl the run that completed (run: 1, 2, ...).
func (f Finished) Message(now time.Time) map[string]any {
	m := map[string]any{
		"action": "crawl-complete", "appid": f.Crawl.AppID, "crawlid": f.Crawl.CrawlID, "spiderid": f.Crawl.SpiderID,
		"reason": f.Progress.Reason(), "progress": f.Progress, "server_time": now.Unix(),
	}
	if run := f.Progress.Run(); run > 0 {
		m["run"] = run
	}
	return m
}
