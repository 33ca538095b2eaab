// Package domainqueues reads and purges a spider's domain queues
// (<spiderid>:<domain>:queue sorted sets of JSON requests scored by
// -priority) and render queues (<spiderid>:<domain>:renderqueue, the same
// for requests to be rendered) by crawl: for the Redis Monitor's info,
// stop and expire plugins and the REST service's /crawls and console.
//
// A queue member is either the crawl request as fed (appid, crawlid,
// priority, expires at top level) or a serialized request carrying them
// under "meta"; both are read (the contract is scutils/crawlrequest; Parse
// is a faster reader of the few fields needed here). Members that are not
// JSON objects or lack an appid or crawlid belong to no crawl: they are
// counted in Scan's Skipped and never purged.
//
// Parse reads a member beside crawlrequest.Decode because it pays where
// the Redis Monitor answers over whole queues: BenchmarkInfo100k (go test
// -run '^$' -bench Info100k -benchtime 5x ./redis-monitor/monitor/, 5 runs
// interleaved) answered an info request over 100,000 queued requests in a
// median 540 ms with Parse and 1,340 ms with Decode in its place (the
// target is 1 s); BenchmarkParse and BenchmarkParseWithTheSharedCodec put
// one member at 1.9 µs and 10.9 µs. The tests hold Parse to Decode on the
// shared fixtures and by fuzzing (FuzzParse).
package domainqueues

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisconn"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// Entry is the part of a queued request the monitor needs.
type Entry struct {
	// Member is the raw sorted-set member (the JSON request).
	Member   string
	AppID    string
	CrawlID  string
	Priority json.Number // as queued (an integer in valid requests)
	Expires  json.Number // "" when absent
}

// Queue is one domain queue's parsed entries.
type Queue struct {
	Key    string
	Domain string
	// Render is set for a render queue (<spiderid>:<domain>:renderqueue):
	// its requests wait for a rendering crawler.
	Render  bool
	Entries []Entry
	Skipped int // members without appid and crawlid
}

// batch is how many queues are read per round trip.
const batch = 100

// Scan calls fn for every domain queue and render queue of spiderID,
// reading the queues' members in pipelined batches (one round trip per
// SCAN page of up to 1000 keys and per 100 queues). Keys that are not
// sorted sets are ignored. It stops at fn's first error and returns it.
// It is ScanIn with the one-Redis layout (the original's keys).
func Scan(ctx context.Context, rdb redis.Cmdable, spiderID string, fn func(Queue) error) error {
	return ScanIn(ctx, rdb, rediskeys.Single, spiderID, fn)
}

// ScanIn is Scan over the queues of the key layout l: in Cluster, the
// spider's cluster queues and render queues found on every master of rdb
// (a *redis.ClusterClient), read in pipelines (one per master).
func ScanIn(ctx context.Context, rdb redis.Cmdable, l rediskeys.Layout, spiderID string, fn func(Queue) error) error {
	return scanKeys(ctx, rdb, l, spiderID, func(keys []string) error {
		for lo := 0; lo < len(keys); lo += batch {
			if err := readBatch(ctx, rdb, l, spiderID, keys[lo:min(lo+batch, len(keys))], fn); err != nil {
				return err
			}
		}
		return nil
	})
}

// Keys are the keys of spiderID's domain queues and render queues, sorted.
func Keys(ctx context.Context, rdb redis.Cmdable, spiderID string) ([]string, error) {
	return KeysIn(ctx, rdb, rediskeys.Single, spiderID)
}

// KeysIn is Keys in the key layout l (in Cluster, found on every master).
func KeysIn(ctx context.Context, rdb redis.Cmdable, l rediskeys.Layout, spiderID string) ([]string, error) {
	var out []string
	err := scanKeys(ctx, rdb, l, spiderID, func(keys []string) error {
		for _, k := range keys {
			if spider, _, _, ok := l.ParseAnyQueue(k); ok && spider == spiderID {
				out = append(out, k)
			}
		}
		return nil
	})
	slices.Sort(out)
	return slices.Compact(out), err // SCAN may return a key twice
}

// scanKeys calls fn with each SCAN page of the keys matching spiderID's
// queue pattern and then its render queue pattern in l (which may hold
// keys that are not queues: check each with l.ParseAnyQueue). In Cluster
// it scans every master and calls fn once with all the keys found.
func scanKeys(ctx context.Context, rdb redis.Cmdable, l rediskeys.Layout, spiderID string, fn func([]string) error) error {
	patterns := []string{l.QueuePattern(spiderID), l.RenderQueuePattern(spiderID)}
	if cc, ok := rdb.(*redis.ClusterClient); ok && l.IsCluster() {
		var all []string
		for _, pattern := range patterns {
			keys, err := redisconn.MasterKeys(ctx, cc, pattern)
			if err != nil {
				return fmt.Errorf("find the %s queues: %w", spiderID, err)
			}
			all = append(all, keys...)
		}
		return fn(all)
	}
	for _, pattern := range patterns {
		var cursor uint64
		for {
			keys, next, err := rdb.Scan(ctx, cursor, pattern, 1000).Result()
			if err != nil {
				return fmt.Errorf("find the %s queues: %w", spiderID, err)
			}
			if err := fn(keys); err != nil {
				return err
			}
			if next == 0 {
				break
			}
			cursor = next
		}
	}
	return nil
}

func readBatch(ctx context.Context, rdb redis.Cmdable, l rediskeys.Layout, spiderID string, keys []string, fn func(Queue) error) error {
	pipe := rdb.Pipeline()
	cmds := make([]*redis.StringSliceCmd, len(keys))
	for i, k := range keys {
		cmds[i] = pipe.ZRange(ctx, k, 0, -1)
	}
	_, _ = pipe.Exec(ctx) // per-command errors are read below
	for i, cmd := range cmds {
		members, err := cmd.Result()
		if err != nil {
			if isWrongType(err) {
				continue
			}
			return err
		}
		spider, domain, render, ok := l.ParseAnyQueue(keys[i])
		if !ok || spider != spiderID {
			continue // matched the pattern, but not a queue of spiderID
		}
		q := Queue{Key: keys[i], Domain: domain, Render: render, Entries: make([]Entry, 0, len(members))}
		for _, m := range members {
			if e, ok := Parse(m); ok {
				q.Entries = append(q.Entries, e)
			} else {
				q.Skipped++
			}
		}
		if err := fn(q); err != nil {
			return err
		}
	}
	return nil
}

func isWrongType(err error) bool { return err != nil && strings.HasPrefix(err.Error(), "WRONGTYPE") }

// Purge removes every queued request of appID/crawlID from spiderID's
// domain queues and render queues and returns how many it removed; the crawl's ledger (if it
// has one) counts them as purged by p in the same step as each removal
// (ledger.PurgeQueued). Like the original it makes up to three passes, to
// catch requests a crawler queued during a pass (later passes run only
// while the previous one removed something).
func Purge(ctx context.Context, rdb redis.Cmdable, spiderID, appID, crawlID string, p ledger.Purge, now time.Time) (int, error) {
	return PurgeIn(ctx, rdb, rediskeys.Single, spiderID, appID, crawlID, p, now)
}

// PurgeIn is Purge in the key layout l: in Cluster over the queues of every
// master, each removal counted in the crawl's ledger share of the queue's
// domain (ledger.Crawl.LedgerIn), in the queue's slot.
func PurgeIn(ctx context.Context, rdb redis.Cmdable, l rediskeys.Layout, spiderID, appID, crawlID string, p ledger.Purge, now time.Time) (int, error) {
	crawl := ledger.Crawl{SpiderID: spiderID, AppID: appID, CrawlID: crawlID}
	total := 0
	for range 3 {
		n, err := purgeOnce(ctx, rdb, l, crawl, p, now)
		total += n
		if err != nil || n == 0 {
			return total, err
		}
	}
	return total, nil
}

// purgeGroup is one queue's members to remove.
type purgeGroup struct {
	queue, domain string
	members       []string
}

func purgeOnce(ctx context.Context, rdb redis.Cmdable, l rediskeys.Layout, crawl ledger.Crawl, p ledger.Purge, now time.Time) (int, error) {
	var groups []purgeGroup
	flush := func() (int, error) {
		if len(groups) == 0 {
			return 0, nil
		}
		n, err := purgeGroups(ctx, rdb, l, crawl, p, now, groups)
		if ledger.IsNoScript(err) { // Redis restarted without its scripts
			if err := ledger.LoadScripts(ctx, rdb); err != nil {
				return n, err
			}
			// What the first attempt removed is gone: removing it again counts nothing.
			var again int
			again, err = purgeGroups(ctx, rdb, l, crawl, p, now, groups)
			n += again
		}
		groups = groups[:0]
		if err != nil {
			return n, fmt.Errorf("purge crawl %s of app %s from the %s queues: %w", crawl.CrawlID, crawl.AppID, crawl.SpiderID, err)
		}
		return n, nil
	}
	total := 0
	err := ScanIn(ctx, rdb, l, crawl.SpiderID, func(q Queue) error {
		var members []string
		for _, e := range q.Entries {
			if e.AppID == crawl.AppID && e.CrawlID == crawl.CrawlID {
				members = append(members, e.Member)
			}
		}
		if len(members) == 0 {
			return nil
		}
		groups = append(groups, purgeGroup{queue: q.Key, domain: q.Domain, members: members})
		if len(groups) >= batch {
			n, err := flush()
			total += n
			return err
		}
		return nil
	})
	n, ferr := flush()
	total += n
	if err == nil {
		err = ferr
	}
	return total, err
}

// purgeGroups removes groups in one round trip and returns how many
// members went.
func purgeGroups(ctx context.Context, rdb redis.Cmdable, l rediskeys.Layout, crawl ledger.Crawl, p ledger.Purge, now time.Time, groups []purgeGroup) (int, error) {
	pipe := rdb.Pipeline()
	var cmds []*redis.Cmd
	for _, g := range groups {
		cmds = append(cmds, ledger.PurgeQueuedIn(ctx, pipe, g.queue, crawl.LedgerIn(l, g.domain), p, g.members, now)...)
	}
	_, err := pipe.Exec(ctx)
	n := 0
	for _, c := range cmds {
		if v, cerr := c.Int(); cerr == nil {
			n += v
		}
	}
	return n, err
}
