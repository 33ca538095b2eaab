package stats

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// Reader reads what the cluster's components write, as the Redis Monitor's
// stats answers and log dumps report it: the counters of the Kafka Monitor,
// Redis Monitor and REST service, the crawlers' heartbeats and response-code
// counters, and the domain queues' backlog.
//
// Differences from the original, which read with KEYS and one command per
// key: keys are found with SCAN and their counts read in one pipelined round
// trip per SCAN page; windowed counters count only the hits inside their
// window (ZCOUNT), so a counter whose writer died, and so stopped trimming
// it, no longer reports stale hits; and keys of an unexpected type or that
// vanish while being read are left out instead of failing the read.
type Reader struct {
	Redis redis.Cmdable
	// Now is the instant the windows are counted back from.
	Now time.Time
	// Layout is the key layout of the domain queues (redisconn.KeyLayout).
	// With a *redis.ClusterClient as Redis, every master is scanned.
	Layout rediskeys.Layout
}

// Counts is one counter's count per window, by the last part of its keys:
// "900", "3600", ... and "lifetime".
type Counts map[string]int64

// PluginComponents are the components whose stats are plugin style:
// stats:<component>:total|fail|<plugin>:<window> and heartbeats.
func PluginComponents() []string { return []string{"kafka-monitor", "redis-monitor", "rest"} }

// ComponentStats is what the Kafka Monitor, the Redis Monitor or the REST
// service has written: stats:<component>:total:<window>, ...:fail:<window>,
// ...:<plugin>:<window> and the heartbeats ...:self:<host>:<id>.
type ComponentStats struct {
	Total, Fail Counts
	// Plugins are the per-plugin counters, by the plugin's stats name.
	Plugins map[string]Counts
	// Nodes are the heartbeats' ids by host, sorted.
	Nodes map[string][]string
}

// Section is the spec's shape of the stats: {"total", "fail", "plugins",
// "nodes"}, leaving out the parts without keys, as the original does (no
// "fail" when nothing failed).
func (c *ComponentStats) Section() map[string]any {
	out := map[string]any{}
	if len(c.Total) > 0 {
		out["total"] = c.Total
	}
	if len(c.Fail) > 0 {
		out["fail"] = c.Fail
	}
	if len(c.Plugins) > 0 {
		out["plugins"] = c.Plugins
	}
	if len(c.Nodes) > 0 {
		out["nodes"] = c.Nodes
	}
	return out
}

// CrawlerStats is what the crawlers have written: their heartbeats,
// stats:crawler:<host>:<spiderid>:<id>, and response-code counters,
// stats:crawler:<host>:<spiderid>:<code>:<window>.
type CrawlerStats struct {
	// Spiders are the spider types seen, by spiderid.
	Spiders map[string]*SpiderStats
	// Machines are the response-code counts of each host (summed over its
	// spiders), by host and code. As in the original, a host counts once
	// it has response-code counters.
	Machines map[string]map[string]Counts
	// Running is the number of heartbeats: crawlers running.
	Running int
}

// SpiderStats is one spider type's crawlers.
type SpiderStats struct {
	// Running is the number of its crawlers' heartbeats.
	Running int
	// Hosts is the number of its crawlers' heartbeats by host.
	Hosts map[string]int
	// Codes are its response-code counts by code, summed over its hosts
	// (the original kept whichever host's key it read last).
	Codes map[string]Counts
}

// UniqueSpiders is the number of spider types with a crawler running.
func (c *CrawlerStats) UniqueSpiders() int {
	n := 0
	for _, s := range c.Spiders {
		if s.Running > 0 {
			n++
		}
	}
	return n
}

// SpidersSection is the spec's "spiders" shape: {"unique_spider_count",
// "total_spider_count", "<spiderid>": {"count": running, "<code>":
// {window: count}}}.
func (c *CrawlerStats) SpidersSection() map[string]any {
	out := map[string]any{}
	for name, s := range c.Spiders {
		entry := map[string]any{"count": s.Running}
		for code, w := range s.Codes {
			entry[code] = w
		}
		out[name] = entry
	}
	out["unique_spider_count"] = c.UniqueSpiders()
	out["total_spider_count"] = c.Running
	return out
}

// MachinesSection is the spec's "machines" shape: {"count": hosts,
// "<host>": {"<code>": {window: count}}}.
func (c *CrawlerStats) MachinesSection() map[string]any {
	out := map[string]any{"count": len(c.Machines)}
	for host, codes := range c.Machines {
		out[host] = codes
	}
	return out
}

// QueueStats is the backlog of every domain queue, <spiderid>:<domain>:queue,
// and render queue, <spiderid>:<domain>:renderqueue: a domain's backlog
// counts the requests of both, and the render backlogs say how many of
// them wait for a rendering crawler.
type QueueStats struct {
	// Spiders are the backlogs by spiderid.
	Spiders map[string]*SpiderQueue
	// TotalBacklog is the number of requests in every queue.
	TotalBacklog int64
	// RenderBacklog is how many of them are in render queues.
	RenderBacklog int64
	layout        rediskeys.Layout // of the queue keys counted
}

// SpiderQueue is one spider type's queues, in the spec's shape, plus
// render_backlog when its render queues hold requests.
type SpiderQueue struct {
	// Domains are the domains' backlogs, sorted by domain.
	Domains       []DomainBacklog `json:"domains"`
	SpiderBacklog int64           `json:"spider_backlog"`
	NumDomains    int             `json:"num_domains"`
	RenderBacklog int64           `json:"render_backlog,omitempty"`
	index         map[string]int  // domain -> its entry in Domains, while adding
}

// DomainBacklog is the number of requests in one domain's queue and
// render queue (RenderBacklog of them in the latter).
type DomainBacklog struct {
	Domain        string `json:"domain"`
	Backlog       int64  `json:"backlog"`
	RenderBacklog int64  `json:"render_backlog,omitempty"`
}

// Section is the spec's "queues" shape: {"queue_<spiderid>": {"domains",
// "spider_backlog", "num_domains"}, "total_backlog"}, with
// "total_render_backlog" beside when render queues hold requests.
func (q *QueueStats) Section() map[string]any {
	out := map[string]any{"total_backlog": q.TotalBacklog}
	if q.RenderBacklog > 0 {
		out["total_render_backlog"] = q.RenderBacklog
	}
	for spider, s := range q.Spiders {
		out["queue_"+spider] = s
	}
	return out
}

// ClusterStats is everything a Reader reads.
type ClusterStats struct {
	// Components are the plugin-style components' stats, by name (every
	// one of PluginComponents).
	Components map[string]*ComponentStats
	Crawlers   *CrawlerStats
	Queues     *QueueStats
}

// Component reads the stats of a plugin-style component ("kafka-monitor",
// "redis-monitor", "rest").
func (r Reader) Component(ctx context.Context, component string) (*ComponentStats, error) {
	c := newComponentStats()
	if err := r.scan(ctx, rediskeys.StatsKey(rediskeys.GlobEscape(component), "*"), c); err != nil {
		return nil, err
	}
	c.finish()
	return c, nil
}

// Crawlers reads the crawlers' heartbeats and response-code counters.
func (r Reader) Crawlers(ctx context.Context) (*CrawlerStats, error) {
	c := newCrawlerStats()
	for _, p := range r.crawlerPatterns(crawlerPattern) {
		if err := r.scan(ctx, p, c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Queues reads the backlog of every domain queue.
func (r Reader) Queues(ctx context.Context) (*QueueStats, error) {
	q := newQueueStats()
	if err := r.scanAll(ctx, r.queueJob(q)); err != nil {
		return nil, err
	}
	q.finish()
	return q, nil
}

// CrawlersAndQueues reads what Crawlers and Queues read, both at once.
func (r Reader) CrawlersAndQueues(ctx context.Context) (*CrawlerStats, *QueueStats, error) {
	c, q := newCrawlerStats(), newQueueStats()
	if err := r.scanAll(ctx, scanJob{r.crawlerPatterns(crawlerPattern), c}, r.queueJob(q)); err != nil {
		return nil, nil, err
	}
	q.finish()
	return c, q, nil
}

// Cluster reads every component's stats and the queues: one pass over the
// stats keys serves all components, while another reads the queues.
func (r Reader) Cluster(ctx context.Context) (*ClusterStats, error) {
	out := &ClusterStats{Components: map[string]*ComponentStats{}, Crawlers: newCrawlerStats(), Queues: newQueueStats()}
	route := byComponent{"crawler": out.Crawlers}
	for _, name := range PluginComponents() {
		out.Components[name] = newComponentStats()
		route[name] = out.Components[name]
	}
	if err := r.scanAll(ctx, scanJob{r.crawlerPatterns(allStatsPattern), route}, r.queueJob(out.Queues)); err != nil {
		return nil, err
	}
	for _, c := range out.Components {
		c.finish()
	}
	out.Queues.finish()
	return out, nil
}

// allStatsPattern finds every component's stats keys.
const allStatsPattern = "stats:*"

// crawlerPattern finds the crawlers' heartbeats,
// stats:crawler:<host>:<spiderid>:<id>, and response-code counters,
// stats:crawler:<host>:<spiderid>:<code>:<window>.
var crawlerPattern = rediskeys.StatsKey("crawler", "*")

// A collector builds stats from the keys a SCAN finds. Keys come split on ':'.
type collector interface {
	// take is called once per key found; it returns true when the key's
	// count is needed, which is then read and passed to add.
	take(parts []string) bool
	// add records the count of a key take asked for. Only counts above zero
	// arrive: a key that vanished reads 0, and a window without hits inside
	// it reads 0 where the original would find the key deleted (Redis drops
	// a sorted set its writer trimmed empty).
	add(parts []string, n int64)
}

// byComponent routes stats:<component>:... keys to their component's
// collector and ignores other components.
type byComponent map[string]collector

func (b byComponent) take(parts []string) bool {
	c, ok := b[parts[1]]
	return ok && c.take(parts)
}

func (b byComponent) add(parts []string, n int64) { b[parts[1]].add(parts, n) }

// scanJob feeds the keys of each of patterns, one SCAN after the other,
// to into.
type scanJob struct {
	patterns []string
	into     collector
}

// queuePatterns find the domain queues and the render queues
// (<spiderid>:<domain>:renderqueue, which the original has not): a
// domain's backlog is both.
var queuePatterns = []string{rediskeys.AllQueuesPattern, rediskeys.AllRenderQueuesPattern}

// queueJob is the scan of the domain queues of r's layout into q: in
// Cluster the cluster layout's queues and render queues of every spider.
func (r Reader) queueJob(q *QueueStats) scanJob {
	if !r.Layout.IsCluster() {
		return scanJob{queuePatterns, q}
	}
	q.layout = r.Layout
	return scanJob{r.Layout.AllQueuePatterns(), q}
}

// scanAll runs the scans concurrently (each on its own connection), so a
// read made of several scans takes as long as the longest.
func (r Reader) scanAll(ctx context.Context, jobs ...scanJob) error {
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Go(func() {
			for _, p := range j.patterns {
				if errs[i] = r.scan(ctx, p, j.into); errs[i] != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// scanCount is SCAN's COUNT: keys examined per page.
const scanCount = 1000

// scan finds the keys matching pattern and feeds them to c, reading the
// counts c asks for. Each round trip carries the reads for one page and the
// SCAN for the next. SCAN may return a key twice; it is counted once.
func (r Reader) scan(ctx context.Context, pattern string, c collector) error {
	if cc, ok := r.Redis.(*redis.ClusterClient); ok {
		return r.scanMasters(ctx, cc, pattern, c)
	}
	type read struct {
		key   string
		parts []string
		cmd   *redis.IntCmd
		hash  *redis.MapStringStringCmd // a BucketSet's hash: every window's count
	}
	var (
		cursor  uint64
		pending []read
		seen    = map[string]struct{}{}
		bounds  = map[int64]string{} // window -> ZCOUNT min, formatted once
		done    bool
	)
	for {
		pipe := r.Redis.Pipeline()
		for i := range pending {
			if pending[i].parts[len(pending[i].parts)-1] == everyWindow {
				pending[i].hash = pipe.HGetAll(ctx, pending[i].key)
				continue
			}
			pending[i].cmd = r.count(ctx, pipe, pending[i].key, pending[i].parts, bounds)
		}
		var scan *redis.ScanCmd
		if !done {
			scan = pipe.Scan(ctx, cursor, pattern, scanCount)
		}
		// Errors are per command: a wrong-typed key fails only its own read.
		_, _ = pipe.Exec(ctx)
		for _, p := range pending {
			if p.hash != nil {
				if err := r.addBuckets(p.key, p.parts, p.hash, c); err != nil {
					return err
				}
				continue
			}
			n, err := p.cmd.Result()
			if redis.HasErrorPrefix(err, "WRONGTYPE") {
				continue // not a counter of ours; leave it out
			}
			if err != nil {
				return fmt.Errorf("read %s: %w", p.key, err)
			}
			if n > 0 {
				c.add(p.parts, n)
			}
		}
		pending = pending[:0]
		if done {
			return nil
		}
		keys, next, err := scan.Result()
		if err != nil {
			return fmt.Errorf("scan %s: %w", pattern, err)
		}
		for _, k := range keys {
			if _, dup := seen[k]; dup {
				continue
			}
			seen[k] = struct{}{}
			if parts := keyParts(k); parts != nil && c.take(parts) {
				pending = append(pending, read{key: k, parts: parts})
			}
		}
		cursor, done = next, next == 0
		if done && len(pending) == 0 {
			return nil
		}
	}
}

// everyWindow is the window part keyParts gives a crawler's BucketSet hash:
// one key that holds every window's count.
const everyWindow = "*"

// keyParts is a key split on ':', but for a crawler host's response counts
// on a cluster (rediskeys.ParseCrawlerResponses), which a collector sees
// as the original's window keys, stats:crawler:<host>:<spiderid>:<code>,
// with the window everyWindow: one hash read (HGETALL) gives each window's
// count, each added as the original's key of that window would be.
// A key under the response counts' pattern that is not one of them has
// no parts (nil): it is left out.
func keyParts(key string) []string {
	if host, spider, code, ok := rediskeys.ParseCrawlerResponses(key); ok {
		return []string{"stats", "crawler", host, spider, code, everyWindow}
	}
	if rediskeys.IsClusterKey(key) && strings.Contains(key, "}:responses:") {
		return nil
	}
	return strings.Split(key, ":")
}

// addBuckets adds each window's count of a BucketSet's hash to c as the
// original's key of that window (parts with the window in place of
// everyWindow).
func (r Reader) addBuckets(key string, parts []string, hash *redis.MapStringStringCmd, c collector) error {
	fields, err := hash.Result()
	if redis.HasErrorPrefix(err, "WRONGTYPE") {
		return nil // not a counter of ours; leave it out
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", key, err)
	}
	for window, n := range CountBuckets(fields, r.Now) {
		one := slices.Clone(parts)
		one[len(one)-1] = window
		c.add(one, n)
	}
	return nil
}

// crawlerPatterns are the SCAN MATCH patterns of the crawlers' heartbeats
// and response counts: crawlerPattern, and when the crawlers count their
// responses in hashes (a cluster, or STATS_RESPONSE_BUCKETS) also those
// hashes (rediskeys.CrawlerResponsesPattern). The original's sorted sets
// are read either way, so counts kept before a switch stay in the answers
// until they leave their windows.
func (r Reader) crawlerPatterns(first string) []string {
	if r.Layout.ResponseBuckets() {
		return []string{first, rediskeys.CrawlerResponsesPattern}
	}
	return []string{first}
}

// scanMasters is scan on every master of a Redis Cluster, one after the
// other (c is not safe for concurrent use): a cluster's keys are spread
// over its masters, and one node's SCAN sees only its own.
func (r Reader) scanMasters(ctx context.Context, cc *redis.ClusterClient, pattern string, c collector) error {
	var mu sync.Mutex
	var masters []*redis.Client
	err := cc.ForEachMaster(ctx, func(_ context.Context, m *redis.Client) error {
		mu.Lock()
		masters = append(masters, m)
		mu.Unlock()
		return nil
	})
	if err != nil {
		return fmt.Errorf("scan %s: %w", pattern, err)
	}
	for _, m := range masters {
		one := r
		one.Redis = m
		if err := one.scan(ctx, pattern, c); err != nil {
			return fmt.Errorf("master %s: %w", m.Options().Addr, err)
		}
	}
	return nil
}

// count queues the read of one counter key, chosen by its last part:
// "lifetime" is a HyperLogLog (PFCOUNT); a number of seconds is a window,
// a sorted set of hits scored by epoch seconds, of which only those inside
// the window count (ZCOUNT, as the writers' own Value does), whether or not
// the writer has trimmed the older ones yet; anything else (a queue) is a
// sorted set counted whole (ZCARD).
func (r Reader) count(ctx context.Context, pipe redis.Pipeliner, key string, parts []string, bounds map[int64]string) *redis.IntCmd {
	suffix := parts[len(parts)-1]
	if suffix == "lifetime" {
		return pipe.PFCount(ctx, key)
	}
	window, err := strconv.ParseInt(suffix, 10, 64)
	if err != nil || window <= 0 {
		return pipe.ZCard(ctx, key)
	}
	minScore, ok := bounds[window]
	if !ok {
		since := float64(r.Now.UnixNano())/1e9 - float64(window)
		// Exclusive, as the writers trim hits scored <= now-window.
		minScore = "(" + strconv.FormatFloat(since, 'f', -1, 64)
		bounds[window] = minScore
	}
	return pipe.ZCount(ctx, key, minScore, "+inf")
}

func newComponentStats() *ComponentStats {
	return &ComponentStats{Total: Counts{}, Fail: Counts{}, Plugins: map[string]Counts{}, Nodes: map[string][]string{}}
}

func (c *ComponentStats) take(parts []string) bool {
	switch {
	case len(parts) == 5 && parts[2] == "self":
		c.Nodes[parts[3]] = append(c.Nodes[parts[3]], parts[4])
	case len(parts) == 4 && parts[2] != "self":
		return true
	}
	return false
}

func (c *ComponentStats) add(parts []string, n int64) {
	name, window := parts[2], parts[3]
	switch name {
	case "total":
		c.Total[window] = n
	case "fail":
		c.Fail[window] = n
	default:
		if c.Plugins[name] == nil {
			c.Plugins[name] = Counts{}
		}
		c.Plugins[name][window] = n
	}
}

// finish sorts the heartbeat ids once every key is in.
func (c *ComponentStats) finish() {
	for _, ids := range c.Nodes {
		slices.Sort(ids)
	}
}

func newCrawlerStats() *CrawlerStats {
	return &CrawlerStats{Spiders: map[string]*SpiderStats{}, Machines: map[string]map[string]Counts{}}
}

func (c *CrawlerStats) spider(name string) *SpiderStats {
	s := c.Spiders[name]
	if s == nil {
		s = &SpiderStats{Codes: map[string]Counts{}, Hosts: map[string]int{}}
		c.Spiders[name] = s
	}
	return s
}

func (c *CrawlerStats) take(parts []string) bool {
	switch len(parts) {
	case 5: // a running spider's heartbeat
		s := c.spider(parts[3])
		s.Running++
		s.Hosts[parts[2]]++
		c.Running++
	case 6:
		return true
	}
	return false
}

func (c *CrawlerStats) add(parts []string, n int64) {
	host, spider, code, window := parts[2], parts[3], parts[4], parts[5]
	s := c.spider(spider)
	if s.Codes[code] == nil {
		s.Codes[code] = Counts{}
	}
	s.Codes[code][window] += n

	m := c.Machines[host]
	if m == nil {
		m = map[string]Counts{}
		c.Machines[host] = m
	}
	if m[code] == nil {
		m[code] = Counts{}
	}
	m[code][window] += n
}

func newQueueStats() *QueueStats { return &QueueStats{Spiders: map[string]*SpiderQueue{}} }

// queueKeyParts is l.ParseAnyQueue of a key split on ':'.
func queueKeyParts(l rediskeys.Layout, parts []string) (spider, domain string, render, ok bool) {
	return l.ParseAnyQueue(strings.Join(parts, ":"))
}

func (q *QueueStats) take(parts []string) bool {
	_, _, _, ok := queueKeyParts(q.layout, parts)
	return ok
}

// add counts a domain queue's or render queue's backlog in its domain's.
func (q *QueueStats) add(parts []string, n int64) {
	spider, domain, render, _ := queueKeyParts(q.layout, parts)
	s := q.Spiders[spider]
	if s == nil {
		s = &SpiderQueue{index: map[string]int{}}
		q.Spiders[spider] = s
	}
	i, seen := s.index[domain]
	if !seen {
		i = len(s.Domains)
		s.index[domain] = i
		s.Domains = append(s.Domains, DomainBacklog{Domain: domain})
		s.NumDomains++
	}
	s.Domains[i].Backlog += n
	s.SpiderBacklog += n
	q.TotalBacklog += n
	if render {
		s.Domains[i].RenderBacklog += n
		s.RenderBacklog += n
		q.RenderBacklog += n
	}
}

// finish sorts each spider's domains by name once every key is in.
func (q *QueueStats) finish() {
	for _, s := range q.Spiders {
		s.index = nil
		slices.SortFunc(s.Domains, func(a, b DomainBacklog) int { return strings.Compare(a.Domain, b.Domain) })
	}
}
