package monitor_test

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

// panicky is a plugin with a bug: it panics on {"boom": true}.
type panicky struct{}

func (panicky) Name() string { return "PanickyHandler" }
func (panicky) Schema() []byte {
	return []byte(`{"type": "object", "properties": {"boom": {"type": "boolean"}}, "required": ["boom"], "additionalProperties": false}`)
}
func (panicky) Setup(context.Context, plugin.Env) error { return nil }
func (panicky) Handle(ctx context.Context, req plugin.Request, tx redis.Pipeliner) (string, error) {
	if req["boom"] == true {
		panic("nil map somewhere")
	}
	tx.Set(ctx, "panicky:ok", "1", 0)
	return "Handled", nil
}

func init() { plugin.Register("test.panicky", func() plugin.Plugin { return panicky{} }) }

func TestAPanickingPluginRejectsTheRequestAndTheMonitorGoesOn(t *testing.T) {
	c := newCluster(t, harness.RedisOptions{}, `PLUGINS={"test.panicky": 500}`)
	m, _ := c.start(t)
	c.produce(t, `{"boom": true}`, `{"boom": false}`,
		`{"url": "http://after.com", "appid": "testapp", "crawlid": "c1"}`)
	waitFor(t, "all three requests", func() bool { return m.Processed() == 3 })
	ctx := context.Background()
	if c.rdb.Get(ctx, "panicky:ok").Val() != "1" || c.rdb.ZCard(ctx, "link:after.com:queue").Val() != 1 {
		t.Fatal("requests after the panic were not handled")
	}
	waitFor(t, "the failure counted", func() bool { return c.rdb.ZCard(ctx, "stats:kafka-monitor:fail:900").Val() == 1 })
	if logs := c.logs.String(); !strings.Contains(logs, "plugin PanickyHandler panicked: nil map somewhere") {
		t.Fatalf("panic not logged:\n%s", logs)
	}
}
