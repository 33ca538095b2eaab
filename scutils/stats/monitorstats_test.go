package stats_test

import (
	"context"
	"strings"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/stats"
)

func TestMonitorStatsWritesTheOriginalsKeysAndSnapshot(t *testing.T) {
	rdb := harness.StartRedis(t).TestClient(t)
	ctx := context.Background()
	windows, unknown := stats.KnownWindows([]string{"SECONDS_15_MINUTE", "SECONDS_NOPE", "SECONDS_1_HOUR"})
	if len(windows) != 2 || windows[0] != 900 || windows[1] != 3600 || len(unknown) != 1 || unknown[0] != "SECONDS_NOPE" {
		t.Fatalf("KnownWindows: %v %v", windows, unknown)
	}
	m, err := stats.NewMonitorStats(ctx, rdb, stats.MonitorStatsConfig{
		Component: "redis-monitor", Windows: windows, Total: true, Plugins: []string{"InfoMonitor", "StopMonitor"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Record(ctx, rdb, 3, 1, map[string]int{"InfoMonitor": 2, "Unknown": 5}); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{
		"total_900": 3, "total_3600": 3, "total_lifetime": 3,
		"fail_900": 1, "fail_3600": 1, "fail_lifetime": 1,
		"plugin_InfoMonitor_900": 2, "plugin_InfoMonitor_3600": 2, "plugin_InfoMonitor_lifetime": 2,
		"plugin_StopMonitor_900": 0, "plugin_StopMonitor_3600": 0, "plugin_StopMonitor_lifetime": 0,
	}
	got := m.Snapshot(ctx)
	if len(got) != len(want) {
		t.Fatalf("snapshot %v", got)
	}
	for k, v := range want {
		n, _ := got[k].(int64)
		if got[k] != v && !(strings.HasSuffix(k, "_lifetime") && harness.DistinctCountMatches(n, v)) {
			t.Errorf("%s = %v, want %d", k, got[k], v)
		}
	}
	for _, key := range []string{"stats:redis-monitor:total:900", "stats:redis-monitor:fail:3600", "stats:redis-monitor:InfoMonitor:900"} {
		if n := rdb.ZCard(ctx, key).Val(); n == 0 {
			t.Errorf("%s is empty", key)
		}
	}
	if n := rdb.PFCount(ctx, "stats:redis-monitor:total:lifetime").Val(); !harness.DistinctCountMatches(n, 3) {
		t.Errorf("lifetime %d", n)
	}
}

func TestMonitorStatsDisabledWritesNothing(t *testing.T) {
	rdb := harness.StartRedis(t).TestClient(t)
	ctx := context.Background()
	m, err := stats.NewMonitorStats(ctx, rdb, stats.MonitorStatsConfig{Component: "kafka-monitor", Windows: []int{900}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.Enabled() {
		t.Fatal("enabled without counters")
	}
	if err := m.Record(ctx, rdb, 1, 1, map[string]int{"X": 1}); err != nil {
		t.Fatal(err)
	}
	if n := rdb.DBSize(ctx).Val(); n != 0 {
		t.Fatalf("%d keys written", n)
	}
}
