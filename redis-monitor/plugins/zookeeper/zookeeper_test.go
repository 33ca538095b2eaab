package zookeeper_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/redis-monitor/plugin"
	"github.com/scrapycluster/scrapy-cluster-go/redis-monitor/plugin/plugintest"
	"github.com/scrapycluster/scrapy-cluster-go/redis-monitor/plugins/zookeeper"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/domainconfig"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// zkServer is shared by the tests that do not stop it; each test uses its
// own node path.
var zkServer harness.SharedZooKeeper

func TestMain(m *testing.M) { zkServer.Main(m) }

var runSeq atomic.Int64

// cluster is a Redis and a document store, as a Redis Monitor sees them.
type cluster struct {
	name string
	rdb  *redis.Client
	// overrides are the settings naming the store.
	overrides map[string]any
	// document returns the stored document, as YAML.
	document func(t *testing.T) string
	// put stores a document as it is, behind the plugin's back (Redis
	// only: this module has no ZooKeeper client of its own).
	put func(t *testing.T, data string)
}

// monitor sets up a plugin on c as the monitor does.
func (c cluster) monitor(t *testing.T) *plugintest.Fixture {
	t.Helper()
	return plugintest.Setup(t, &zookeeper.Monitor{}, c.rdb, domainconfig.Settings(), c.overrides)
}

func folder(t *testing.T) string {
	name := regexp.MustCompile(`[^A-Za-z0-9_-]+`).ReplaceAllString(t.Name(), "_")
	return fmt.Sprintf("/%s-%d/crawler/", name, runSeq.Add(1))
}

func zooKeeperCluster(t *testing.T, z *harness.ZooKeeper) cluster {
	t.Helper()
	path := folder(t) + "all"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// An independent client, as a crawler would have.
	store, err := domainconfig.DialZooKeeper(ctx, []string{z.Addr}, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return cluster{
		name: "ZooKeeper",
		rdb:  harness.StartRedis(t).TestClient(t),
		overrides: map[string]any{
			"ZOOKEEPER_HOSTS": z.Addr, "ZOOKEEPER_ASSIGN_PATH": path[:len(path)-len("all")], "ZOOKEEPER_ID": "all",
		},
		document: func(t *testing.T) string {
			t.Helper()
			d, err := store.Get(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			return string(d.Marshal())
		},
	}
}

func redisCluster(t *testing.T) cluster {
	t.Helper()
	path := folder(t) + "all"
	rdb := harness.StartRedis(t).TestClient(t)
	key := rediskeys.DomainConfigKey(path)
	return cluster{
		name: "Redis",
		rdb:  rdb,
		overrides: map[string]any{
			"ZOOKEEPER_HOSTS": "", "ZOOKEEPER_ASSIGN_PATH": path[:len(path)-len("all")], "ZOOKEEPER_ID": "all",
		},
		document: func(t *testing.T) string {
			t.Helper()
			data, err := rdb.Get(context.Background(), key).Result()
			if errors.Is(err, redis.Nil) {
				return ""
			}
			if err != nil {
				t.Fatal(err)
			}
			return data
		},
		put: func(t *testing.T, data string) {
			t.Helper()
			if err := rdb.Set(context.Background(), key, data, 0).Err(); err != nil {
				t.Fatal(err)
			}
		},
	}
}

// forEachStore runs test with the document in ZooKeeper and in Redis.
func forEachStore(t *testing.T, test func(t *testing.T, c cluster)) {
	t.Run("ZooKeeper", func(t *testing.T) { test(t, zooKeeperCluster(t, zkServer.ZooKeeper)) })
	t.Run("Redis", func(t *testing.T) { test(t, redisCluster(t)) })
}

// request writes a request at key as the Kafka Monitor does and has the
// plugin process it, as the monitor's cycles would until it is ready (the
// ZooKeeper connection is made in the background); it fails the test
// unless the key was handled.
func request(t *testing.T, f *plugintest.Fixture, key, value string) {
	t.Helper()
	ctx := context.Background()
	if err := f.Env.Redis.Set(ctx, key, value, 0).Err(); err != nil {
		t.Fatal(err)
	}
	process(t, f, key)
	if n := f.Env.Redis.Exists(ctx, key).Val(); n != 0 {
		t.Errorf("%s still exists after it was handled", key)
	}
}

// process has the plugin process key once it is ready, within 30 s, and
// fails the test unless it was handled without error.
func process(t *testing.T, f *plugintest.Fixture, key string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		handled, err := f.Process(context.Background(), key)
		if err != nil || handled {
			if err != nil || !handled {
				t.Fatalf("Process(%s) = %v, %v; want handled without error", key, handled, err)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Process(%s): not ready within 30 s", key)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// specAnswer is one of the spec's example answers with server_time set to
// the fixture's clock, read as a consumer of the topic reads it.
func specAnswer(t *testing.T, f *plugintest.Fixture, example string) map[string]any {
	t.Helper()
	var want map[string]any
	if err := json.Unmarshal([]byte(example), &want); err != nil {
		t.Fatal(err)
	}
	want["server_time"] = float64(f.Clock.Unix())
	return want
}

// assertAnswer compares an answer with want field by field.
func assertAnswer(t *testing.T, got, want map[string]any) {
	t.Helper()
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if !reflect.DeepEqual(got[k], want[k]) {
			t.Errorf("answer[%q] = %#v, want %#v", k, got[k], want[k])
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("answer has %q = %#v, which the spec's answer does not", k, got[k])
		}
	}
}

func TestTheSpecsExamplesChangeTheDocumentAndAreAnswered(t *testing.T) {
	steps := []struct {
		name, key, value, answer, document string
	}{
		{"Domain Update", "zk:domain-update:dmoz.org:madisonTest",
			`{"domain":"dmoz.org","uuid":"abc123","hits":60,"window":60,"scale":0.9}`,
			`{"action": "domain-update", "domain": "dmoz.org", "server_time": 1464402128, "uuid": "abc123", "appid": "madisonTest"}`,
			"blacklist: []\ndomains:\n  dmoz.org:\n    hits: 60\n    scale: 0.9\n    window: 60\n"},
		{"Blacklist Update", "zk:blacklist-update:ebay.com:madisonTest",
			`{"domain":"ebay.com","uuid":"abc123"}`,
			`{"action": "blacklist-update", "domain": "ebay.com", "server_time": 1464402173, "uuid": "abc123", "appid": "madisonTest"}`,
			"blacklist:\n- ebay.com\ndomains:\n  dmoz.org:\n    hits: 60\n    scale: 0.9\n    window: 60\n"},
		{"Domain Remove", "zk:domain-remove:dmoz.org:madisonTest",
			`{"domain":"dmoz.org","uuid":"abc123"}`,
			`{"action": "domain-remove", "domain": "dmoz.org", "server_time": 1464402146, "uuid": "abc123", "appid": "madisonTest"}`,
			"blacklist:\n- ebay.com\ndomains: {}\n"},
		{"Blacklist Remove", "zk:blacklist-remove:ebay.com:madisonTest",
			`{"domain":"ebay.com","uuid":"abc123"}`,
			`{"action": "blacklist-remove", "domain": "ebay.com", "server_time": 1464402160, "uuid": "abc123", "appid": "madisonTest"}`,
			"blacklist: []\ndomains: {}\n"},
	}
	forEachStore(t, func(t *testing.T, c cluster) {
		f := c.monitor(t)
		for i, s := range steps {
			request(t, f, s.key, s.value)
			answers := f.Published()
			if len(answers) != i+1 {
				t.Fatalf("%s: %d answers published, want %d", s.name, len(answers), i+1)
			}
			assertAnswer(t, answers[i], specAnswer(t, f, s.answer))
			if got := c.document(t); got != s.document {
				t.Errorf("%s: document is\n%s\nwant\n%s", s.name, got, s.document)
			}
		}
	})
}

func TestRepeatedChangesKeepTheDocumentAsItIs(t *testing.T) {
	forEachStore(t, func(t *testing.T, c cluster) {
		f := c.monitor(t)
		for range 2 {
			request(t, f, "zk:blacklist-update:ebay.com:app", `{"domain":"ebay.com","uuid":"u1"}`)
			request(t, f, "zk:domain-update:dmoz.org:app", `{"domain":"dmoz.org","uuid":"u2","hits":10,"window":60,"scale":1.0}`)
			request(t, f, "zk:domain-remove:absent.com:app", `{"domain":"absent.com","uuid":"u3"}`)
			request(t, f, "zk:blacklist-remove:absent.com:app", `{"domain":"absent.com","uuid":"u4"}`)
		}
		want := "blacklist:\n- ebay.com\ndomains:\n  dmoz.org:\n    hits: 10\n    scale: 1.0\n    window: 60\n"
		if got := c.document(t); got != want {
			t.Errorf("document is\n%s\nwant\n%s", got, want)
		}
		for _, a := range f.Published() {
			if _, failed := a["error"]; failed {
				t.Errorf("answer %v has an error", a)
			}
		}
	})
}

func TestDomainUpdateValues(t *testing.T) {
	tests := []struct {
		name, value, want string
	}{
		{"hits and window written as floats", `{"domain":"a.com","uuid":"u","hits":60.0,"window":30.0,"scale":0.5}`,
			"blacklist: []\ndomains:\n  a.com:\n    hits: 60\n    scale: 0.5\n    window: 30\n"},
		{"scale missing means 1.0", `{"domain":"a.com","uuid":"u","hits":5,"window":30}`,
			"blacklist: []\ndomains:\n  a.com:\n    hits: 5\n    scale: 1.0\n    window: 30\n"},
		{"scale as an integer", `{"domain":"a.com","uuid":"u","hits":5,"window":30,"scale":0}`,
			"blacklist: []\ndomains:\n  a.com:\n    hits: 5\n    scale: 0.0\n    window: 30\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := redisCluster(t)
			request(t, c.monitor(t), "zk:domain-update:a.com:app", tt.value)
			if got := c.document(t); got != tt.want {
				t.Errorf("document is\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestADomainWithColonsIsTakenWholeFromTheValue(t *testing.T) {
	c := redisCluster(t)
	f := c.monitor(t)
	request(t, f, "zk:blacklist-update:example.com:8080:my:app", `{"domain":"example.com:8080","uuid":"u"}`)
	a := f.Published()[0]
	if a["domain"] != "example.com:8080" || a["appid"] != "my:app" {
		t.Errorf("answer domain %v appid %v, want example.com:8080 and my:app", a["domain"], a["appid"])
	}
	if got, want := c.document(t), "blacklist:\n- example.com:8080\ndomains: {}\n"; got != want {
		t.Errorf("document is %q, want %q", got, want)
	}
}

func TestMalformedRequestsAreRejected(t *testing.T) {
	const key = "zk:domain-update:a.com:app"
	tests := []struct {
		name, key, value string
	}{
		{"not JSON", key, `hits=10`},
		{"JSON but not an object", key, `["a.com"]`},
		{"null", key, `null`},
		{"trailing data", key, `{"domain":"a.com","uuid":"u","hits":1,"window":1} {}`},
		{"no uuid", key, `{"domain":"a.com","hits":10,"window":60,"scale":1.0}`},
		{"uuid not a string", key, `{"domain":"a.com","uuid":7,"hits":10,"window":60}`},
		{"domain-update without hits", key, `{"domain":"a.com","uuid":"u","window":60}`},
		{"domain-update without window", key, `{"domain":"a.com","uuid":"u","hits":10}`},
		{"domain-update with hits as text", key, `{"domain":"a.com","uuid":"u","hits":"10","window":60}`},
		{"domain-update with a fraction of a hit", key, `{"domain":"a.com","uuid":"u","hits":10.5,"window":60}`},
		{"domain-update with scale as text", key, `{"domain":"a.com","uuid":"u","hits":10,"window":60,"scale":"half"}`},
		{"unknown action", "zk:domain-delete:a.com:app", `{"domain":"a.com","uuid":"u"}`},
		{"key without an appid", "zk:blacklist-update:a.com", `{"domain":"a.com","uuid":"u"}`},
	}
	c := redisCluster(t)
	const before = "blacklist:\n- ebay.com\ndomains: {}\n"
	c.put(t, before)
	f := c.monitor(t)
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := c.rdb.Set(ctx, tt.key, tt.value, 0).Err(); err != nil {
				t.Fatal(err)
			}
			defer c.rdb.Del(ctx, tt.key)
			handled, err := f.Process(ctx, tt.key)
			if err == nil {
				t.Errorf("Process(%s = %s) = %v, nil; want an error", tt.key, tt.value, handled)
			} else if !regexp.MustCompile(regexp.QuoteMeta(tt.key)).MatchString(err.Error()) {
				t.Errorf("error %q does not name the key", err)
			}
		})
	}
	if got := f.Published(); len(got) != 0 {
		t.Errorf("published %v for malformed requests, want nothing", got)
	}
	if got := c.document(t); got != before {
		t.Errorf("document is %q after malformed requests, want %q", got, before)
	}
}

func TestAnUnreadableDocumentIsAnsweredWithTheOriginalsError(t *testing.T) {
	c := redisCluster(t)
	const bad = "blacklist: ebay.com\n"
	c.put(t, bad)
	f := c.monitor(t)
	request(t, f, "zk:blacklist-update:amazon.com:app", `{"domain":"amazon.com","uuid":"u"}`)
	assertAnswer(t, f.Published()[0], map[string]any{
		"action": "blacklist-update", "domain": "amazon.com", "server_time": float64(f.Clock.Unix()),
		"uuid": "u", "appid": "app", "error": "Unable to load Zookeeper config",
	})
	if got := c.document(t); got != bad {
		t.Errorf("document is %q, want the unreadable one left alone (the original would have replaced it)", got)
	}
}

func TestARefusedWriteIsAnsweredWithTheOriginalsError(t *testing.T) {
	c := redisCluster(t)
	f := c.monitor(t)
	ctx := context.Background()
	// Redis now refuses writes (NOREPLICAS) and still serves reads. (Handle
	// is called directly: the monitor could not delete the key either.)
	if err := c.rdb.ConfigSet(ctx, "min-replicas-to-write", "1").Err(); err != nil {
		t.Fatal(err)
	}
	err := f.Plugin.Handle(ctx, "zk:blacklist-update:ebay.com:app", `{"domain":"ebay.com","uuid":"u"}`)
	if err != nil {
		t.Fatalf("Handle() = %v, want the failure answered", err)
	}
	if err := c.rdb.ConfigSet(ctx, "min-replicas-to-write", "0").Err(); err != nil {
		t.Fatal(err)
	}
	assertAnswer(t, f.Published()[0], map[string]any{
		"action": "blacklist-update", "domain": "ebay.com", "server_time": float64(f.Clock.Unix()),
		"uuid": "u", "appid": "app", "error": "Unable to store Zookeeper config",
	})
	if got := c.document(t); got != "" {
		t.Errorf("document is %q after a refused write, want none", got)
	}
}

// TestAChangeMadeWhileZooKeeperIsDownWaitsAndIsAnsweredOnceStored: an
// outage is "not yet", never a failure: the key stays, nothing is answered,
// and the change is applied and answered once ZooKeeper is back.
func TestAChangeMadeWhileZooKeeperIsDownWaitsAndIsAnsweredOnceStored(t *testing.T) {
	z := harness.StartZooKeeper(t) // its own server: this test stops it
	c := zooKeeperCluster(t, z)
	m := &zookeeper.Monitor{UpdateTimeout: 300 * time.Millisecond}
	f := plugintest.Setup(t, m, c.rdb, domainconfig.Settings(), c.overrides)
	request(t, f, "zk:blacklist-update:ebay.com:app", `{"domain":"ebay.com","uuid":"u1"}`)

	z.Stop()
	ctx := context.Background()
	const key, value = "zk:domain-update:dmoz.org:app", `{"domain":"dmoz.org","uuid":"u2","hits":60,"window":60,"scale":0.9}`
	if err := c.rdb.Set(ctx, key, value, 0).Err(); err != nil {
		t.Fatal(err)
	}
	// Until the client notices the outage a change may be tried, and
	// found unreachable; then the key is not ready.
	waitForNotReady := time.Now().Add(30 * time.Second)
	for {
		handled, err := f.Process(ctx, key)
		if handled && !errors.Is(err, plugin.ErrUnavailable) {
			t.Fatalf("Process(%s) while ZooKeeper is down = %v, %v; want not ready, or plugin.ErrUnavailable", key, handled, err)
		}
		if !handled && err == nil {
			break
		}
		if time.Now().After(waitForNotReady) {
			t.Fatal("the key is still taken 30 s into the outage")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A change whose connection is lost midway is not applied either.
	if err := m.Handle(ctx, key, value); !errors.Is(err, plugin.ErrUnavailable) {
		t.Errorf("Handle() while ZooKeeper is down = %v, want plugin.ErrUnavailable", err)
	}
	if got := f.Published(); len(got) != 1 {
		t.Errorf("answers while ZooKeeper is down: %v; want none but the first change's", got[1:])
	}
	if n := c.rdb.Exists(ctx, key).Val(); n != 1 {
		t.Fatal("the request key is gone while ZooKeeper is down")
	}

	if err := z.Restart(); err != nil {
		t.Fatal(err)
	}
	process(t, f, key)
	answers := f.Published()
	if len(answers) != 2 {
		t.Fatalf("answers %v, want the two changes'", answers)
	}
	assertAnswer(t, answers[1], map[string]any{
		"action": "domain-update", "domain": "dmoz.org", "server_time": float64(f.Clock.Unix()), "uuid": "u2", "appid": "app",
	})
	if got, want := c.document(t), "blacklist:\n- ebay.com\ndomains:\n  dmoz.org:\n    hits: 60\n    scale: 0.9\n    window: 60\n"; got != want {
		t.Errorf("document is %q, want %q", got, want)
	}
}

func TestSetupNeedsNoZooKeeperAndChangesWaitForIt(t *testing.T) {
	z := harness.StartZooKeeper(t) // its own server: this test stops it
	c := zooKeeperCluster(t, z)
	z.Stop()
	f := c.monitor(t)
	ctx := context.Background()
	const key = "zk:blacklist-update:ebay.com:app"
	if err := c.rdb.Set(ctx, key, `{"domain":"ebay.com","uuid":"u"}`, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if handled, err := f.Process(ctx, key); handled || err != nil {
		t.Fatalf("Process(%s) with ZooKeeper never seen = %v, %v; want not ready", key, handled, err)
	}
	if err := z.Restart(); err != nil {
		t.Fatal(err)
	}
	process(t, f, key)
	if a := f.Published(); len(a) != 1 || a[0]["error"] != nil {
		t.Errorf("answers %v, want one without an error", a)
	}
	if got, want := c.document(t), "blacklist:\n- ebay.com\ndomains: {}\n"; got != want {
		t.Errorf("document is %q, want %q", got, want)
	}
}

func TestStoppingLeavesTheRequestForTheNextMonitor(t *testing.T) {
	z := harness.StartZooKeeper(t)
	c := zooKeeperCluster(t, z)
	f := c.monitor(t)
	z.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := f.Plugin.Handle(ctx, "zk:blacklist-update:ebay.com:app", `{"domain":"ebay.com","uuid":"u"}`)
	if err == nil || ctx.Err() == nil {
		t.Errorf("Handle() = %v when its ctx ended, want an error", err)
	}
	if got := f.Published(); len(got) != 0 {
		t.Errorf("published %v while stopping, want nothing", got)
	}
}

// TestMonitorsChangingTheDocumentAtOnceLoseNothing: several Redis Monitors,
// each with its own connection, handling different requests at once.
func TestMonitorsChangingTheDocumentAtOnceLoseNothing(t *testing.T) {
	forEachStore(t, func(t *testing.T, c cluster) {
		const monitors, each = 5, 4
		fixtures := make([]*plugintest.Fixture, monitors)
		for i := range fixtures {
			fixtures[i] = c.monitor(t)
		}
		var wg sync.WaitGroup
		errs := make(chan error, monitors*each)
		for i, f := range fixtures {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range each {
					domain := fmt.Sprintf("d%d-%d.com", i, j)
					key := "zk:blacklist-update:" + domain + ":app"
					value := fmt.Sprintf(`{"domain":%q,"uuid":"u"}`, domain)
					errs <- f.Plugin.Handle(context.Background(), key, value)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
		doc, err := domainconfig.Parse([]byte(c.document(t)))
		if err != nil {
			t.Fatal(err)
		}
		if len(doc.Blacklist) != monitors*each {
			t.Errorf("blacklist has %d domains, want %d: %q", len(doc.Blacklist), monitors*each, doc.Blacklist)
		}
		for _, f := range fixtures {
			for _, a := range f.Published() {
				if a["error"] != nil {
					t.Errorf("answer %v has an error", a)
				}
			}
		}
	})
}

func TestSetupRefusesAnInvalidPath(t *testing.T) {
	s, err := settings.Load(domainconfig.Settings(), settings.Options{NoEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	s.Set("ZOOKEEPER_HOSTS", "")
	s.Set("ZOOKEEPER_ASSIGN_PATH", "no-slash/")
	err = (&zookeeper.Monitor{}).Setup(context.Background(), plugin.Env{Settings: s, Redis: harness.StartRedis(t).TestClient(t)})
	if err == nil {
		t.Error("Setup accepted a relative ZOOKEEPER_ASSIGN_PATH")
	}
}

func TestTheMonitorLoadsTheOriginalsPluginName(t *testing.T) {
	loaded, err := plugin.Load(map[string]any{zookeeper.Key: 500})
	if err != nil {
		t.Fatal(err)
	}
	if len(loaded) != 1 {
		t.Fatalf("loaded %d plugins, want 1", len(loaded))
	}
	p := loaded[0].Plugin
	if p.Name() != "ZookeeperMonitor" || p.Pattern() != "zk:*:*:*" {
		t.Errorf("loaded %s with pattern %s, want ZookeeperMonitor with zk:*:*:*", p.Name(), p.Pattern())
	}
}
