package stats

import (
	"maps"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// Defaults are the STATS_* settings every component reads through this
// package (WindowsFromSettings, OptionsFromSettings), with Scrapy Cluster
// 1.3's defaults. A component adds them to its own settings.Defaults
// (maps.Copy):
//
//	STATS_CYCLE  5  seconds between trims of the stats windows (DefaultCycleTime)
//	STATS_TIMES     the windows kept, by StatsCollector name: SECONDS_15_MINUTE,
//	                SECONDS_1_HOUR, SECONDS_6_HOUR, SECONDS_12_HOUR, SECONDS_1_DAY, SECONDS_1_WEEK
func Defaults() settings.Defaults {
	return settings.Defaults{
		"STATS_CYCLE": int(DefaultCycleTime / time.Second),
		"STATS_TIMES": []string{
			"SECONDS_15_MINUTE", "SECONDS_1_HOUR", "SECONDS_6_HOUR",
			"SECONDS_12_HOUR", "SECONDS_1_DAY", "SECONDS_1_WEEK",
		},
	}
}

// MonitorDefaults are Defaults plus the STATS_* settings the Kafka and Redis
// Monitors share (NewMonitorStatsFromSettings and their stats dumps):
//
//	STATS_TOTAL    true  total and fail counters
//	STATS_PLUGINS  true  a counter per plugin
//	STATS_DUMP     60    seconds between stats dumps to the log; 0 never
func MonitorDefaults() settings.Defaults {
	d := Defaults()
	maps.Copy(d, settings.Defaults{
		"STATS_TOTAL":   true,
		"STATS_PLUGINS": true,
		"STATS_DUMP":    60,
	})
	return d
}
