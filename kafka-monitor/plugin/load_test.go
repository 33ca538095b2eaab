package plugin_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

func TestDefaultsRankTheBuiltInPluginsAsTheOriginal(t *testing.T) {
	if got := plugin.Defaults()["PLUGINS"]; !reflect.DeepEqual(got, defaultPlugins) {
		t.Fatalf("PLUGINS default %v, want the original's %v", got, defaultPlugins)
	}
	s, err := settings.Load(plugin.Defaults(), settings.Options{NoEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := plugin.LoadPlugins(s)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range loaded {
		got = append(got, l.Plugin.Name())
		if l.Schema == nil || l.Key == "" {
			t.Errorf("%s loaded without its key or schema: %+v", l.Plugin.Name(), l)
		}
	}
	if want := []string{"ScraperHandler", "ActionHandler", "StatsHandler", "ZookeeperHandler"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("loaded %v, want %v in rank order", got, want)
	}
}

func TestLoadPluginsRejectsSettingsThatCannotWork(t *testing.T) {
	for _, tc := range []struct {
		name, plugins, want string
	}{
		{"every plugin disabled", `{"plugins.scraper_handler.ScraperHandler": null, "plugins.action_handler.ActionHandler": null,
			"plugins.stats_handler.StatsHandler": null, "plugins.zookeeper_handler.ZookeeperHandler": null}`, "no plugin enabled"},
		{"an unknown plugin", `{"plugins.nope.Nope": 500}`, "no plugin named plugins.nope.Nope"},
		{"two plugins at one rank", `{"plugins.stats_handler.StatsHandler": 100}`, "share rank 100"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := settings.Load(plugin.Defaults(), settings.Options{NoEnv: true, Flags: map[string]string{"PLUGINS": tc.plugins}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := plugin.LoadPlugins(s); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("LoadPlugins = %v, want an error about %q", err, tc.want)
			}
		})
	}
}
