// Package zookeeper is the Kafka Monitor's domain throttle and blacklist
// plugin (the original's ZookeeperHandler): it writes the change as JSON at
// zk:<action>:<domain>:<appid> for the Redis Monitor, which applies it to the
// cluster's domain configuration.
package zookeeper

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"unicode"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/wirejson"
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

// maxWhole is the largest hits or window (in magnitude) the Redis Monitor
// reads exactly.
const maxWhole = 1 << 53

// Validate checks what the schema cannot. A domain-update needs non-zero
// hits and window, as the original's handler asks (a negative one, like
// scale 0, makes the crawlers skip the domain), within what the Redis
// Monitor reads (±2^53). The domain of an update must be written as the
// crawlers' queues name it, the registered domain of a URL's host in lower
// case ("example.co.uk" for www.example.co.uk, "127.0.0.1." for an IP
// address), or the change would never apply to any queue; a remove only
// needs a domain without spaces or control characters, so that an entry
// written by hand can be removed.
func (Handler) Validate(req plugin.Request) error {
	action, _ := req["action"].(string)
	domain, _ := req["domain"].(string)
	if strings.TrimSpace(domain) == "" || strings.IndexFunc(domain, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return fmt.Errorf("domain: %q is empty or holds spaces or control characters", domain)
	}
	if strings.HasSuffix(action, "-update") {
		notHost := strings.ContainsAny(domain, "/:@?#") && net.ParseIP(strings.TrimSuffix(domain, ".")) == nil
		if rediskeys.Domain(domain) != domain || notHost {
			return fmt.Errorf("domain: %q is not a domain as queues name it (the registered domain of a URL's host, lower case): use %q", domain, rediskeys.Domain(hostOf(domain)))
		}
	}
	if action == "domain-update" {
		for _, field := range []string{"hits", "window"} {
			n, _ := req[field].(json.Number)
			switch i, err := strconv.ParseInt(string(n), 10, 64); {
			case err != nil || i > maxWhole || i < -maxWhole:
				return fmt.Errorf("%s: %s is out of range (-2^53 to 2^53)", field, n)
			case i == 0:
				return fmt.Errorf("%s: missing or 0; a domain-update needs non-zero hits and window", field)
			}
		}
	}
	return nil
}

// hostOf is the host part of something written as a URL or host:port.
func hostOf(s string) string {
	if u, err := url.Parse(s); err == nil && u.Host != "" {
		return u.Hostname()
	}
	if h, _, err := net.SplitHostPort(s); err == nil {
		return h
	}
	return s
}

// Handle writes {"domain", "uuid"} (plus hits, window and scale for a
// domain-update).
func (Handler) Handle(ctx context.Context, req plugin.Request, tx redis.Pipeliner) (string, error) {
	str := func(k string) string { return plugin.Field(req, k) }
	value := map[string]any{"domain": req["domain"], "uuid": req["uuid"]}
	if str("action") == "domain-update" {
		value["hits"], value["window"], value["scale"] = req["hits"], req["window"], req["scale"]
	}
	b, err := wirejson.Append(nil, value, wirejson.KafkaMonitor)
	if err != nil {
		return "", plugin.Reject("encode request: %v", err)
	}
	tx.Set(ctx, rediskeys.ZooKeeperKey(str("action"), str("domain"), str("appid")), b, 0)
	return "Added zookeeper action to Redis", nil
}
