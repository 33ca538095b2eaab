package ledger

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisconn"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisscripts"
)

// What the Redis Monitor reads and writes of a crawl's ledger in Redis
// Cluster mode, where the crawl's counts are split into per-domain shares:
// its shares found on every master (ClusterShares), its progress summed
// over them (ReadCluster), and a stop or an expire ending it
// (EndCluster, ReleaseCluster) with its purge counted in each domain's
// share (PurgeQueuedIn).

// ClusterShares finds, on every master, the ledger shares of spiderID's
// crawls of appID (of crawlID alone unless it is ""): each crawl with the
// domains it has a share in, sorted. A share counts whatever the crawl did
// in its domain, refusals too, so the shares found are all of them, not
// only those with work queued.
func ClusterShares(ctx context.Context, rdb *redis.ClusterClient, spiderID, appID, crawlID string) (map[Crawl][]string, error) {
	l := rediskeys.Cluster
	keys, err := redisconn.MasterKeys(ctx, rdb, l.LedgerSharesPattern(spiderID, appID))
	if err != nil {
		return nil, fmt.Errorf("find the ledger shares of app %s: %w", appID, err)
	}
	out := map[Crawl][]string{}
	for _, k := range keys {
		d, c, ok := l.ParseLedgerShares(k, spiderID, appID)
		if ok && (crawlID == "" || c == crawlID) {
			cr := Crawl{SpiderID: spiderID, AppID: appID, CrawlID: c}
			out[cr] = append(out[cr], d)
		}
	}
	for _, ds := range out {
		slices.Sort(ds)
	}
	return out, nil
}

// ReadClusterCrawls is ReadCluster of the shares ClusterShares finds: the
// progress of spiderID's crawls of appID (of crawlID alone unless it is
// ""), each summed over its shares on every master.
func ReadClusterCrawls(ctx context.Context, rdb *redis.ClusterClient, spiderID, appID, crawlID string) (map[Crawl]*Progress, error) {
	shares, err := ClusterShares(ctx, rdb, spiderID, appID, crawlID)
	if err != nil {
		return nil, err
	}
	return ReadCluster(ctx, rdb, shares)
}

// ReadCluster is the progress of each crawl of shares (ClusterShares: its
// domains), the sum of its shares; nil for a crawl none of whose shares
// exists any more. Each domain's share is read with the domain's leases
// (the requests in flight), all in one pipeline (each master its part), not
// at one instant: a running crawl's sum may be a moment apart between
// masters (ClusterCompleter reads twice where that matters), and a request
// popped between a share's read and its leases' counts as queued. Queued
// and InFlight add up to what the counts leave outstanding.
func ReadCluster(ctx context.Context, rdb redis.Cmdable, shares map[Crawl][]string) (map[Crawl]*Progress, error) {
	l := rediskeys.Cluster
	pipe := rdb.Pipeline()
	hashes := map[Crawl][]*redis.MapStringStringCmd{}
	leases := map[string]*redis.StringSliceCmd{} // by lease set
	for c, domains := range shares {
		for _, d := range domains {
			hashes[c] = append(hashes[c], pipe.HGetAll(ctx, l.LedgerCounts(c.SpiderID, c.AppID, c.CrawlID, d)))
			if items := l.Leases(c.SpiderID, d) + ":items"; leases[items] == nil {
				leases[items] = pipe.HVals(ctx, items)
			}
		}
	}
	if len(leases) == 0 {
		return map[Crawl]*Progress{}, nil
	}
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return nil, fmt.Errorf("read crawl ledger shares: %w", err)
	}
	out := make(map[Crawl]*Progress, len(shares))
	for c, domains := range shares {
		var hs []map[string]string
		inFlight := int64(0)
		for i, d := range domains {
			h := hashes[c][i].Val()
			share := parseProgress(h)
			if share == nil {
				continue
			}
			hs = append(hs, h)
			leased := int64(0)
			for _, v := range leases[l.Leases(c.SpiderID, d)+":items"].Val() {
				if appID, crawlID, ok := leasedCrawl(v); ok && appID == c.AppID && crawlID == c.CrawlID {
					leased++
				}
			}
			inFlight += min(leased, share.Queued)
		}
		p := parseProgress(sumShares(hs))
		if p == nil {
			continue
		}
		p.InFlight = min(inFlight, p.Queued)
		p.Queued -= p.InFlight
		out[c] = p
	}
	return out, nil
}

// PurgeQueuedIn is PurgeQueued counting the purge in the ledger l
// (Crawl.LedgerIn: in Cluster the crawl's share of the queue's domain, in
// the queue's slot).
func PurgeQueuedIn(ctx context.Context, pipe redis.Pipeliner, queue string, l redisscripts.Ledger, p Purge, members []string, now time.Time) []*redis.Cmd {
	var cmds []*redis.Cmd
	for len(members) > 0 {
		chunk := members[:min(len(members), maxPurgeMembers)]
		members = members[len(chunk):]
		cmds = append(cmds, redisscripts.Run(ctx, pipe, redisscripts.Purge{Queue: queue, Ledger: l,
			Field: PrefixPurged + string(p), Stamp: Stamp(now), Members: chunk}))
	}
	return cmds
}

// EndCluster is EndedBy in Cluster mode: it holds completers off c on its
// completion marker (ledger_hold.lua: one key, so one master decides
// between the action and the completers) until ReleaseCluster(holder) or
// until, then records in every share of c that p ended it (ledger_end.lua
// on each share: ended_by alone, the marker being the only hold), so that
// its crawl-complete says "stopped" or "expired". It reports false, recording nothing, for a crawl whose
// crawl-complete is out or being published right now (it finished before
// the action came), or that has no ledger.
func EndCluster(ctx context.Context, rdb *redis.ClusterClient, c Crawl, p Purge, holder string, now, until time.Time) (bool, error) {
	shares, err := ClusterShares(ctx, rdb, c.SpiderID, c.AppID, c.CrawlID)
	if err != nil || len(shares[c]) == 0 {
		return false, err
	}
	marker := rediskeys.Cluster.Completed(c.SpiderID, c.AppID, c.CrawlID)
	held, err := redisscripts.Eval(ctx, rdb, redisscripts.Hold{Marker: marker, Holder: holder, Now: Stamp(now), Until: Stamp(until),
		TTL: until.Sub(now) + time.Minute}).Int()
	if err != nil {
		return false, fmt.Errorf("hold the completion of crawl %s: %w", c.CrawlID, err)
	}
	if held == 0 {
		return false, nil
	}
	pipe := rdb.Pipeline()
	for _, d := range shares[c] {
		redisscripts.Eval(ctx, pipe, redisscripts.End{Ledger: c.LedgerIn(rediskeys.Cluster, d), By: string(p), Holder: holder,
			Now: Stamp(now), Until: Stamp(until), Unheld: true})
	}
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return false, fmt.Errorf("record the end of crawl %s in its shares: %w", c.CrawlID, err)
	}
	return true, nil
}

// ReleaseCluster is Release in Cluster mode: it ends holder's hold on c's
// completion marker (EndCluster), so a completer may claim c.
func ReleaseCluster(ctx context.Context, rdb redis.Cmdable, c Crawl, holder string) error {
	marker := rediskeys.Cluster.Completed(c.SpiderID, c.AppID, c.CrawlID)
	if err := redisscripts.Eval(ctx, rdb, redisscripts.Hold{Marker: marker, Release: true, Holder: holder}).Err(); err != nil {
		return fmt.Errorf("release the end of crawl %s: %w", c.CrawlID, err)
	}
	return nil
}
