// Package stats is the Kafka Monitor's stats request plugin (the original's
// StatsHandler): it writes the request's uuid at statsrequest:<stats>:<appid>
// for the Redis Monitor.
package stats

import (
	_ "embed"

	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

//go:embed stats_schema.json
var schema []byte

// Key is the plugin's name in the PLUGINS setting.
const Key = "plugins.stats_handler.StatsHandler"

func init() { plugin.Register(Key, Handler) }

// Handler is the plugin: it writes stats requests.
func Handler() plugin.Plugin {
	return plugin.UUIDKey{StatsName: "StatsHandler", JSONSchema: schema, Stored: "Added stats request to Redis",
		Key: func(req plugin.Request) string {
			return rediskeys.StatsRequestKey(plugin.Field(req, "stats"), plugin.Field(req, "appid"))
		}}
}
