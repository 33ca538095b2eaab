// Package stats is the Kafka Monitor's stats request plugin (the original's
// StatsHandler): it writes the request's uuid at statsrequest:<stats>:<appid>
// for the Redis Monitor.
package stats

import (
	"context"
	_ "embed"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

//go:embed stats_schema.json
var schema []byte

// Key is the plugin's name in the PLUGINS setting.
const Key = "plugins.stats_handler.StatsHandler"

func init() { plugin.Register(Key, func() plugin.Plugin { return Handler{} }) }

// Handler writes stats requests.
type Handler struct{}

// Name is the stats name.
func (Handler) Name() string { return "StatsHandler" }

// Schema is the stats request schema.
func (Handler) Schema() []byte { return schema }

// Setup needs nothing.
func (Handler) Setup(context.Context, plugin.Env) error { return nil }

// Handle sets the stats request key to the request's uuid.
func (Handler) Handle(ctx context.Context, req plugin.Request, tx redis.Pipeliner) (string, error) {
	str := func(k string) string { s, _ := req[k].(string); return s }
	tx.Set(ctx, rediskeys.StatsRequestKey(str("stats"), str("appid")), str("uuid"), 0)
	return "Added stats request to Redis", nil
}
