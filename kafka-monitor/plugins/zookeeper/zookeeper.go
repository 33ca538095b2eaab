// Package zookeeper is the Kafka Monitor's domain throttle and blacklist
// plugin (the original's ZookeeperHandler): it writes the change as JSON at
// zk:<action>:<domain>:<appid> for the Redis Monitor, which applies it to the
// cluster's domain configuration.
package zookeeper

import (
	"context"
	_ "embed"
	"encoding/json"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

//go:embed zookeeper_schema.json
var schema []byte

// Key is the plugin's name in the PLUGINS setting.
const Key = "plugins.zookeeper_handler.ZookeeperHandler"

func init() { plugin.Register(Key, func() plugin.Plugin { return Handler{} }) }

// Handler writes domain configuration changes.
type Handler struct{}

// Name is the stats name.
func (Handler) Name() string { return "ZookeeperHandler" }

// Schema is the zookeeper request schema.
func (Handler) Schema() []byte { return schema }

// Setup needs nothing.
func (Handler) Setup(context.Context, plugin.Env) error { return nil }

// Handle writes {"domain", "uuid"} (plus hits, window and scale for a
// domain-update, which needs non-zero hits and window).
func (Handler) Handle(ctx context.Context, req plugin.Request, tx redis.Pipeliner) (string, error) {
	str := func(k string) string { s, _ := req[k].(string); return s }
	value := map[string]any{"domain": req["domain"], "uuid": req["uuid"]}
	if str("action") == "domain-update" {
		hits, _ := req["hits"].(json.Number)
		window, _ := req["window"].(json.Number)
		if isZero(hits) || isZero(window) {
			return "", plugin.Reject("'hits' and 'window' not set for domain update")
		}
		value["hits"], value["window"], value["scale"] = hits, window, req["scale"]
	}
	b, err := plugin.MarshalPython(value)
	if err != nil {
		return "", plugin.Reject("encode request: %v", err)
	}
	tx.Set(ctx, rediskeys.ZooKeeperKey(str("action"), str("domain"), str("appid")), b, 0)
	return "Added zookeeper action to Redis", nil
}

func isZero(n json.Number) bool {
	f, err := n.Float64()
	return err != nil || f == 0
}
