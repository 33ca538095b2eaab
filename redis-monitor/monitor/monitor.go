// Package monitor is the Redis Monitor: it scans Redis for the request keys
// its plugins own (info, stop, expire, stats, zookeeper), lets each plugin
// act on them and answers on the outbound Kafka topic.
//
// Each cycle runs the plugins in rank order. For each plugin the monitor
// SCANs for keys matching its pattern (never KEYS) and reads their values
// in one round trip per page. A key whose precondition holds is locked
// (lock:<key>, python-redis-lock's protocol, so several Go or Python
// monitors can run at once), read again (another monitor may have handled
// it meanwhile), handled and then deleted — only if its value is still the
// one handled, so a new request written to the same key meanwhile is not
// lost. Each request is therefore handled once across all monitors.
//
// A failed attempt is counted in stats:redis-monitor:fail:* and, with
// RETRY_FAILURES, retried on the next cycles; after RETRY_FAILURES_MAX
// failed attempts the key is dropped with an error line. Failures caused by
// the monitor stopping do not count: the key stays for the next monitor.
// Outages are not failures either: those of Redis (the scan fails) and Kafka
// (answers wait in the publisher) are ridden out with back-off, and a
// plugin that cannot reach a service of its own (the zookeeper plugin and
// ZooKeeper) says its keys are not ready, or returns plugin.ErrUnavailable,
// so they stay, untouched, until it is back.
//
// Beside the cycles, every LEDGER_COMPLETE_INTERVAL the monitor looks for
// crawls whose ledger says nothing is left and publishes one crawl-complete
// for each (see complete.go and scutils/ledger).
package monitor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/redis-monitor/plugin"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/heartbeat"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/kafkaclient"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/lifecycle"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/recrawl"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisconn"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisscripts"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/stats"
)

// Monitor is one Redis Monitor process.
type Monitor struct {
	settings  *settings.Settings
	log       *logfactory.Logger
	rdb       redis.UniversalClient
	layout    rediskeys.Layout // of the settings' Redis mode
	publisher *kafkaclient.Publisher
	plugins   []plugin.Loaded
	stats     *stats.MonitorStats

	host, id string
	lockTTL  time.Duration
	retry    bool
	retryMax int64
	idle     time.Duration
	grace    time.Duration

	heartbeat            time.Duration // HEARTBEAT_TIMEOUT
	dumpEvery            time.Duration // STATS_DUMP; 0 never
	dumpCrawl, dumpQueue bool          // STATS_DUMP_CRAWL, STATS_DUMP_QUEUE

	completer     completer
	completeEvery time.Duration
	starter       *recrawl.Starter
	recrawlEvery  time.Duration

	handled     atomic.Int64 // requests handled successfully
	completed   atomic.Int64 // crawl-complete messages published
	runsStarted atomic.Int64 // re-crawl runs started
	failed      atomic.Int64 // failed attempts
	dropped     atomic.Int64 // requests given up after their retries

	metrics *metrics // Prometheus's (metrics.go)
	demand  *demand  // the eligible-requests gauge (demand.go)
}

// New loads and sets up the enabled plugins and the stats collectors. rdb is
// the Redis client the monitor and its plugins use; the caller closes it.
func New(ctx context.Context, s *settings.Settings, log *logfactory.Logger, rdb redis.UniversalClient) (*Monitor, error) {
	kcfg, err := kafkaclient.ConfigFromSettings(s)
	if err != nil {
		return nil, err
	}
	plugins, err := plugin.LoadPlugins(s)
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	m := &Monitor{
		settings: s, log: log, rdb: rdb, plugins: plugins, layout: redisconn.KeyLayout(s),
		publisher: kcfg.NewPublisher("outbound", AppIDTopics.From(s), log),
		host:      host, id: heartbeat.NewID(),
		lockTTL:   LockExpiration.From(s),
		retry:     RetryFailures.From(s),
		retryMax:  int64(RetryFailuresMax.From(s)),
		idle:      SleepTime.From(s),
		grace:     ShutdownGrace.From(s),
		heartbeat: HeartbeatTimeout.From(s),
		dumpEvery: stats.Dump.From(s),
		dumpCrawl: DumpCrawl.From(s),
		dumpQueue: DumpQueue.From(s),
	}
	m.metrics = newMetrics(m)
	m.demand = newDemand(s, rdb, log)
	ttl := ledger.TTL.From(s)
	m.completeEvery = ledger.CompleteInterval.From(s)
	if m.completer, err = newCompleter(rdb, m.layout, m.id, ttl, ledger.CompleteQuiet.From(s)); err != nil {
		return nil, err
	}
	m.recrawlEvery = recrawl.Interval.From(s)
	m.starter = recrawl.NewStarter(rdb, ttl, recrawl.RunsKept.From(s))
	env := plugin.Env{Settings: s, Logger: log, Redis: rdb, Layout: m.layout, Publish: m.publish, Now: time.Now, Starter: m.starter}
	for i, p := range plugins {
		if err := p.Plugin.Setup(ctx, env); err != nil {
			m.closePlugins(plugins[:i])
			m.publisher.Close()
			return nil, fmt.Errorf("set up plugin %s: %w", p.Key, err)
		}
		log.Debug("Loaded plugin", logfactory.Extra{"plugin": p.Key, "rank": p.Rank, "pattern": p.Plugin.Pattern()})
	}
	if err := m.setupStats(ctx); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

func (m *Monitor) setupStats(ctx context.Context) error {
	names := make([]string, len(m.plugins))
	for i, p := range m.plugins {
		names[i] = p.Plugin.Name()
	}
	var err error
	m.stats, err = stats.NewMonitorStatsFromSettings(ctx, m.rdb, m.settings, m.log, "redis-monitor", names)
	return err
}

// publish is the plugins' Env.Publish.
func (m *Monitor) publish(ctx context.Context, answer map[string]any) error {
	b, err := json.Marshal(answer)
	if err != nil {
		return fmt.Errorf("encode answer: %w", err)
	}
	appID, _ := answer["appid"].(string)
	return m.publisher.Publish(ctx, appID, b)
}

// Handled, Failed and Dropped count requests handled, failed attempts and
// requests given up, for tests and benchmarks.
func (m *Monitor) Handled() int64 { return m.handled.Load() }

// Failed counts failed attempts.
func (m *Monitor) Failed() int64 { return m.failed.Load() }

// Dropped counts requests given up after their retries.
func (m *Monitor) Dropped() int64 { return m.dropped.Load() }

// Close closes the plugins, stops the stats collectors and flushes the
// Kafka producer. It does not close the Redis client.
func (m *Monitor) Close() {
	m.closePlugins(m.plugins)
	if m.stats != nil {
		m.stats.Close()
	}
	if err := m.publisher.Close(); err != nil {
		m.log.Warning("Failed to close the Kafka producer", logfactory.Extra{"error": err.Error()})
	}
}

func (m *Monitor) closePlugins(ps []plugin.Loaded) {
	for _, p := range ps {
		if err := p.Plugin.Close(); err != nil {
			m.log.Warning("Failed to close plugin", logfactory.Extra{"plugin": p.Key, "error": err.Error()})
		}
	}
}

// Run scans and handles requests until ctx is cancelled. The request in
// hand then gets SHUTDOWN_GRACE to finish; Run returns nil.
func (m *Monitor) Run(ctx context.Context) error {
	// work outlives ctx by the grace period, so a request in hand finishes.
	work, stopWork := lifecycle.WithGrace(ctx, m.grace)
	defer stopWork()

	bg, stopBackground := context.WithCancel(context.WithoutCancel(ctx))
	following := make(chan struct{})
	defer func() { stopBackground(); <-following }()
	go func() {
		defer close(following)
		m.demand.follow(bg, m.settings)
	}()
	go heartbeat.Run(bg, m.rdb, rediskeys.HeartbeatKey("redis-monitor", m.host, m.id), m.heartbeat, m.log)
	if m.dumpEvery > 0 {
		go m.dumpLoop(bg, m.dumpEvery)
	}
	completing := make(chan struct{})
	go func() {
		defer close(completing)
		m.completeLoop(ctx, work)
	}()
	defer func() { <-completing }() // a crawl-complete in hand is sent before Close
	go m.recrawlLoop(bg)
	m.log.Info("Redis Monitor running", logfactory.Extra{"id": m.id, "plugin_count": len(m.plugins)})

	backoff := 100 * time.Millisecond
	for {
		err := m.Cycle(ctx, work)
		if ctx.Err() != nil {
			m.log.Info("Closing Redis Monitor")
			return nil
		}
		wait := m.idle
		if err != nil {
			m.log.Error("Redis Monitor cycle failed; retrying", logfactory.Extra{"error": err.Error(), "retry_in": backoff.String()})
			wait, backoff = backoff, min(backoff*2, 5*time.Second)
		} else {
			backoff = 100 * time.Millisecond
		}
		if !lifecycle.Sleep(ctx, wait) {
			m.log.Info("Closing Redis Monitor")
			return nil
		}
	}
}

// Cycle runs every plugin once over the keys it owns. It stops early when
// ctx is cancelled; work is the context requests are handled under. An
// error means Redis could not be scanned.
func (m *Monitor) Cycle(ctx, work context.Context) error {
	for _, p := range m.plugins {
		if err := m.scan(ctx, work, p.Plugin); err != nil {
			return fmt.Errorf("plugin %s: %w", p.Plugin.Name(), err)
		}
		if ctx.Err() != nil {
			return nil
		}
	}
	return nil
}

// scan finds p's keys, a page at a time, and processes them. In cluster
// mode the keys are found on every master (scanCluster).
func (m *Monitor) scan(ctx, work context.Context, p plugin.Plugin) error {
	if cc, ok := m.rdb.(*redis.ClusterClient); ok {
		return m.scanCluster(ctx, work, cc, p)
	}
	var cursor uint64
	for {
		keys, next, err := m.rdb.Scan(ctx, cursor, p.Pattern(), 1000).Result()
		if err != nil {
			return err
		}
		if len(keys) > 0 {
			values, err := m.rdb.MGet(ctx, keys...).Result()
			if err != nil {
				return err
			}
			for i, key := range keys {
				if ctx.Err() != nil {
					return nil
				}
				value, ok := values[i].(string)
				if !ok { // gone, or not a string key
					continue
				}
				if err := m.process(work, p, key, value); err != nil {
					return err
				}
			}
		}
		if next == 0 {
			return nil
		}
		cursor = next
	}
}

// process handles one key if its precondition holds and no other monitor
// holds it. An error means Redis failed (the key is left as it is).
func (m *Monitor) process(ctx context.Context, p plugin.Plugin, key, value string) error {
	ready, err := safeCheck(ctx, p, key, value)
	if err == nil && !ready {
		return nil
	}
	l, ok, lerr := tryLock(ctx, m.rdb, m.layout.RequestLock(key), m.lockTTL)
	m.metrics.lockTried(p.Name(), ok, lerr)
	if lerr != nil || !ok {
		return lerr
	}
	defer l.release(context.WithoutCancel(ctx))

	// Another monitor may have handled the key, or a new request replaced
	// it, since it was scanned.
	current, gerr := m.rdb.Get(ctx, key).Result()
	if gerr == redis.Nil {
		return nil
	}
	if gerr != nil {
		return gerr
	}
	if current != value || err != nil {
		value = current
		if ready, err = safeCheck(ctx, p, key, value); err == nil && !ready {
			return nil
		}
	}
	if err == nil {
		m.recordStats(ctx, p.Name())
		err = safeHandle(ctx, p, key, value)
		if err == nil {
			m.handled.Add(1)
			m.metrics.outcome(p.Name(), outcomeHandled)
			return m.deleteHandled(ctx, key, value)
		}
		if ctx.Err() != nil {
			m.log.Info("Stopped before the request was handled; it is left for the next monitor", logfactory.Extra{"key": key})
			return nil
		}
		if errors.Is(err, plugin.ErrUnavailable) {
			m.metrics.outcome(p.Name(), outcomeDeferred)
			m.log.Warning("A service the request needs is unreachable; it is left for a later cycle",
				logfactory.Extra{"plugin": p.Name(), "key": key, "error": err.Error()})
			return nil
		}
	}
	return m.failure(ctx, p, key, value, err)
}

// recordStats counts a request in the total and its plugin's counter when
// its handling starts, as the original. Stats are best effort.
func (m *Monitor) recordStats(ctx context.Context, pluginName string) {
	if err := m.stats.Record(ctx, m.rdb, 1, 0, map[string]int{pluginName: 1}); err != nil {
		m.log.Warning("Failed to record stats", logfactory.Extra{"error": err.Error()})
	}
}

// failure counts a failed attempt and drops the key when its retries are
// used up (at once without RETRY_FAILURES).
func (m *Monitor) failure(ctx context.Context, p plugin.Plugin, key, value string, cause error) error {
	m.failed.Add(1)
	m.metrics.outcome(p.Name(), outcomeFailed)
	if err := m.stats.Record(ctx, m.rdb, 0, 1, nil); err != nil {
		m.log.Warning("Failed to record stats", logfactory.Extra{"error": err.Error()})
	}
	extra := logfactory.Extra{"plugin": p.Name(), "key": key, "value": preview(value), "error": cause.Error()}
	failKey := m.layout.RequestFailures(key)
	if m.retry {
		n, err := m.rdb.Incr(ctx, failKey).Result()
		if err != nil {
			return err
		}
		m.rdb.Expire(ctx, failKey, 24*time.Hour)
		if n <= m.retryMax {
			extra["attempt"] = n
			m.log.Warning("Failed to process request; it will be retried", extra)
			return nil
		}
	}
	m.log.Error("Could not process action within failure limit; dropping it", extra)
	m.dropped.Add(1)
	m.metrics.outcome(p.Name(), outcomeDropped)
	return m.deleteHandled(ctx, key, value)
}

// deleteHandled removes a handled request if it still holds the value
// that was handled, and its failure count (request_delete.lua; in cluster
// mode the count is in the request's slot, RequestFailures).
func (m *Monitor) deleteHandled(ctx context.Context, key, value string) error {
	return redisscripts.Run(context.WithoutCancel(ctx), m.rdb, redisscripts.RequestDelete{Key: key, Failures: m.layout.RequestFailures(key), Value: value}).Err()
}

// safeCheck and safeHandle turn a plugin's panic into a failure of the
// request: no request can stop the monitor.
func safeCheck(ctx context.Context, p plugin.Plugin, key, value string) (ok bool, err error) {
	defer recoverInto(p, &err)
	return p.CheckPrecondition(ctx, key, value)
}

func safeHandle(ctx context.Context, p plugin.Plugin, key, value string) (err error) {
	defer recoverInto(p, &err)
	return p.Handle(ctx, key, value)
}

func recoverInto(p plugin.Plugin, err *error) {
	if v := recover(); v != nil {
		*err = fmt.Errorf("plugin %s panicked: %v\n%s", p.Name(), v, debug.Stack())
	}
}

// preview keeps log lines of huge values readable.
func preview(s string) string {
	const n = 500
	if len(s) > n {
		return s[:n] + fmt.Sprintf("...(%d bytes)", len(s))
	}
	return s
}

// StatsSnapshot returns the monitor's own counts as the original's dump
// names them: total_<window>, fail_<window>, plugin_<Name>_<window>.
func (m *Monitor) StatsSnapshot(ctx context.Context) map[string]any { return m.stats.Snapshot(ctx) }
