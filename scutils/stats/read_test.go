package stats

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// hitsAt adds one hit per age to the window key base:<window>, as a writer
// that never trimmed leaves it.
func hitsAt(t *testing.T, rdb *redis.Client, now time.Time, key string, ages ...time.Duration) {
	t.Helper()
	for i, age := range ages {
		z := redis.Z{Score: float64(now.Add(-age).UnixNano()) / 1e9, Member: fmt.Sprint(key, i)}
		if err := rdb.ZAdd(context.Background(), key, z).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// events adds n unique events to the HyperLogLog key.
func events(t *testing.T, rdb *redis.Client, key string, n int) {
	t.Helper()
	for i := range n {
		if err := rdb.PFAdd(context.Background(), key, fmt.Sprint("event", i)).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

func fill(t *testing.T, rdb *redis.Client, queue string, n int) {
	t.Helper()
	for i := range n {
		if err := rdb.ZAdd(context.Background(), queue, redis.Z{Score: -1, Member: fmt.Sprint(i)}).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

func heartbeat(t *testing.T, rdb *redis.Client, key string) {
	t.Helper()
	if err := rdb.Set(context.Background(), key, 1, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
}

// writeClusterState writes a small cluster's stats: a Kafka Monitor on two
// hosts, two link crawlers on two hosts and a wandering one, two spiders'
// queues. The Kafka Monitor's total has a hit too old for its window.
func writeClusterState(t *testing.T, rdb *redis.Client, now time.Time) {
	km := func(name string) string { return rediskeys.StatsKey("kafka-monitor", name) }
	heartbeat(t, rdb, rediskeys.HeartbeatKey("kafka-monitor", "host2", "b1"))
	heartbeat(t, rdb, rediskeys.HeartbeatKey("kafka-monitor", "host1", "a2"))
	heartbeat(t, rdb, rediskeys.HeartbeatKey("kafka-monitor", "host1", "a1"))
	hitsAt(t, rdb, now, km("total")+":900", time.Second, time.Minute, time.Hour)
	events(t, rdb, km("total")+":lifetime", 5)
	hitsAt(t, rdb, now, km("fail")+":900", time.Second)
	hitsAt(t, rdb, now, km("fail")+":21600", time.Second, time.Hour)
	hitsAt(t, rdb, now, km("ScraperHandler")+":900", time.Second, time.Minute)

	heartbeat(t, rdb, rediskeys.CrawlerHeartbeatKey("host1", "link", "c1"))
	heartbeat(t, rdb, rediskeys.CrawlerHeartbeatKey("host2", "link", "c2"))
	heartbeat(t, rdb, rediskeys.CrawlerHeartbeatKey("host2", "wandering", "c3"))
	hitsAt(t, rdb, now, rediskeys.CrawlerStatusKey("host1", "link", "200")+":900", time.Second, time.Second)
	hitsAt(t, rdb, now, rediskeys.CrawlerStatusKey("host2", "link", "200")+":900", time.Second)
	hitsAt(t, rdb, now, rediskeys.CrawlerStatusKey("host2", "wandering", "404")+":900", time.Second)

	fill(t, rdb, rediskeys.QueueKey("link", "istresearch.com"), 3)
	fill(t, rdb, rediskeys.QueueKey("link", "dmoz.org"), 2)
	fill(t, rdb, rediskeys.QueueKey("wandering", "example.com"), 1)
}

func TestReaderReadsTypedStatsSummedAndSorted(t *testing.T) {
	rdb := harness.StartRedis(t).TestClient(t)
	ctx := context.Background()
	now := time.Now()
	writeClusterState(t, rdb, now)
	r := Reader{Redis: rdb, Now: now}

	wantKM := &ComponentStats{
		Total:   Counts{"900": 2, "lifetime": 5},
		Fail:    Counts{"900": 1, "21600": 2},
		Plugins: map[string]Counts{"ScraperHandler": {"900": 2}},
		Nodes:   map[string][]string{"host1": {"a1", "a2"}, "host2": {"b1"}},
	}
	wantCrawlers := &CrawlerStats{
		Spiders: map[string]*SpiderStats{
			"link":      {Running: 2, Hosts: map[string]int{"host1": 1, "host2": 1}, Codes: map[string]Counts{"200": {"900": 3}}},
			"wandering": {Running: 1, Hosts: map[string]int{"host2": 1}, Codes: map[string]Counts{"404": {"900": 1}}},
		},
		Machines: map[string]map[string]Counts{
			"host1": {"200": {"900": 2}},
			"host2": {"200": {"900": 1}, "404": {"900": 1}},
		},
		Running: 3,
	}
	wantQueues := &QueueStats{
		Spiders: map[string]*SpiderQueue{
			"link":      {Domains: []DomainBacklog{{Domain: "dmoz.org", Backlog: 2}, {Domain: "istresearch.com", Backlog: 3}}, SpiderBacklog: 5, NumDomains: 2},
			"wandering": {Domains: []DomainBacklog{{Domain: "example.com", Backlog: 1}}, SpiderBacklog: 1, NumDomains: 1},
		},
		TotalBacklog: 6,
	}
	empty := &ComponentStats{Total: Counts{}, Fail: Counts{}, Plugins: map[string]Counts{}, Nodes: map[string][]string{}}

	check(t, "Component(kafka-monitor)", must(r.Component(ctx, "kafka-monitor"))(t), wantKM)
	crawlers := must(r.Crawlers(ctx))(t)
	check(t, "Crawlers", crawlers, wantCrawlers)
	if n := crawlers.UniqueSpiders(); n != 2 {
		t.Errorf("UniqueSpiders = %d, want 2", n)
	}
	checkQueues(t, r, wantQueues)
	crawlers, _, err := r.CrawlersAndQueues(ctx)
	if err != nil {
		t.Fatal(err)
	}
	check(t, "CrawlersAndQueues crawlers", crawlers, wantCrawlers)
	check(t, "Cluster", must(r.Cluster(ctx))(t), &ClusterStats{
		Components: map[string]*ComponentStats{"kafka-monitor": wantKM, "redis-monitor": empty, "rest": empty},
		Crawlers:   wantCrawlers,
		Queues:     wantQueues,
	})
}

// checkQueues checks that the queue stats read each way Reader reads them
// (Queues, CrawlersAndQueues, Cluster) are want.
func checkQueues(t *testing.T, r Reader, want *QueueStats) {
	t.Helper()
	ctx := context.Background()
	check(t, "Queues", must(r.Queues(ctx))(t), want)
	_, queues, err := r.CrawlersAndQueues(ctx)
	if err != nil {
		t.Fatal(err)
	}
	check(t, "CrawlersAndQueues queues", queues, want)
	check(t, "Cluster queues", must(r.Cluster(ctx))(t).Queues, want)
}

func TestSectionsHaveTheSpecsShapes(t *testing.T) {
	rdb := harness.StartRedis(t).TestClient(t)
	now := time.Now()
	writeClusterState(t, rdb, now)
	cluster := must(Reader{Redis: rdb, Now: now}.Cluster(context.Background()))(t)
	for _, tc := range []struct {
		name    string
		section map[string]any
		want    string
	}{
		{"the Kafka Monitor", cluster.Components["kafka-monitor"].Section(),
			`{"fail":{"21600":2,"900":1},"nodes":{"host1":["a1","a2"],"host2":["b1"]},"plugins":{"ScraperHandler":{"900":2}},"total":{"900":2,"lifetime":5}}`},
		{"a component without keys", cluster.Components["rest"].Section(), `{}`},
		{"the spiders", cluster.Crawlers.SpidersSection(),
			`{"link":{"200":{"900":3},"count":2},"total_spider_count":3,"unique_spider_count":2,"wandering":{"404":{"900":1},"count":1}}`},
		{"the machines", cluster.Crawlers.MachinesSection(),
			`{"count":2,"host1":{"200":{"900":2}},"host2":{"200":{"900":1},"404":{"900":1}}}`},
		{"the queues", cluster.Queues.Section(),
			`{"queue_link":{"domains":[{"domain":"dmoz.org","backlog":2},{"domain":"istresearch.com","backlog":3}],"spider_backlog":5,"num_domains":2},` +
				`"queue_wandering":{"domains":[{"domain":"example.com","backlog":1}],"spider_backlog":1,"num_domains":1},"total_backlog":6}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := json.Marshal(tc.section)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func check(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Errorf("%s:\n got  %s\n want %s", what, g, w)
	}
}

// vanishing wraps a collector and, as it takes each key, lets change alter
// it in Redis: what happens between a SCAN page and the reads it leads to.
type vanishing struct {
	collector
	change func(key string)
}

func (v vanishing) take(parts []string) bool {
	ok := v.collector.take(parts)
	if ok {
		v.change(strings.Join(parts, ":"))
	}
	return ok
}

func TestKeysThatVanishOrChangeTypeBeforeTheyAreReadAreLeftOut(t *testing.T) {
	server := harness.StartRedis(t)
	for name, change := range map[string]func(rdb *redis.Client, key string) error{
		"deleted": func(rdb *redis.Client, key string) error { return rdb.Del(context.Background(), key).Err() },
		"replaced by a string": func(rdb *redis.Client, key string) error {
			return rdb.Set(context.Background(), key, "x", 0).Err()
		},
	} {
		t.Run(name, func(t *testing.T) {
			rdb := server.TestClient(t)
			ctx := context.Background()
			if err := rdb.FlushAll(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			now := time.Now()
			writeClusterState(t, rdb, now)
			doomed := map[string]bool{
				"stats:kafka-monitor:total:lifetime": true,
				"stats:kafka-monitor:fail:21600":     true,
				"link:istresearch.com:queue":         true,
			}
			wrap := func(c collector) collector {
				return vanishing{collector: c, change: func(key string) {
					if doomed[key] {
						if err := change(rdb, key); err != nil {
							t.Error(err)
						}
					}
				}}
			}
			c, q := newComponentStats(), newQueueStats()
			r := Reader{Redis: rdb, Now: now}
			if err := r.scanAll(ctx, scanJob{[]string{"stats:kafka-monitor:*"}, wrap(c)}, scanJob{queuePatterns, wrap(q)}); err != nil {
				t.Fatal(err)
			}
			c.finish()
			q.finish()
			check(t, "kafka-monitor", c, &ComponentStats{
				Total:   Counts{"900": 2},
				Fail:    Counts{"900": 1},
				Plugins: map[string]Counts{"ScraperHandler": {"900": 2}},
				Nodes:   map[string][]string{"host1": {"a1", "a2"}, "host2": {"b1"}},
			})
			check(t, "queues", q, &QueueStats{
				Spiders: map[string]*SpiderQueue{
					"link":      {Domains: []DomainBacklog{{Domain: "dmoz.org", Backlog: 2}}, SpiderBacklog: 2, NumDomains: 1},
					"wandering": {Domains: []DomainBacklog{{Domain: "example.com", Backlog: 1}}, SpiderBacklog: 1, NumDomains: 1},
				},
				TotalBacklog: 3,
			})
		})
	}
}

// Render queues are backlog: a domain's counts the requests of its queue
// and its render queue, and render_backlog says how many of them wait for
// a rendering crawler; the shape without render queues is the spec's.
func TestRenderQueuesCountInTheirDomainsBacklog(t *testing.T) {
	rdb := harness.StartRedis(t).TestClient(t)
	now := time.Now()
	writeClusterState(t, rdb, now)
	fill(t, rdb, rediskeys.RenderQueueKey("link", "dmoz.org"), 4)
	fill(t, rdb, rediskeys.RenderQueueKey("link", "spa.example"), 1)
	// Not render queues: the wrong suffix, a colon in the domain.
	fill(t, rdb, "link:dmoz.org:renderqueues", 7)
	fill(t, rdb, "link:a:b:renderqueue", 7)

	r := Reader{Redis: rdb, Now: now}
	want := &QueueStats{
		Spiders: map[string]*SpiderQueue{
			"link": {Domains: []DomainBacklog{{Domain: "dmoz.org", Backlog: 6, RenderBacklog: 4}, {Domain: "istresearch.com", Backlog: 3},
				{Domain: "spa.example", Backlog: 1, RenderBacklog: 1}}, SpiderBacklog: 10, NumDomains: 3, RenderBacklog: 5},
			"wandering": {Domains: []DomainBacklog{{Domain: "example.com", Backlog: 1}}, SpiderBacklog: 1, NumDomains: 1},
		},
		TotalBacklog:  11,
		RenderBacklog: 5,
	}
	checkQueues(t, r, want)
	queues := must(r.Queues(context.Background()))(t)
	got, err := json.Marshal(queues.Section())
	if err != nil {
		t.Fatal(err)
	}
	const section = `{"queue_link":{"domains":[{"domain":"dmoz.org","backlog":6,"render_backlog":4},{"domain":"istresearch.com","backlog":3},` +
		`{"domain":"spa.example","backlog":1,"render_backlog":1}],"spider_backlog":10,"num_domains":3,"render_backlog":5},` +
		`"queue_wandering":{"domains":[{"domain":"example.com","backlog":1}],"spider_backlog":1,"num_domains":1},"total_backlog":11,"total_render_backlog":5}`
	if string(got) != section {
		t.Errorf("Section:\n got  %s\n want %s", got, section)
	}
}
