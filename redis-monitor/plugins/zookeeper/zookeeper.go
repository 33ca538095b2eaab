// Package zookeeper is the Redis Monitor's domain configuration plugin (the
// original's ZookeeperMonitor). The Kafka Monitor's Zookeeper API writes a
// change at zk:<action>:<domain>:<appid>, with {"domain", "uuid"} (plus
// "hits", "window" and "scale" for a domain-update) as the value; this
// plugin applies it to the document the crawlers obey (see package
// domainconfig: a ZooKeeper node, or a Redis key when ZOOKEEPER_HOSTS is
// empty) and answers
//
//	{"action": ..., "domain": ..., "server_time": ..., "uuid": ..., "appid": ...}
//
// once the change is stored, with "error": "Unable to load Zookeeper
// config" or "Unable to store Zookeeper config" added when the document
// could not be parsed or the store refused the write, as the original
// answers. The actions:
//
//	domain-update     set the domain's throttle (hits per window seconds, times scale)
//	domain-remove     drop the domain's throttle
//	blacklist-update  add the domain to the blacklist (once)
//	blacklist-remove  take it off the blacklist
//
// Several Redis Monitors may apply changes at once; none is lost (each is a
// version-checked read-modify-write). A value that is not a valid request
// (not JSON, no uuid, a domain-update without whole-number hits and window)
// or an unknown action is an error: the monitor counts it as a failure and
// drops the key after its retries. Unlike the original, a change whose read
// failed never writes a document built from nothing.
//
// ZooKeeper is not needed to start: the plugin connects in the background
// and reconnects after an outage, with back-off and one warning per failed
// attempt. While it is away, the zk:* keys are not ready
// (CheckPrecondition), so they wait in Redis, neither answered nor counted
// as failures, and the other plugins carry on; a change whose connection is
// lost midway returns plugin.ErrUnavailable, which leaves its key too. Each
// waiting change is applied, and answered, once ZooKeeper is back.
package zookeeper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/redis-monitor/plugin"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/domainconfig"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
)

// Key is the plugin's name in the PLUGINS setting.
const Key = "plugins.zookeeper_monitor.ZookeeperMonitor"

func init() { plugin.Register(Key, func() plugin.Plugin { return &Monitor{} }) }

// DefaultUpdateTimeout bounds one change, including the wait for a
// connection lost midway to come back; a change that does not finish in
// time for want of a connection is left for a later cycle.
const DefaultUpdateTimeout = 10 * time.Second

// The original's error answers.
const (
	errLoad  = "Unable to load Zookeeper config"
	errStore = "Unable to store Zookeeper config"
)

// Monitor applies domain configuration changes.
type Monitor struct {
	plugin.Base
	// UpdateTimeout bounds one change; zero means DefaultUpdateTimeout.
	UpdateTimeout time.Duration

	store domainconfig.Store
	away  atomic.Bool // the store was last seen unreachable
}

// Name is the stats name.
func (*Monitor) Name() string { return "ZookeeperMonitor" }

// Pattern matches zk:<action>:<domain>:<appid>.
func (*Monitor) Pattern() string { return "zk:*:*:*" }

// Setup opens the store the ZOOKEEPER_HOSTS, ZOOKEEPER_ASSIGN_PATH and
// ZOOKEEPER_ID settings name. It does not wait for ZooKeeper: the
// connection is made in the background.
func (m *Monitor) Setup(ctx context.Context, env plugin.Env) error {
	if err := m.Base.Setup(ctx, env); err != nil {
		return err
	}
	store, err := domainconfig.FromSettings(env.Settings, env.Redis, env.Logger)
	if err != nil {
		return fmt.Errorf("zookeeper monitor: %w", err)
	}
	m.store = store
	return nil
}

// CheckPrecondition says a change is ready while the store can be reached:
// while ZooKeeper is away the keys wait in Redis. The first key that finds
// it away, and the first that finds it back, say so in the log.
func (m *Monitor) CheckPrecondition(context.Context, string, string) (bool, error) {
	if !m.store.Connected() {
		if !m.away.Swap(true) {
			m.Logger.Warning("Not connected to ZooKeeper; zookeeper requests wait in Redis until it is")
		}
		return false, nil
	}
	if m.away.Swap(false) {
		m.Logger.Info("Connected to ZooKeeper; applying the waiting zookeeper requests")
	}
	return true, nil
}

// Close releases the ZooKeeper connection.
func (m *Monitor) Close() error {
	if m.store == nil {
		return nil
	}
	return m.store.Close()
}

// change is one parsed request.
type change struct {
	action, domain, appID, uuid string
	edit                        func(*domainconfig.Document)
}

// Handle applies the change at key and answers it.
func (m *Monitor) Handle(ctx context.Context, key, value string) error {
	c, err := parseChange(key, value)
	if err != nil {
		return err
	}
	extra := logfactory.Extra{"action": c.action, "appid": c.appID, "uuid": c.uuid, "domain": c.domain}
	m.Logger.Info("Received zookeeper request", extra)

	answer := map[string]any{
		"action": c.action, "domain": c.domain, "server_time": m.ServerTime(),
		"uuid": c.uuid, "appid": c.appID,
	}
	timeout := m.UpdateTimeout
	if timeout <= 0 {
		timeout = DefaultUpdateTimeout
	}
	uctx, cancel := context.WithTimeout(ctx, timeout)
	err = m.store.Update(uctx, func(d *domainconfig.Document) error { c.edit(d); return nil })
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return err // stopping: the key stays for the next monitor
		}
		if errors.Is(err, domainconfig.ErrUnavailable) {
			// Not applied: answered once it is, from a later cycle.
			return fmt.Errorf("zookeeper request %s: %w: %w", key, plugin.ErrUnavailable, err)
		}
		answer["error"] = errStore
		if errors.Is(err, domainconfig.ErrRead) {
			answer["error"] = errLoad
		}
		m.Logger.Error(answer["error"].(string), logfactory.Extra{
			"action": c.action, "appid": c.appID, "uuid": c.uuid, "domain": c.domain, "error": err.Error()})
	}

	if err := m.Publish(ctx, answer); err != nil {
		extra["success"] = false
		m.Logger.Error("Failed to send zookeeper update to kafka", extra)
		return err
	}
	extra["success"] = true
	m.Logger.Info("Sent zookeeper update to kafka", extra)
	return nil
}

// parseChange reads zk:<action>:<domain>:<appid> and its value. The domain
// may contain ":" (the value's "domain" tells where it ends); otherwise the
// appid is everything after the third ":".
func parseChange(key, value string) (change, error) {
	fail := func(format string, args ...any) (change, error) {
		return change{}, fmt.Errorf("zookeeper request %s: %s", key, fmt.Sprintf(format, args...))
	}
	rest, ok := strings.CutPrefix(key, "zk:")
	if !ok {
		return fail("want zk:<action>:<domain>:<appid>")
	}
	action, rest, ok := strings.Cut(rest, ":")
	if !ok {
		return fail("want zk:<action>:<domain>:<appid>")
	}

	dec := json.NewDecoder(strings.NewReader(value))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil || v == nil {
		return fail("value %q is not a JSON object", preview(value))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fail("value %q has more after its JSON object", preview(value))
	}
	uuid, ok := v["uuid"].(string)
	if !ok {
		return fail("value has no uuid string")
	}

	c := change{action: action, uuid: uuid}
	if d, ok := v["domain"].(string); ok && strings.HasPrefix(rest, d+":") {
		c.domain, c.appID = d, rest[len(d)+1:]
	} else if c.domain, c.appID, ok = strings.Cut(rest, ":"); !ok {
		return fail("want zk:<action>:<domain>:<appid>")
	}

	switch action {
	case "domain-update":
		hits, err := wholeNumber(v, "hits")
		if err != nil {
			return fail("domain-update: %v", err)
		}
		window, err := wholeNumber(v, "window")
		if err != nil {
			return fail("domain-update: %v", err)
		}
		scale := 1.0 // the schema's default
		if raw := v["scale"]; raw != nil {
			n, _ := raw.(json.Number)
			f, err := n.Float64()
			if err != nil {
				return fail("domain-update: scale %v is not a number", raw)
			}
			scale = f
		}
		c.edit = func(d *domainconfig.Document) { d.UpdateDomain(c.domain, hits, window, scale) }
	case "domain-remove":
		c.edit = func(d *domainconfig.Document) { d.RemoveDomain(c.domain) }
	case "blacklist-update":
		c.edit = func(d *domainconfig.Document) { d.AddBlacklist(c.domain) }
	case "blacklist-remove":
		c.edit = func(d *domainconfig.Document) { d.RemoveBlacklist(c.domain) }
	default:
		return fail("unknown action %q (want domain-update, domain-remove, blacklist-update or blacklist-remove)", action)
	}
	return c, nil
}

// wholeNumber reads v[name] as an integer; 60.0 counts as 60.
func wholeNumber(v map[string]any, name string) (int, error) {
	n, ok := v[name].(json.Number)
	if !ok {
		if v[name] == nil {
			return 0, fmt.Errorf("%s is missing", name)
		}
		return 0, fmt.Errorf("%s %v is not a number", name, v[name])
	}
	if i, err := strconv.Atoi(n.String()); err == nil {
		return i, nil
	}
	f, err := n.Float64()
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, fmt.Errorf("%s %s is not a whole number", name, n)
	}
	return int(f), nil
}

// preview shortens a value for an error message.
func preview(s string) string {
	const max = 200
	if len(s) <= max {
		return s
	}
	return s[:max] + "..."
}
