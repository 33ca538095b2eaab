// Package action is the Kafka Monitor's info/stop plugin (the original's
// ActionHandler): it writes the request's uuid at
// <action>:<spiderid>:<appid>[:<crawlid>] for the Redis Monitor.
package action

import (
	"context"
	_ "embed"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

//go:embed action_schema.json
var schema []byte

// Key is the plugin's name in the PLUGINS setting.
const Key = "plugins.action_handler.ActionHandler"

func init() { plugin.Register(Key, func() plugin.Plugin { return Handler{} }) }

// Handler writes action requests.
type Handler struct{}

// Name is the stats name.
func (Handler) Name() string { return "ActionHandler" }

// Schema is the action request schema.
func (Handler) Schema() []byte { return schema }

// Setup needs nothing.
func (Handler) Setup(context.Context, plugin.Env) error { return nil }

// Handle sets the action key to the request's uuid.
func (Handler) Handle(ctx context.Context, req plugin.Request, tx redis.Pipeliner) (string, error) {
	str := func(k string) string { s, _ := req[k].(string); return s }
	tx.Set(ctx, rediskeys.ActionKey(str("action"), str("spiderid"), str("appid"), str("crawlid")), str("uuid"), 0)
	return "Added action to Redis", nil
}
