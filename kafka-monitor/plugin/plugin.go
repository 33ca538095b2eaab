// Package plugin is the Kafka Monitor's extension point. A plugin owns a
// JSON Schema and handles the requests that validate against it, exactly as
// the original's plugins do: the monitor tries the enabled plugins in rank
// order (lowest first) and the first whose schema accepts a request handles
// it, after the schema's defaults are filled in.
//
// Plugins register by name in init() and are enabled and ranked by the
// PLUGINS setting (name: rank, or null to disable). The built-in plugins use
// the original's names (e.g. "plugins.scraper_handler.ScraperHandler"), so a
// PLUGINS setting written for the Python monitor works unchanged. To add
// one, write a type implementing Plugin, register it, and build your own
// kafka-monitor main that imports your package (see examples/customplugin).
//
// A schema is checked by the validator (santhosh-tekuri/jsonschema) and,
// first, by a quick check of its own (quick.go) that recognises the usual
// valid request without the validator and leaves every other request to
// it, so that the verdict and its reason are always the validator's. The
// check pays on the ingest path: without it, BenchmarkIngestCrawlRequests
// (go test -run '^$' -bench 'IngestCrawlRequests$' -benchtime 20000x
// ./kafka-monitor/monitor/, 12 runs interleaved with it) took a median
// 54.3 µs of the process's CPU per request instead of 33.1 (+64%; 11,600
// instead of 18,200 requests/s), and BenchmarkValidateCrawlRequest 34.3 µs
// and 110 allocations instead of 11.2 µs and 23. The tests in
// quick_test.go hold it to the validator's verdicts.
package plugin

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/registry"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// Request is a validated request with its schema's defaults filled in.
// Numbers are json.Number, so integers keep their exact text.
type Request = map[string]any

// Env is what a plugin gets at Setup.
type Env struct {
	Settings *settings.Settings
	Logger   *logfactory.Logger
	// Redis is the monitor's client, for plugins that read Redis; writes
	// belong on the pipeline Handle receives.
	Redis redis.UniversalClient
}

// Plugin validates and handles one kind of request.
type Plugin interface {
	// Name is the plugin's stats name, e.g. "ScraperHandler"
	// (stats:kafka-monitor:<Name>:<window>).
	Name() string
	// Schema is the JSON Schema (Draft 4) of the requests it handles.
	Schema() []byte
	// Setup prepares the plugin before the first request.
	Setup(ctx context.Context, env Env) error
	// Handle queues the Redis writes for one valid request on tx and
	// returns the message logged once they are stored. The monitor runs the
	// pipeline for a whole batch of requests and runs Handle again if Redis
	// failed, so Handle must only queue writes that may be repeated.
	// Return Reject(...) for a request that can never be handled; any other
	// error is retried. (A Batcher's requests go to its Batch instead.)
	Handle(ctx context.Context, req Request, tx redis.Pipeliner) (logMessage string, err error)
}

// Base gives a plugin the Env: embed it, and the monitor's call to Setup
// keeps the Env in it (Logger, Settings, Redis). A plugin that needs more
// at Setup defines its own Setup and calls Base.Setup from it.
type Base struct{ Env }

// Setup keeps env.
func (b *Base) Setup(_ context.Context, env Env) error {
	b.Env = env
	return nil
}

// StoreObserver is implemented by plugins that need to know whether a
// request's writes were stored: after each attempt to run the pipeline
// holding them, the monitor calls Stored when it succeeded, or NotStored
// when it failed (Handle then runs again for the request).
type StoreObserver interface {
	Stored(req Request)
	NotStored(req Request)
}

// Batcher is implemented by plugins that write the requests of one
// pipeline together, in fewer commands than a set per request (the
// scraper queues a pipeline's crawl requests with one script). For each
// pipeline (each attempt at storing a share of a batch) the monitor asks
// for a new Batch, has it handle that pipeline's requests of the plugin
// instead of calling Handle, and then calls its Flush, once, before it
// runs the pipeline. A pipeline given up before Flush (another request's
// Handle failed) is dropped with its Batch: nothing noted only in the Batch
// is written, and the requests are handled again, on a new pipeline with a
// new Batch. Handle itself must still write a request on its own (a Batch
// of one, flushed), for callers that are not the monitor.
type Batcher interface {
	NewBatch() Batch
}

// Batch gathers the writes of one pipeline's requests for a Batcher.
type Batch interface {
	// Handle is Plugin.Handle for one request of the pipeline tx: it may
	// queue writes on tx at once or note them for Flush. A request it
	// rejects must leave nothing noted.
	Handle(ctx context.Context, req Request, tx redis.Pipeliner) (logMessage string, err error)
	// Flush queues on tx the writes noted by Handle. Its error is retried
	// as Handle's: the pipeline is dropped and stored again from scratch.
	Flush(ctx context.Context, tx redis.Pipeliner) error
}

// RejectError marks a request a plugin refuses for good: it is logged,
// counted as a failure and its message committed.
type RejectError struct{ Reason string }

func (e *RejectError) Error() string { return e.Reason }

// Reject returns a *RejectError with a formatted reason.
func Reject(format string, args ...any) error {
	return &RejectError{Reason: fmt.Sprintf(format, args...)}
}

// IsReject reports whether err is (or wraps) a *RejectError.
func IsReject(err error) bool {
	if err == nil {
		return false
	}
	var r *RejectError
	return errors.As(err, &r)
}

// Factory makes a new instance of a plugin.
type Factory func() Plugin

var plugins = registry.New[Plugin]("plugin")

// Register makes a plugin available under name for the PLUGINS setting.
// It panics if the name is taken, as two plugins under one name is a
// programming error found at start-up.
func Register(name string, f Factory) { plugins.Register(name, f) }

// Registered returns the registered plugin names, sorted.
func Registered() []string { return plugins.Names() }

// Loaded is an enabled plugin with its rank (Key is its PLUGINS name) and
// compiled schema.
type Loaded struct {
	registry.Loaded[Plugin]
	Schema *Schema
}

// The settings of everything that validates requests for the Kafka Monitor
// (the monitor itself, its feed command, the REST service's /feed) and
// creates its incoming topic.
var (
	Plugins = settings.Map("PLUGINS", map[string]any{
		"plugins.scraper_handler.ScraperHandler":     100,
		"plugins.action_handler.ActionHandler":       200,
		"plugins.stats_handler.StatsHandler":         300,
		"plugins.zookeeper_handler.ZookeeperHandler": 400,
	}, "the request plugins, name: rank, lowest tried first; `null` disables one; merges with the defaults. The REST service's `/feed` accepts what they accept")
	IncomingPartitions = settings.Int("KAFKA_INCOMING_PARTITIONS", 6, "partitions of the incoming topic when a component creates it").Ours().AtLeast(1)
)

// Settings are the plugins' settings, for a component's settings.Group.
func Settings() settings.Group { return settings.Declare(Plugins, IncomingPartitions) }

// NewLoaded makes p, enabled under key at rank, a Loaded: it compiles p's
// schema.
func NewLoaded(key string, rank int, p Plugin) (Loaded, error) {
	schema, err := CompileSchema(p.Name(), p.Schema())
	if err != nil {
		return Loaded{}, fmt.Errorf("plugin %s: %w", key, err)
	}
	return Loaded{Loaded: registry.Loaded[Plugin]{Key: key, Rank: rank, Plugin: p}, Schema: schema}, nil
}

// LoadPlugins loads the plugins the PLUGINS setting enables (see Load); no
// plugin enabled is an error.
func LoadPlugins(s *settings.Settings) ([]Loaded, error) {
	return loaded(plugins.LoadSetting(s, Plugins))
}

// Load instantiates the plugins a PLUGINS value enables (name: rank;
// a null rank disables one) and compiles their schemas, sorted by rank.
// Unknown names, non-integer ranks and duplicate ranks are errors.
func Load(enabled map[string]any) ([]Loaded, error) {
	return loaded(plugins.Load(Plugins.Name(), enabled))
}

func loaded(enabled []registry.Loaded[Plugin], err error) ([]Loaded, error) {
	if err != nil {
		return nil, err
	}
	out := make([]Loaded, len(enabled))
	for i, e := range enabled {
		if out[i], err = NewLoaded(e.Key, e.Rank, e.Plugin); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// JoinErrors writes Match's errors on one line, separated by " | ".
func JoinErrors(errs []error) string {
	parts := make([]string, len(errs))
	for i, err := range errs {
		parts[i] = err.Error()
	}
	return strings.Join(parts, " | ")
}

// Match returns the first plugin (in rank order) whose schema accepts req,
// with req's defaults filled in, or the validation errors of every plugin.
func Match(plugins []Loaded, req any) (*Loaded, Request, []error) {
	var errs []error
	for i := range plugins {
		p := &plugins[i]
		if err := p.Schema.Validate(req); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p.Plugin.Name(), err))
			continue
		}
		obj, ok := req.(map[string]any)
		if !ok {
			errs = append(errs, fmt.Errorf("%s: request is not a JSON object", p.Plugin.Name()))
			continue
		}
		p.Schema.ApplyDefaults(obj)
		return p, obj, nil
	}
	return nil, nil, errs
}
