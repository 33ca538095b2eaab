// Package customplugin is a working example of a Kafka Monitor plugin: the
// spec's NewPlugin, which accepts {"uuid": ..., "my_string": ...} and stores
// my_string at custom:<uuid>. Copy it to start your own:
//
//  1. a type implementing plugin.Plugin (embedding plugin.Base for Setup),
//     its schema embedded beside it;
//  2. plugin.Register in init(), under the name PLUGINS will use;
//  3. a main that imports your package and runs command.New() (see
//     cmd/my-kafka-monitor);
//  4. PLUGINS in your settings file, e.g. "plugins.new_plugin.NewPlugin": 500
//     (its map merges with the default plugins).
//
// What the schema cannot check goes in an optional Validate method
// (plugin.Validator), run by the monitor, its feed command and the REST
// service alike.
package customplugin

import (
	"context"
	_ "embed"
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
)

//go:embed new_schema.json
var schema []byte

// Key is the plugin's name in the PLUGINS setting.
const Key = "plugins.new_plugin.NewPlugin"

func init() { plugin.Register(Key, func() plugin.Plugin { return &NewPlugin{} }) }

// NewPlugin stores my_string at custom:<uuid>. plugin.Base provides Setup,
// which keeps the Env (Logger, Settings, Redis); a plugin that reads
// settings or opens connections at start-up defines its own Setup and calls
// Base.Setup from it.
type NewPlugin struct{ plugin.Base }

// Name is the plugin's stats name (stats:kafka-monitor:NewPlugin:<window>).
func (p *NewPlugin) Name() string { return "NewPlugin" }

// Schema is the JSON Schema (Draft 4) of the requests it handles.
func (p *NewPlugin) Schema() []byte { return schema }

// Validate refuses what the schema lets through but is no use: a string of
// spaces. The error's text is the reason users see.
func (p *NewPlugin) Validate(req plugin.Request) error {
	if s, _ := req["my_string"].(string); strings.TrimSpace(s) == "" {
		return errors.New("my_string: only spaces")
	}
	return nil
}

// Handle queues the write; the monitor runs it with the rest of the batch.
func (p *NewPlugin) Handle(ctx context.Context, req plugin.Request, tx redis.Pipeliner) (string, error) {
	uuid, _ := req["uuid"].(string)
	value, _ := req["my_string"].(string)
	tx.Set(ctx, "custom:"+uuid, value, 0)
	p.Logger.Debug("Queued my_string", logfactory.Extra{"uuid": uuid})
	return "Stored my_string in Redis", nil
}
