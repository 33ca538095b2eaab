package stats

import (
	"context"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// MonitorStatsConfig configures NewMonitorStats from a monitor's settings.
type MonitorStatsConfig struct {
	// Component is the stats key's component: "kafka-monitor", "redis-monitor".
	Component string
	// Windows are the STATS_TIMES windows in seconds (see KnownWindows).
	Windows []int
	// Total keeps the total and fail counters (STATS_TOTAL).
	Total bool
	// Plugins are the plugins' stats names when STATS_PLUGINS is on.
	Plugins []string
}

// MonitorStats are the counters the original Kafka and Redis Monitors keep:
// stats:<component>:total, stats:<component>:fail and
// stats:<component>:<PluginName>, each a WindowSet over the STATS_TIMES
// windows plus a lifetime HyperLogLog.
type MonitorStats struct {
	windows   []int
	total     *WindowSet
	fail      *WindowSet
	plugins   map[string]*WindowSet
	pluginSeq []string
}

// NewMonitorStats creates the counters; opts apply to every WindowSet
// (WithCycleTime, WithErrorHandler, WithClock).
func NewMonitorStats(ctx context.Context, rdb redis.Cmdable, cfg MonitorStatsConfig, opts ...Option) (*MonitorStats, error) {
	m := &MonitorStats{windows: cfg.Windows, plugins: map[string]*WindowSet{}}
	newSet := func(name string) (*WindowSet, error) {
		return NewWindowSet(ctx, rdb, rediskeys.StatsKey(cfg.Component, name), cfg.Windows, true, opts...)
	}
	var err error
	if cfg.Total {
		if m.total, err = newSet("total"); err != nil {
			return nil, err
		}
		if m.fail, err = newSet("fail"); err != nil {
			m.Close()
			return nil, err
		}
	}
	for _, name := range cfg.Plugins {
		ws, err := newSet(name)
		if err != nil {
			m.Close()
			return nil, err
		}
		m.plugins[name] = ws
		m.pluginSeq = append(m.pluginSeq, name)
	}
	return m, nil
}

// KnownWindows converts STATS_TIMES names to seconds, skipping (and
// returning) the names it does not know, as the original logs and skips them.
func KnownWindows(names []string) (windows []int, unknown []string) {
	for _, name := range names {
		if w, ok := WindowByName(name); ok {
			windows = append(windows, w)
		} else {
			unknown = append(unknown, name)
		}
	}
	return windows, unknown
}

// Enabled reports whether any counter is kept.
func (m *MonitorStats) Enabled() bool { return m.total != nil || len(m.plugins) > 0 }

// AddTo queues on pipe total events, failed of which failed, and perPlugin
// events handled by each plugin (by stats name; unknown names are ignored).
func (m *MonitorStats) AddTo(ctx context.Context, pipe redis.Pipeliner, total, failed int, perPlugin map[string]int) {
	if m.total != nil {
		m.total.AddTo(ctx, pipe, total)
		m.fail.AddTo(ctx, pipe, failed)
	}
	for name, n := range perPlugin {
		if ws := m.plugins[name]; ws != nil {
			ws.AddTo(ctx, pipe, n)
		}
	}
}

// Record writes the events in one round trip.
func (m *MonitorStats) Record(ctx context.Context, rdb redis.Cmdable, total, failed int, perPlugin map[string]int) error {
	if !m.Enabled() {
		return nil
	}
	pipe := rdb.Pipeline()
	m.AddTo(ctx, pipe, total, failed, perPlugin)
	_, err := pipe.Exec(ctx)
	return err
}

// Snapshot returns the current counts as the original's stats dump names
// them: total_<window>, fail_<window>, plugin_<Name>_<window>, with
// "lifetime" as a window. Counts that cannot be read are left out.
func (m *MonitorStats) Snapshot(ctx context.Context) map[string]any {
	out := map[string]any{}
	add := func(prefix string, ws *WindowSet) {
		if ws == nil {
			return
		}
		for _, w := range m.windows {
			if n, err := ws.Value(ctx, w); err == nil {
				out[prefix+strconv.Itoa(w)] = n
			}
		}
		if n, err := ws.LifetimeValue(ctx); err == nil {
			out[prefix+"lifetime"] = n
		}
	}
	add("total_", m.total)
	add("fail_", m.fail)
	for _, name := range m.pluginSeq {
		add("plugin_"+name+"_", m.plugins[name])
	}
	return out
}

// Close stops the counters' upkeep.
func (m *MonitorStats) Close() {
	for _, ws := range []*WindowSet{m.total, m.fail} {
		if ws != nil {
			ws.Close()
		}
	}
	for _, ws := range m.plugins {
		ws.Close()
	}
}
