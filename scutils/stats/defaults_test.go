package stats_test

import (
	"slices"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/stats"
)

func TestDefaultsAreTheOriginalsAndUsable(t *testing.T) {
	s, err := settings.Load(stats.MonitorSettings(), settings.Options{NoEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	windows, err := stats.WindowsByName(stats.Times.From(s))
	if err != nil {
		t.Fatalf("a default STATS_TIMES name is unknown: %v", err)
	}
	if want := []int{900, 3600, 21600, 43200, 86400, 604800}; !slices.Equal(windows, want) {
		t.Errorf("STATS_TIMES windows = %v, want %v", windows, want)
	}
	if got := stats.Cycle.From(s); got != stats.DefaultCycleTime {
		t.Errorf("STATS_CYCLE = %v, want %v", got, stats.DefaultCycleTime)
	}
	if !stats.Total.From(s) || !stats.Plugins.From(s) || stats.Dump.From(s) != time.Minute {
		t.Errorf("STATS_TOTAL, STATS_PLUGINS, STATS_DUMP = %v, %v, %v; want true, true, 1m",
			stats.Total.From(s), stats.Plugins.From(s), stats.Dump.From(s))
	}
	// The original's types: whole seconds.
	if _, isInt := stats.MonitorSettings()["STATS_DUMP"].Default.(int); !isInt {
		t.Error("STATS_DUMP's default is no int")
	}
}

func TestMonitorSettingsAddThreeToSettings(t *testing.T) {
	shared, monitor := stats.Settings().Names(), stats.MonitorSettings().Names()
	if want := []string{"STATS_CYCLE", "STATS_TIMES"}; !slices.Equal(shared, want) {
		t.Errorf("Settings = %q, want %q", shared, want)
	}
	if want := []string{"STATS_CYCLE", "STATS_DUMP", "STATS_PLUGINS", "STATS_TIMES", "STATS_TOTAL"}; !slices.Equal(monitor, want) {
		t.Errorf("MonitorSettings = %q, want %q", monitor, want)
	}
}
