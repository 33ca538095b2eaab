// Package stats is the Redis Monitor's StatsMonitor plugin: it answers the
// Stats API's requests (statsrequest:<stats>:<appid>, value the request's
// uuid) by reading the cluster's stats keys and domain queues from Redis and
// publishing the answer to the outbound topics, in the spec's shapes:
//
//	kafka-monitor, redis-monitor, rest  {"total", "fail", "plugins", "nodes"}
//	spider                              {"spiders": {...}}
//	machine                             {"machines": {...}}
//	queue                               {"queues": {...}}
//	crawler                             {"spiders", "machines", "queue"}
//	all                                 {"kafka-monitor", "redis-monitor", "crawler", "rest"}
//
// plus "stats", "appid", "uuid" and "server_time" at the top level.
//
// Differences from the original, which read with KEYS and one command per
// key: keys are found with SCAN and their counts read in one pipelined round
// trip per SCAN page; windowed counters count only the hits inside their
// window (ZCOUNT), so a counter whose writer died, and so stopped trimming
// it, no longer reports stale hits; and keys of an unexpected type or that
// vanish while being read are left out instead of failing the answer.
package stats

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/redis-monitor/plugin"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

func init() {
	plugin.Register("plugins.stats_monitor.StatsMonitor", func() plugin.Plugin { return &Monitor{} })
}

// Monitor answers stats requests (the original's StatsMonitor).
type Monitor struct {
	plugin.Base
}

var _ plugin.Plugin = (*Monitor)(nil)

// Name is the plugin's stats name.
func (*Monitor) Name() string { return "StatsMonitor" }

// Pattern matches statsrequest:<stats>:<appid>.
func (*Monitor) Pattern() string { return "statsrequest:*:*" }

// Handle gathers the stats the key asks for and publishes the answer. An
// unknown stats type is logged and answered with nothing, as the original
// does; a Redis or Kafka failure is returned so the monitor retries the key.
func (m *Monitor) Handle(ctx context.Context, key, value string) error {
	// The appid is everything after the stats type, colons included (the
	// original keeps only the part up to the next colon).
	_, rest, _ := strings.Cut(key, ":")
	stats, appid, _ := strings.Cut(rest, ":")
	uuid := value

	m.Logger.Info(fmt.Sprintf("Received %s stats request", stats),
		logfactory.Extra{"action": "stats", "appid": appid, "uuid": uuid})

	r := reader{rdb: m.Redis, now: m.Now()}
	answer, err := r.answer(ctx, stats)
	if errors.Is(err, errUnknownStats) {
		m.Logger.Warn(fmt.Sprintf("Received invalid stats request: %s", stats),
			logfactory.Extra{"action": "stats", "appid": appid, "uuid": uuid})
		return nil
	}
	if err != nil {
		return fmt.Errorf("gather %s stats for %s: %w", stats, appid, err)
	}
	answer["stats"] = stats
	answer["appid"] = appid
	answer["uuid"] = uuid
	answer["server_time"] = m.ServerTime()

	if err := m.Publish(ctx, answer); err != nil {
		extra := maps.Clone(answer)
		extra["success"] = false
		m.Logger.Error("Failed to send stats to kafka", extra)
		return fmt.Errorf("publish %s stats for %s: %w", stats, appid, err)
	}
	// The whole answer goes into the log line, as in the original: the ELK
	// dashboards chart its fields (total_backlog, total_spider_count, ...).
	if m.Logger.Enabled(logfactory.LevelInfo) {
		extra := maps.Clone(answer)
		extra["success"] = true
		m.Logger.Info("Sent stats to kafka", extra)
	}
	return nil
}

var errUnknownStats = errors.New("unknown stats type")

// Gather returns the fields of the answer to a request for stats ("all",
// "kafka-monitor", "spider", ...) as of now, without stats, appid, uuid and
// server_time. The monitor's log dumps use it too.
func Gather(ctx context.Context, rdb redis.Cmdable, now time.Time, stats string) (map[string]any, error) {
	return reader{rdb: rdb, now: now}.answer(ctx, stats)
}

// Components whose stats are plugin style (total, fail, plugins, nodes).
var pluginComponents = []string{"kafka-monitor", "redis-monitor", "rest"}

// reader gathers one answer's stats from Redis at one instant.
type reader struct {
	rdb redis.Cmdable
	now time.Time
}

// answer returns the fields of the answer to a request for stats.
func (r reader) answer(ctx context.Context, stats string) (map[string]any, error) {
	switch stats {
	case "kafka-monitor", "redis-monitor", "rest":
		c := newComponentStats()
		if err := r.scan(ctx, "stats:"+stats+":*", c); err != nil {
			return nil, err
		}
		return c.answer(), nil
	case "spider", "machine":
		c := newCrawlerStats()
		if err := r.scan(ctx, crawlerPattern, c); err != nil {
			return nil, err
		}
		if stats == "spider" {
			return map[string]any{"spiders": c.spiders()}, nil
		}
		return map[string]any{"machines": c.machines()}, nil
	case "queue":
		q := newQueueStats()
		if err := r.scan(ctx, queuePattern, q); err != nil {
			return nil, err
		}
		return map[string]any{"queues": q.answer()}, nil
	case "crawler":
		c, q := newCrawlerStats(), newQueueStats()
		if err := r.scanAll(ctx, scanJob{crawlerPattern, c}, scanJob{queuePattern, q}); err != nil {
			return nil, err
		}
		return crawlerAnswer(c, q), nil
	case "all":
		crawler, q := newCrawlerStats(), newQueueStats()
		components := map[string]*componentStats{}
		route := byComponent{"crawler": crawler}
		for _, name := range pluginComponents {
			components[name] = newComponentStats()
			route[name] = components[name]
		}
		// One pass over stats:* serves all four components.
		if err := r.scanAll(ctx, scanJob{"stats:*", route}, scanJob{queuePattern, q}); err != nil {
			return nil, err
		}
		out := map[string]any{"crawler": crawlerAnswer(crawler, q)}
		for name, c := range components {
			out[name] = c.answer()
		}
		return out, nil
	}
	return nil, errUnknownStats
}

// crawlerAnswer is the "crawler" stats: spiders, machines and the queue
// backlog. The backlog is under "queue", as the original's Redis Monitor
// sends it and the spec's REST example shows (the Kafka Monitor page's
// example says "queues", which is the key of the "queue" stats answer only).
func crawlerAnswer(c *crawlerStats, q *queueStats) map[string]any {
	return map[string]any{"spiders": c.spiders(), "machines": c.machines(), "queue": q.answer()}
}

// A collector builds an answer section from the keys a SCAN finds. Keys come
// split on ':'.
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

type scanJob struct {
	pattern string
	into    collector
}

// scanAll runs the scans concurrently (each on its own connection), so an
// answer made of several scans takes as long as the longest.
func (r reader) scanAll(ctx context.Context, jobs ...scanJob) error {
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Go(func() { errs[i] = r.scan(ctx, j.pattern, j.into) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// scanCount is SCAN's COUNT: keys examined per page.
const scanCount = 1000

// scan finds the keys matching pattern and feeds them to c, reading the
// counts c asks for. Each round trip carries the reads for one page and the
// SCAN for the next. SCAN may return a key twice; it is counted once.
func (r reader) scan(ctx context.Context, pattern string, c collector) error {
	type read struct {
		key   string
		parts []string
		cmd   *redis.IntCmd
	}
	var (
		cursor  uint64
		pending []read
		seen    = map[string]struct{}{}
		bounds  = map[int64]string{} // window -> ZCOUNT min, formatted once
		done    bool
	)
	for {
		pipe := r.rdb.Pipeline()
		for i := range pending {
			pending[i].cmd = r.count(ctx, pipe, pending[i].key, pending[i].parts, bounds)
		}
		var scan *redis.ScanCmd
		if !done {
			scan = pipe.Scan(ctx, cursor, pattern, scanCount)
		}
		// Errors are per command: a wrong-typed key fails only its own read.
		_, _ = pipe.Exec(ctx)
		for _, p := range pending {
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
			if parts := strings.Split(k, ":"); c.take(parts) {
				pending = append(pending, read{key: k, parts: parts})
			}
		}
		cursor, done = next, next == 0
		if done && len(pending) == 0 {
			return nil
		}
	}
}

// count queues the read of one counter key, chosen by its last part:
// "lifetime" is a HyperLogLog (PFCOUNT); a number of seconds is a window,
// a sorted set of hits scored by epoch seconds, of which only those inside
// the window count (ZCOUNT, as the writers' own Value does), whether or not
// the writer has trimmed the older ones yet; anything else (a queue) is a
// sorted set counted whole (ZCARD).
func (r reader) count(ctx context.Context, pipe redis.Pipeliner, key string, parts []string, bounds map[int64]string) *redis.IntCmd {
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
		since := float64(r.now.UnixNano())/1e9 - float64(window)
		// Exclusive, as the writers trim hits scored <= now-window.
		minScore = "(" + strconv.FormatFloat(since, 'f', -1, 64)
		bounds[window] = minScore
	}
	return pipe.ZCount(ctx, key, minScore, "+inf")
}

// windows is window ("900", "lifetime") -> count.
type windows map[string]int64

// componentStats is the Kafka Monitor's, Redis Monitor's or REST service's
// stats, from stats:<component>:total:<window>, ...:fail:<window>,
// ...:<plugin>:<window> and the heartbeats ...:self:<host>:<id>.
type componentStats struct {
	total, fail windows
	plugins     map[string]windows
	nodes       map[string][]string
}

func newComponentStats() *componentStats {
	return &componentStats{total: windows{}, fail: windows{}, plugins: map[string]windows{}, nodes: map[string][]string{}}
}

func (c *componentStats) take(parts []string) bool {
	switch {
	case len(parts) == 5 && parts[2] == "self":
		c.nodes[parts[3]] = append(c.nodes[parts[3]], parts[4])
	case len(parts) == 4 && parts[2] != "self":
		return true
	}
	return false
}

func (c *componentStats) add(parts []string, n int64) {
	name, window := parts[2], parts[3]
	switch name {
	case "total":
		c.total[window] = n
	case "fail":
		c.fail[window] = n
	default:
		if c.plugins[name] == nil {
			c.plugins[name] = windows{}
		}
		c.plugins[name][window] = n
	}
}

// answer leaves out the sections without keys, as the original does (no
// "fail" when nothing failed).
func (c *componentStats) answer() map[string]any {
	out := map[string]any{}
	if len(c.total) > 0 {
		out["total"] = c.total
	}
	if len(c.fail) > 0 {
		out["fail"] = c.fail
	}
	if len(c.plugins) > 0 {
		out["plugins"] = c.plugins
	}
	if len(c.nodes) > 0 {
		for _, ids := range c.nodes {
			slices.Sort(ids)
		}
		out["nodes"] = c.nodes
	}
	return out
}

// crawlerPattern finds the crawlers' heartbeats,
// stats:crawler:<host>:<spiderid>:<id>, and response-code counters,
// stats:crawler:<host>:<spiderid>:<code>:<window>.
const crawlerPattern = "stats:crawler:*"

// crawlerStats builds both the spider and the machine stats from the
// crawler keys.
type crawlerStats struct {
	bySpider  map[string]*spiderStats
	byMachine map[string]map[string]windows // host -> code -> window -> sum
	running   int                           // heartbeats
}

type spiderStats struct {
	count int
	codes map[string]windows
}

func newCrawlerStats() *crawlerStats {
	return &crawlerStats{bySpider: map[string]*spiderStats{}, byMachine: map[string]map[string]windows{}}
}

func (c *crawlerStats) spider(name string) *spiderStats {
	s := c.bySpider[name]
	if s == nil {
		s = &spiderStats{codes: map[string]windows{}}
		c.bySpider[name] = s
	}
	return s
}

func (c *crawlerStats) take(parts []string) bool {
	switch len(parts) {
	case 5: // a running spider's heartbeat
		c.spider(parts[3]).count++
		c.running++
	case 6:
		return true
	}
	return false
}

func (c *crawlerStats) add(parts []string, n int64) {
	host, spider, code, window := parts[2], parts[3], parts[4], parts[5]
	// A spider running on several hosts has one counter per host: its
	// stats are their sum (the original kept whichever key it read last).
	s := c.spider(spider)
	if s.codes[code] == nil {
		s.codes[code] = windows{}
	}
	s.codes[code][window] += n

	m := c.byMachine[host]
	if m == nil {
		m = map[string]windows{}
		c.byMachine[host] = m
	}
	if m[code] == nil {
		m[code] = windows{}
	}
	m[code][window] += n
}

// spiders is {"unique_spider_count", "total_spider_count", "<spiderid>":
// {"count": running, "<code>": {window: sum over the spider's hosts}}}.
func (c *crawlerStats) spiders() map[string]any {
	out := map[string]any{}
	unique := 0
	for name, s := range c.bySpider {
		if s.count > 0 {
			unique++
		}
		entry := map[string]any{"count": s.count}
		for code, w := range s.codes {
			entry[code] = w
		}
		out[name] = entry
	}
	out["unique_spider_count"] = unique
	out["total_spider_count"] = c.running
	return out
}

// machines is {"count": hosts, "<host>": {"<code>": {window: sum over the
// host's spiders}}}. As in the original, a host counts once it has
// response-code counters.
func (c *crawlerStats) machines() map[string]any {
	out := map[string]any{"count": len(c.byMachine)}
	for host, codes := range c.byMachine {
		out[host] = codes
	}
	return out
}

// queuePattern finds the domain queues, <spiderid>:<domain>:queue.
const queuePattern = rediskeys.AllQueuesPattern

// queueStats is the backlog of every domain queue, per spider.
type queueStats struct {
	bySpider map[string]*spiderQueue
	total    int64
}

type spiderQueue struct {
	Domains       []domainBacklog `json:"domains"`
	SpiderBacklog int64           `json:"spider_backlog"`
	NumDomains    int             `json:"num_domains"`
}

type domainBacklog struct {
	Domain  string `json:"domain"`
	Backlog int64  `json:"backlog"`
}

func newQueueStats() *queueStats { return &queueStats{bySpider: map[string]*spiderQueue{}} }

// queueKeyParts is rediskeys.ParseQueueKey of a key split on ':'.
func queueKeyParts(parts []string) (spider, domain string, ok bool) {
	return rediskeys.ParseQueueKey(strings.Join(parts, ":"))
}

func (q *queueStats) take(parts []string) bool {
	_, _, ok := queueKeyParts(parts)
	return ok
}

func (q *queueStats) add(parts []string, n int64) {
	spider, domain, _ := queueKeyParts(parts)
	s := q.bySpider[spider]
	if s == nil {
		s = &spiderQueue{}
		q.bySpider[spider] = s
	}
	s.Domains = append(s.Domains, domainBacklog{Domain: domain, Backlog: n})
	s.SpiderBacklog += n
	s.NumDomains++
	q.total += n
}

// answer is {"queue_<spiderid>": {"domains", "spider_backlog",
// "num_domains"}, "total_backlog"}, domains sorted by name.
func (q *queueStats) answer() map[string]any {
	out := map[string]any{"total_backlog": q.total}
	for spider, s := range q.bySpider {
		slices.SortFunc(s.Domains, func(a, b domainBacklog) int { return strings.Compare(a.Domain, b.Domain) })
		out["queue_"+spider] = s
	}
	return out
}
