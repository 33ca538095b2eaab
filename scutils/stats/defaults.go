package stats

import (
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// The STATS_* settings the components read through this package
// (WindowsFromSettings, OptionsFromSettings, NewMonitorStatsFromSettings),
// with Scrapy Cluster 1.3's defaults.
var (
	Cycle = settings.Seconds("STATS_CYCLE", int(DefaultCycleTime/time.Second), "seconds between trims of the stats windows")
	Times = settings.Strings("STATS_TIMES", []string{
		"SECONDS_15_MINUTE", "SECONDS_1_HOUR", "SECONDS_6_HOUR",
		"SECONDS_12_HOUR", "SECONDS_1_DAY", "SECONDS_1_WEEK",
	}, "rolling windows kept, by StatsCollector name")
	Total   = settings.Bool("STATS_TOTAL", true, "count every request handled and failed")
	Plugins = settings.Bool("STATS_PLUGINS", true, "count the requests each plugin handled and failed")
	Dump    = settings.Seconds("STATS_DUMP", 60, "seconds between dumps of the stats to the log; 0 never")
)

// Settings are the stats windows' settings (STATS_CYCLE, STATS_TIMES), for
// a component's settings.Group.
func Settings() settings.Group { return settings.Declare(Cycle, Times) }

// MonitorSettings are Settings plus the ones the Kafka and Redis Monitors
// share: STATS_TOTAL, STATS_PLUGINS (NewMonitorStatsFromSettings) and
// STATS_DUMP (their stats dumps).
func MonitorSettings() settings.Group {
	return settings.Join(Settings(), settings.Declare(Total, Plugins, Dump))
}
