package stats_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/stats"
)

func TestDefaultsAreTheOriginalsAndUsable(t *testing.T) {
	s, err := settings.Load(stats.MonitorDefaults(), settings.Options{NoEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	windows, err := stats.WindowsByName(s.Strings("STATS_TIMES"))
	if err != nil {
		t.Fatalf("a default STATS_TIMES name is unknown: %v", err)
	}
	if want := []int{900, 3600, 21600, 43200, 86400, 604800}; !slices.Equal(windows, want) {
		t.Errorf("STATS_TIMES windows = %v, want %v", windows, want)
	}
	if got := s.Seconds("STATS_CYCLE"); got != stats.DefaultCycleTime {
		t.Errorf("STATS_CYCLE = %v, want %v", got, stats.DefaultCycleTime)
	}
	if !s.Bool("STATS_TOTAL") || !s.Bool("STATS_PLUGINS") || s.Int("STATS_DUMP") != 60 {
		t.Errorf("STATS_TOTAL, STATS_PLUGINS, STATS_DUMP = %v, %v, %v; want true, true, 60",
			s.Bool("STATS_TOTAL"), s.Bool("STATS_PLUGINS"), s.Int("STATS_DUMP"))
	}
}

func TestMonitorDefaultsExtendDefaultsWithoutChangingThem(t *testing.T) {
	shared, monitor := stats.Defaults(), stats.MonitorDefaults()
	for name := range shared {
		if _, ok := monitor[name]; !ok {
			t.Errorf("MonitorDefaults lacks %s", name)
		}
	}
	if extra := slices.Sorted(maps.Keys(monitor)); len(extra) != len(shared)+3 {
		t.Errorf("MonitorDefaults = %v, want Defaults plus STATS_TOTAL, STATS_PLUGINS, STATS_DUMP", extra)
	}
	// Each call returns a fresh map: a component changing its copy changes no other's.
	shared["STATS_CYCLE"] = 1
	if stats.Defaults()["STATS_CYCLE"] == 1 {
		t.Error("Defaults returned a shared map")
	}
}
