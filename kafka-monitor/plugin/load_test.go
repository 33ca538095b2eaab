package plugin_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

func TestDefaultsRankTheBuiltInPluginsAsTheOriginal(t *testing.T) {
	if got := plugin.Plugins.Default(); !reflect.DeepEqual(got, defaultPlugins) {
		t.Fatalf("PLUGINS default %v, want the original's %v", got, defaultPlugins)
	}
	s, err := settings.Load(plugin.Settings(), settings.Options{NoEnv: true})
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
			s, err := settings.Load(plugin.Settings(), settings.Options{NoEnv: true, Flags: map[string]string{"PLUGINS": tc.plugins}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := plugin.LoadPlugins(s); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("LoadPlugins = %v, want an error about %q", err, tc.want)
			}
		})
	}
}

// based is a plugin that keeps its Env through Base.
type based struct{ plugin.Base }

func (*based) Name() string   { return "Based" }
func (*based) Schema() []byte { return []byte(`{"type": "object"}`) }
func (*based) Handle(context.Context, plugin.Request, redis.Pipeliner) (string, error) {
	return "", nil
}

func TestBaseKeepsTheEnvGivenAtSetup(t *testing.T) {
	log, err := logfactory.New(logfactory.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	env := plugin.Env{Logger: log}
	var p plugin.Plugin = &based{}
	if err := p.Setup(context.Background(), env); err != nil {
		t.Fatal(err)
	}
	if p.(*based).Logger != log {
		t.Fatal("Base did not keep the Env")
	}
}
