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

// panickyBatcher is a plugin.Batcher with a bug: its Flush panics when it
// holds {"flush_boom": true}.
type panickyBatcher struct{}

func (panickyBatcher) Name() string { return "PanickyBatcher" }
func (panickyBatcher) Schema() []byte {
	return []byte(`{"type": "object", "properties": {"flush_boom": {"type": "boolean"}}, "required": ["flush_boom"], "additionalProperties": false}`)
}
func (panickyBatcher) Setup(context.Context, plugin.Env) error { return nil }
func (p panickyBatcher) Handle(ctx context.Context, req plugin.Request, tx redis.Pipeliner) (string, error) {
	b := p.NewBatch()
	if _, err := b.Handle(ctx, req, tx); err != nil {
		return "", err
	}
	return "Handled", b.Flush(ctx, tx)
}
func (panickyBatcher) NewBatch() plugin.Batch { return &panickyBatch{} }

type panickyBatch struct{ boom bool }

func (b *panickyBatch) Handle(_ context.Context, req plugin.Request, _ redis.Pipeliner) (string, error) {
	b.boom = b.boom || req["flush_boom"] == true
	return "Handled", nil
}
func (b *panickyBatch) Flush(ctx context.Context, tx redis.Pipeliner) error {
	if b.boom {
		panic("flushed a nil map")
	}
	tx.Set(ctx, "panicky:batch", "1", 0)
	return nil
}

func init() {
	plugin.Register("test.panicky", func() plugin.Plugin { return panicky{} })
	plugin.Register("test.panicky-batcher", func() plugin.Plugin { return panickyBatcher{} })
}

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

// A Batch whose Flush panics loses its pipeline's requests of that plugin
// (rejected, counted as failed); the pipeline's other requests are stored.
func TestAPanickingBatchRejectsItsRequestsAndTheOthersAreStored(t *testing.T) {
	c := newCluster(t, harness.RedisOptions{}, `PLUGINS={"test.panicky-batcher": 500}`)
	m, _ := c.start(t)
	c.produce(t, `{"flush_boom": false}`, `{"url": "http://before.com", "appid": "testapp", "crawlid": "c1"}`, `{"flush_boom": true}`,
		`{"url": "http://after.com", "appid": "testapp", "crawlid": "c1"}`)
	waitFor(t, "all four requests", func() bool { return m.Processed() == 4 })
	ctx := context.Background()
	if c.rdb.ZCard(ctx, "link:before.com:queue").Val() != 1 || c.rdb.ZCard(ctx, "link:after.com:queue").Val() != 1 {
		t.Fatal("the crawl requests beside the panicking batch were not stored")
	}
	// Its two requests are each failed or stored: both failed when they
	// shared the panicking pipeline.
	failed := 2 - c.rdb.Exists(ctx, "panicky:batch").Val()
	waitFor(t, "the failures counted", func() bool { return c.rdb.ZCard(ctx, "stats:kafka-monitor:fail:900").Val() == failed })
	if logs := c.logs.String(); !strings.Contains(logs, "plugin PanickyBatcher panicked: flushed a nil map") {
		t.Fatalf("panic not logged:\n%s", logs)
	}
}
