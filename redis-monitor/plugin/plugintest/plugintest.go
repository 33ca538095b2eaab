// Package plugintest runs Redis Monitor plugins in tests as the monitor
// does, against a real Redis, and records what they publish.
package plugintest

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/redis-monitor/plugin"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/cli"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// Fixture is a set-up plugin with a recording Publish.
type Fixture struct {
	Plugin plugin.Plugin
	Env    plugin.Env
	// Clock is what Env.Now returns; tests may change it.
	Clock time.Time

	mu        sync.Mutex
	published []map[string]any
}

// Setup sets p up with rdb, the given settings (overrides, over the shared
// component settings and the extra declarations) and a clock at
// 2026-01-02 03:04:05 UTC.
func Setup(t testing.TB, p plugin.Plugin, rdb redis.UniversalClient, declared settings.Group, overrides map[string]any) *Fixture {
	t.Helper()
	s := harness.LoadSettings(t, settings.Join(cli.ComponentSettings("test", "test.log"), declared), overrides)
	f := &Fixture{Plugin: p, Clock: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	f.Env = plugin.Env{
		Settings: s, Logger: harness.QuietLogger(t), Redis: rdb,
		Publish: f.record,
		Now:     func() time.Time { return f.Clock },
	}
	if err := p.Setup(context.Background(), f.Env); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return f
}

// Start is a plugin test's prologue: it empties the shared Redis (see
// EmptyRedis) and sets p up on it with no extra settings (see Setup). It
// returns the fixture and the Redis client, for the test to arrange keys.
func Start(t testing.TB, p plugin.Plugin) (*Fixture, *redis.Client) {
	t.Helper()
	rdb := EmptyRedis(t)
	return Setup(t, p, rdb, nil, nil), rdb
}

// record keeps a JSON round trip of answer (numbers as float64), as a
// consumer of the outbound topic reads it.
func (f *Fixture) record(_ context.Context, answer map[string]any) error {
	b, err := json.Marshal(answer)
	if err != nil {
		return err
	}
	var out map[string]any
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(&out); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.published = append(f.published, out)
	return nil
}

// Published returns the answers published so far.
func (f *Fixture) Published() []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]map[string]any, len(f.published))
	for i, a := range f.published {
		out[i] = maps.Clone(a)
	}
	return out
}

// Process does what the monitor does with one key: read its value, check
// the precondition and, when ready, handle it and delete the key. It
// reports whether the key was handled.
func (f *Fixture) Process(ctx context.Context, key string) (bool, error) {
	value, err := f.Env.Redis.Get(ctx, key).Result()
	if err != nil {
		return false, err
	}
	ready, err := f.Plugin.CheckPrecondition(ctx, key, value)
	if err != nil || !ready {
		return false, err
	}
	if err := f.Plugin.Handle(ctx, key, value); err != nil {
		return true, err
	}
	return true, f.Env.Redis.Del(ctx, key).Err()
}

// ExpectOnlyAnswer fails t unless exactly one answer was published and it
// is the JSON document want (numbers read as float64, as Published has them).
func (f *Fixture) ExpectOnlyAnswer(t testing.TB, want string) {
	t.Helper()
	var w map[string]any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("the wanted answer: %v", err)
	}
	if got := f.Published(); len(got) != 1 || !reflect.DeepEqual(got[0], w) {
		t.Fatalf("published %v", got)
	}
}
