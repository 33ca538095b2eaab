package stats

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// WindowsFromSettings reads STATS_TIMES; as the original, names it does not
// know are logged and skipped.
func WindowsFromSettings(s *settings.Settings, log *logfactory.Logger) []int {
	windows, unknown := KnownWindows(Times.From(s))
	for _, name := range unknown {
		log.Warning("Unable to find Stats Time '" + name + "'")
	}
	return windows
}

// OptionsFromSettings are the options every component's collectors use:
// upkeep every STATS_CYCLE seconds, upkeep failures logged at DEBUG.
func OptionsFromSettings(s *settings.Settings, log *logfactory.Logger) []Option {
	return []Option{
		WithCycleTime(Cycle.From(s)),
		WithErrorHandler(func(err error) {
			log.Debug("Stats upkeep failed", logfactory.Extra{"error": err.Error()})
		}),
	}
}

// NewMonitorStatsFromSettings builds a monitor's counters from STATS_TIMES,
// STATS_TOTAL, STATS_PLUGINS (counters for plugins, by stats name) and
// STATS_CYCLE.
func NewMonitorStatsFromSettings(ctx context.Context, rdb redis.Cmdable, s *settings.Settings, log *logfactory.Logger, component string, plugins []string) (*MonitorStats, error) {
	cfg := MonitorStatsConfig{Component: component, Windows: WindowsFromSettings(s, log), Total: Total.From(s)}
	if Plugins.From(s) {
		cfg.Plugins = plugins
	}
	return NewMonitorStats(ctx, rdb, cfg, OptionsFromSettings(s, log)...)
}
