// Package plugintest runs a Kafka Monitor plugin in tests the way the
// monitor runs it, against a real Redis: set up with an Env, requests
// decoded and validated (plugin.Validate: the schema with its defaults
// filled in, then the plugin's Validator), Handle on a pipeline that is
// then executed (or, for a plugin.Batcher, several requests through one
// Batch: HandleBatch), and the plugin told whether its writes were stored.
package plugintest

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/cli"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/wirejson"
)

// Fixture is a plugin set up as the monitor sets it up.
type Fixture struct {
	Plugin plugin.Plugin
	Env    plugin.Env
}

// Setup sets p up with rdb and the given settings (overrides, over the
// shared component settings, plugin.Settings and the extra declarations),
// as the monitor does before the first request.
func Setup(t testing.TB, p plugin.Plugin, rdb redis.UniversalClient, declared settings.Group, overrides map[string]any) *Fixture {
	t.Helper()
	s := harness.LoadSettings(t, settings.Join(cli.ComponentSettings("test", "test.log"), plugin.Settings(), declared), overrides)
	f := &Fixture{Plugin: p, Env: plugin.Env{Settings: s, Logger: harness.QuietLogger(t), Redis: rdb}}
	if err := p.Setup(context.Background(), f.Env); err != nil {
		t.Fatal(err)
	}
	return f
}

// Handle validates raw as the monitor does (Validate) and handles it as
// Handle does; it fails the test if raw is invalid.
func (f *Fixture) Handle(t testing.TB, raw string) error {
	t.Helper()
	req, err := Validate(t, f.Plugin, raw)
	if err != nil {
		t.Fatalf("%s refuses %s: %v", f.Plugin.Name(), raw, err)
	}
	return Handle(t, f.Plugin, f.Env.Redis, req)
}

// Validate gives the monitor's verdict on raw (plugin.Validate) with p the
// only plugin: the request with its defaults filled in, or the
// *plugin.InvalidError saying why not.
func Validate(t testing.TB, p plugin.Plugin, raw string) (plugin.Request, error) {
	t.Helper()
	loaded, err := plugin.NewLoaded(p.Name(), 0, p)
	if err != nil {
		t.Fatal(err)
	}
	_, req, err := plugin.Validate([]plugin.Loaded{loaded}, []byte(raw))
	return req, err
}

// ExpectRefused fails the test unless p, the only plugin, refuses raw
// (plugin.Refused, by p) with a reason that says reason.
func ExpectRefused(t testing.TB, p plugin.Plugin, raw, reason string) {
	t.Helper()
	_, err := Validate(t, p, raw)
	var invalid *plugin.InvalidError
	if !errors.As(err, &invalid) || invalid.Stage != plugin.Refused || invalid.Plugin != p.Name() {
		t.Fatalf("Validate(%s) = %v, want a refusal by %s", raw, err, p.Name())
	}
	if !strings.Contains(err.Error(), reason) {
		t.Errorf("reason %q does not say %q", err, reason)
	}
}

func compile(t testing.TB, p plugin.Plugin) *plugin.Schema {
	t.Helper()
	schema, err := plugin.CompileSchema(p.Name(), p.Schema())
	if err != nil {
		t.Fatal(err)
	}
	return schema
}

// Request decodes raw and validates it against p's schema only, with the
// defaults filled in; it fails the test if the schema rejects it. It skips
// the plugin's Validator (see Validate), so that Handle can be tried on
// requests the monitor would not pass to it.
func Request(t testing.TB, p plugin.Plugin, raw string) plugin.Request {
	t.Helper()
	schema := compile(t, p)
	decoded, err := wirejson.Decode([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(decoded); err != nil {
		t.Fatalf("%s schema rejects %s: %v", p.Name(), raw, err)
	}
	req, ok := decoded.(map[string]any)
	if !ok {
		t.Fatalf("%s is not a JSON object", raw)
	}
	schema.ApplyDefaults(req)
	return req
}

// Handle runs p.Handle for req on a new pipeline of c and executes it, then
// tells an observing plugin the writes were stored. A Handle error is
// returned (after checking that nothing was queued); an Exec error fails
// the test.
func Handle(t testing.TB, p plugin.Plugin, c redis.Cmdable, req plugin.Request) error {
	t.Helper()
	ctx := context.Background()
	pipe := c.Pipeline()
	if _, err := p.Handle(ctx, req, pipe); err != nil {
		if n := pipe.Len(); n != 0 {
			t.Errorf("Handle failed (%v) but queued %d writes", err, n)
		}
		return err
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatalf("exec: %v", err)
	}
	if obs, ok := p.(plugin.StoreObserver); ok {
		obs.Stored(req)
	}
	return nil
}

// HandleBatch runs reqs on one new pipeline of c the way the monitor runs
// a share of a batch: through one Batch when p is a plugin.Batcher (then
// its Flush), else p.Handle for each; then it executes the pipeline and
// tells an observing plugin each request was stored. The first Handle or
// Flush error is returned (nothing is executed then); an Exec error fails
// the test.
func HandleBatch(t testing.TB, p plugin.Plugin, c redis.Cmdable, reqs []plugin.Request) error {
	t.Helper()
	ctx := context.Background()
	pipe := c.Pipeline()
	handle, flush := p.Handle, func() error { return nil }
	if b, ok := p.(plugin.Batcher); ok {
		batch := b.NewBatch()
		handle = batch.Handle
		flush = func() error { return batch.Flush(ctx, pipe) }
	}
	for _, req := range reqs {
		if _, err := handle(ctx, req, pipe); err != nil {
			return err
		}
	}
	if err := flush(); err != nil {
		return err
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatalf("exec: %v", err)
	}
	if obs, ok := p.(plugin.StoreObserver); ok {
		for _, req := range reqs {
			obs.Stored(req)
		}
	}
	return nil
}

// StringKeys returns every key in Redis with its string value.
func StringKeys(t testing.TB, c redis.Cmdable) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	for _, k := range c.Keys(ctx, "*").Val() {
		v, err := c.Get(ctx, k).Result()
		if err != nil {
			t.Fatalf("GET %s: %v", k, err)
		}
		out[k] = v
	}
	return out
}

// DecodeNumbers decodes the JSON object s keeping numbers as written
// (json.Number), as a test compares what a plugin stored.
func DecodeNumbers(t testing.TB, s string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return m
}

// Write is a request (Raw) and the string keys a real Redis holds after
// the plugin handled it on its own (Want).
type Write struct {
	Name string // the subtest's name
	Raw  string
	Want map[string]string
}

// ExpectWrites runs each case as a subtest: p handles the case's request
// (see Request and Handle) on an emptied Redis, which must then hold
// exactly the case's keys. It starts the Redis server.
func ExpectWrites(t *testing.T, p plugin.Plugin, cases []Write) {
	t.Helper()
	r := harness.StartRedis(t)
	c := r.TestClient(t)
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			if err := r.FlushAll(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := Handle(t, p, c, Request(t, p, tc.Raw)); err != nil {
				t.Fatalf("Handle: %v", err)
			}
			if got := StringKeys(t, c); !reflect.DeepEqual(got, tc.Want) {
				t.Errorf("Redis holds %v, want %v", got, tc.Want)
			}
		})
	}
}

// ExpectIdempotent has p handle the request raw twice on a new Redis; the
// second time must leave Redis as the first did, one key.
func ExpectIdempotent(t *testing.T, p plugin.Plugin, raw string) {
	t.Helper()
	c := harness.StartRedis(t).TestClient(t)
	req := Request(t, p, raw)
	handle := func() {
		t.Helper()
		if err := Handle(t, p, c, req); err != nil {
			t.Fatalf("Handle: %v", err)
		}
	}
	handle()
	first := StringKeys(t, c)
	handle()
	if second := StringKeys(t, c); !reflect.DeepEqual(first, second) || len(first) != 1 {
		t.Errorf("after a repeated Handle Redis holds %v, want %v (one key)", second, first)
	}
}
