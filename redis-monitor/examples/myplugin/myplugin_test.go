package myplugin_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/redis-monitor/examples/myplugin"
	"github.com/scrapycluster/scrapy-cluster-go/redis-monitor/plugin"
	"github.com/scrapycluster/scrapy-cluster-go/redis-monitor/plugin/plugintest"
)

func TestMain(m *testing.M) { plugintest.Main(m) }

func TestClearDeletesTheQueueAndAnswers(t *testing.T) {
	f, rdb := plugintest.Start(t, &myplugin.ClearMonitor{})
	ctx := context.Background()
	for _, m := range []string{`{"url":"http://ebay.com/1"}`, `{"url":"http://ebay.com/2"}`} {
		rdb.ZAdd(ctx, "link:ebay.com:queue", redis.Z{Score: -1, Member: m})
	}
	rdb.ZAdd(ctx, "link:dmoz.org:queue", redis.Z{Score: -1, Member: `{"url":"http://dmoz.org"}`})
	rdb.Set(ctx, "clear:link:ebay.com:testapp", "uuid-1", 0)

	if handled, err := f.Process(ctx, "clear:link:ebay.com:testapp"); !handled || err != nil {
		t.Fatalf("handled %v, %v", handled, err)
	}
	got := f.Published()
	if len(got) != 1 || got[0]["total_cleared"] != 2.0 || got[0]["uuid"] != "uuid-1" || got[0]["domain"] != "ebay.com" {
		t.Fatalf("published %v", got)
	}
	if rdb.Exists(ctx, "link:ebay.com:queue").Val() != 0 || rdb.ZCard(ctx, "link:dmoz.org:queue").Val() != 1 {
		t.Fatal("wrong queue cleared")
	}
}

func TestTheSettingNameEnablesIt(t *testing.T) {
	loaded, err := plugin.Load(map[string]any{myplugin.Key: 600})
	if err != nil || len(loaded) != 1 || loaded[0].Plugin.Name() != "ClearMonitor" {
		t.Fatalf("%v %v", loaded, err)
	}
}
