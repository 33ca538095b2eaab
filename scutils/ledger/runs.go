package ledger

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisconn"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// RunEntry is one run of a scheduled crawl with its own counts, as GET
// /crawls/<crawlid> lists them under "runs". Started and Completed are
// epoch seconds (Completed nil, null, while the run goes on).
type RunEntry struct {
	Run       int64     `json:"run"`
	Started   float64   `json:"started"`
	Completed *float64  `json:"completed"`
	Progress  *Progress `json:"progress"`
}

// Runs lists the runs of a scheduled crawl, oldest first: the past runs'
// ledgers, which recrawl_start.lua keeps in
// ledger:<spiderid>:<appid>:<crawlid>:runs when the next run starts (a
// run's fields sorted, one line each for a field's name and value), and
// current, the crawl's ledger as Read gives it. A crawl without a
// schedule has none.
func Runs(ctx context.Context, rdb redis.Cmdable, c Crawl, current *Progress) ([]RunEntry, error) {
	past, err := rdb.HGetAll(ctx, rediskeys.LedgerRunsKey(c.SpiderID, c.AppID, c.CrawlID)).Result()
	if err != nil {
		return nil, fmt.Errorf("read the runs of crawl %s: %w", c.CrawlID, err)
	}
	return pastRuns([]map[string]string{past}, current), nil
}

// RunsCluster is Runs on a Redis Cluster, where each domain of the crawl
// keeps its shares of the past runs (recrawl_cluster_domain.lua,
// rediskeys.Layout.LedgerRuns, found on every master): a past run's
// ledger is the sum of its shares, as ReadCluster sums the live one.
func RunsCluster(ctx context.Context, rdb *redis.ClusterClient, c Crawl, current *Progress) ([]RunEntry, error) {
	keys, err := redisconn.MasterKeys(ctx, rdb, rediskeys.Cluster.LedgerRunsPattern(c.SpiderID, c.AppID, c.CrawlID))
	if err != nil {
		return nil, fmt.Errorf("find the runs of crawl %s: %w", c.CrawlID, err)
	}
	pipe := rdb.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(keys))
	for i, k := range keys {
		cmds[i] = pipe.HGetAll(ctx, k)
	}
	if len(keys) > 0 {
		if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
			return nil, fmt.Errorf("read the runs of crawl %s: %w", c.CrawlID, err)
		}
	}
	hashes := make([]map[string]string, len(cmds))
	for i, cmd := range cmds {
		hashes[i] = cmd.Val()
	}
	return pastRuns(hashes, current), nil
}

// pastRuns are the runs of the runs hashes (each run's entries summed
// over the hashes) and current's, oldest first.
func pastRuns(hashes []map[string]string, current *Progress) []RunEntry {
	byRun := map[int64][]map[string]string{}
	for _, past := range hashes {
		for n, text := range past {
			run, err := strconv.ParseInt(n, 10, 64)
			if err != nil {
				continue
			}
			lines := strings.Split(text, "\n")
			h := make(map[string]string, len(lines)/2)
			for i := 0; i+1 < len(lines); i += 2 {
				h[lines[i]] = lines[i+1]
			}
			byRun[run] = append(byRun[run], h)
		}
	}
	var out []RunEntry
	for run, hs := range byRun {
		h := hs[0] // one Redis: the run's ledger as it was
		if len(hs) > 1 {
			h = sumShares(hs)
		}
		p := parseProgress(h)
		if p == nil {
			continue
		}
		p.run = run
		out = append(out, runEntry(p))
	}
	if current != nil && current.run > 0 {
		out = append(out, runEntry(current))
	}
	slices.SortFunc(out, func(a, b RunEntry) int { return int(a.Run - b.Run) })
	return out
}

func runEntry(p *Progress) RunEntry {
	e := RunEntry{Run: p.run, Started: p.Started, Progress: p}
	if p.completed {
		at := p.completedAt
		e.Completed = &at
	}
	return e
}
