// Package action is the Kafka Monitor's info/stop plugin (the original's
// ActionHandler): it writes the request's uuid at
// <action>:<spiderid>:<appid>[:<crawlid>] for the Redis Monitor.
package action

import (
	_ "embed"

	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

//go:embed action_schema.json
var schema []byte

// Key is the plugin's name in the PLUGINS setting.
const Key = "plugins.action_handler.ActionHandler"

func init() { plugin.Register(Key, Handler) }

// Handler is the plugin: it writes action requests.
func Handler() plugin.Plugin {
	return plugin.UUIDKey{StatsName: "ActionHandler", JSONSchema: schema, Stored: "Added action to Redis",
		Key: func(req plugin.Request) string {
			f := func(name string) string { return plugin.Field(req, name) }
			return rediskeys.ActionKey(f("action"), f("spiderid"), f("appid"), f("crawlid"))
		}}
}
