// Package plugin is the Redis Monitor's extension point, as in the
// original: each plugin owns a Redis key pattern; the monitor finds matching
// keys with SCAN, asks the plugin whether the key is ready
// (CheckPrecondition), lets it handle the key and its value, and then
// deletes the key. A key whose handling fails is retried up to
// RETRY_FAILURES_MAX times and then deleted with a log line and a fail stat.
//
// Plugins register by name in init() and are enabled and ranked by the
// PLUGINS setting (name: rank, or null to disable); lower ranks run first.
// The built-in plugins use the original's names (e.g.
// "plugins.info_monitor.InfoMonitor"), so a PLUGINS setting written for the
// Python monitor works unchanged. To add one, write a type implementing
// Plugin (embed Base for the optional methods), register it, and build your
// own redis-monitor main that imports your package (see examples/myplugin).
package plugin

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/recrawl"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/registry"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// Plugin acts on the Redis keys matching its pattern.
type Plugin interface {
	// Name is the plugin's stats name, e.g. "InfoMonitor"
	// (stats:redis-monitor:<Name>:<window>).
	Name() string
	// Pattern is the key pattern in Redis SCAN MATCH (glob) syntax, e.g.
	// "info:*:*". The original calls it the plugin's regex.
	Pattern() string
	// Setup prepares the plugin before the first key.
	Setup(ctx context.Context, env Env) error
	// CheckPrecondition reports whether key should be handled now. A key
	// that is not ready stays in Redis and is checked again next cycle
	// (the expire plugin waits for the crawl's expiry time this way).
	CheckPrecondition(ctx context.Context, key, value string) (bool, error)
	// Handle acts on one key. The monitor holds the key's lock meanwhile and
	// deletes the key when Handle returns nil. An error counts as a failure
	// (the key is retried, then dropped), except when it comes from ctx
	// ending (the key is left for the next monitor) or wraps ErrUnavailable
	// (the key is left for a later cycle).
	Handle(ctx context.Context, key, value string) error
	// Close releases what Setup acquired; called once when the monitor stops.
	Close() error
}

// Env is what a plugin gets at Setup.
type Env struct {
	Settings *settings.Settings
	Logger   *logfactory.Logger
	// Redis is the monitor's client: a *redis.Client for one Redis, a
	// *redis.ClusterClient in cluster mode (REDIS_CLUSTER_NODES). Plugins
	// may need more than single commands: the zookeeper plugin's domain
	// configuration in Redis updates with WATCH.
	Redis redis.UniversalClient
	// Layout is the key layout of Redis's mode (redisconn.KeyLayout): the
	// original's keys with one Redis, rediskeys.Cluster in cluster mode,
	// where a plugin reads the queues and ledger shares of every master.
	Layout rediskeys.Layout
	// Publish sends an answer to <prefix>.outbound_firehose (and with
	// KAFKA_APPID_TOPICS to <prefix>.outbound_<appid>, appid taken from
	// answer["appid"]). It returns once Kafka acknowledged it, waiting
	// while Kafka is unreachable; it fails only when ctx ends or the answer
	// can never be sent.
	Publish func(ctx context.Context, answer map[string]any) error
	// Now is the clock (time.Now unless a test sets it).
	Now func() time.Time
	// Starter is the monitor's re-crawl starter: a stop or an expire on a
	// Redis Cluster finishes a run's start in progress with it before it
	// ends the crawl (recrawl.Starter.FinishStart). Nil in tests of one
	// plugin that need none.
	Starter *recrawl.Starter
}

// Base gives a plugin the Env and the optional methods' defaults:
// every key is ready, Close does nothing. Embed it and set it in Setup.
type Base struct{ Env }

// Setup keeps env.
func (b *Base) Setup(_ context.Context, env Env) error {
	b.Env = env
	return nil
}

// CheckPrecondition accepts every key.
func (*Base) CheckPrecondition(context.Context, string, string) (bool, error) { return true, nil }

// Close does nothing.
func (*Base) Close() error { return nil }

// ServerTime is the answers' "server_time": whole epoch seconds of Now.
func (b *Base) ServerTime() int64 { return b.Now().Unix() }

// KeyParts splits key, a key matched by a plugin's pattern, into its parts
// after the prefix. form names them ("stop:<spiderid>:<appid>:<crawlid>"):
// a key with another number of parts is an error that shows it.
func KeyParts(key, form string) ([]string, error) {
	parts := strings.Split(key, ":")
	if len(parts) != strings.Count(form, ":")+1 {
		return nil, fmt.Errorf("%s key %q: want %s", parts[0], key, form)
	}
	return parts[1:], nil
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

// Loaded is an enabled plugin with its rank; Key is its PLUGINS name.
type Loaded = registry.Loaded[Plugin]

// Plugins is the PLUGINS setting: the Redis Monitor's plugins by name and
// rank.
var Plugins = settings.Map("PLUGINS", map[string]any{
	"plugins.info_monitor.InfoMonitor":           100,
	"plugins.stop_monitor.StopMonitor":           200,
	"plugins.expire_monitor.ExpireMonitor":       300,
	"plugins.stats_monitor.StatsMonitor":         400,
	"plugins.zookeeper_monitor.ZookeeperMonitor": 500,
}, "the monitor plugins, name: rank, lowest first; `null` disables one; merges with the defaults")

// Settings are the plugins' settings, for the monitor's settings.Group.
func Settings() settings.Group { return settings.Declare(Plugins) }

// LoadPlugins loads the plugins the PLUGINS setting enables (see Load); no
// plugin enabled is an error.
func LoadPlugins(s *settings.Settings) ([]Loaded, error) { return plugins.LoadSetting(s, Plugins) }

// Load instantiates the plugins a PLUGINS value enables (name: rank; a null
// rank disables one), sorted by rank. Unknown names, non-integer ranks and
// duplicate ranks are errors.
func Load(enabled map[string]any) ([]Loaded, error) { return plugins.Load(Plugins.Name(), enabled) }
