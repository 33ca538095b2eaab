package plugin_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/redis-monitor/monitor"
	"github.com/scrapycluster/scrapy-cluster-go/redis-monitor/plugin"
	_ "github.com/scrapycluster/scrapy-cluster-go/redis-monitor/plugins/all"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

func load(t *testing.T, plugins string) ([]plugin.Loaded, error) {
	t.Helper()
	flags := map[string]string{}
	if plugins != "" {
		flags["PLUGINS"] = plugins
	}
	s, err := settings.Load(monitor.Settings(), settings.Options{NoEnv: true, Flags: flags})
	if err != nil {
		t.Fatal(err)
	}
	return plugin.LoadPlugins(s)
}

func TestTheDefaultsLoadTheBuiltInPluginsInRankOrder(t *testing.T) {
	loaded, err := load(t, "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range loaded {
		got = append(got, l.Plugin.Name())
	}
	if want := []string{"InfoMonitor", "StopMonitor", "ExpireMonitor", "StatsMonitor", "ZookeeperMonitor"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("loaded %v, want %v", got, want)
	}
	if loaded[0].Key != "plugins.info_monitor.InfoMonitor" || loaded[0].Rank != 100 {
		t.Fatalf("first loaded %+v", loaded[0])
	}
}

func TestLoadPluginsRejectsSettingsThatCannotWork(t *testing.T) {
	for _, tc := range []struct {
		name, plugins, want string
	}{
		{"every plugin disabled", `{"plugins.info_monitor.InfoMonitor": null, "plugins.stop_monitor.StopMonitor": null,
			"plugins.expire_monitor.ExpireMonitor": null, "plugins.stats_monitor.StatsMonitor": null,
			"plugins.zookeeper_monitor.ZookeeperMonitor": null}`, "no plugin enabled"},
		{"an unknown plugin", `{"plugins.nope.Nope": 600}`, "no plugin named plugins.nope.Nope"},
		{"a rank that is not an integer", `{"plugins.info_monitor.InfoMonitor": "first"}`, "must be an integer or null"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := load(t, tc.plugins); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("LoadPlugins = %v, want an error about %q", err, tc.want)
			}
		})
	}
}
