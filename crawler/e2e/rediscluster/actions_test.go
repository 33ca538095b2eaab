package rediscluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/testsite"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/kafkaclient"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisconn"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// messages are the JSON objects read from a topic so far, in order.
type messages struct {
	mu  sync.Mutex
	got []map[string]any
}

// readAll reads topic (demo.<name>) from its start into a messages until
// the test ends.
func readAll(t *testing.T, k *harness.Kafka, name string) *messages {
	t.Helper()
	cfg := kafkaclient.Config{Brokers: k.Addrs, TopicPrefix: "demo", ConnTimeout: 5 * time.Second, BatchLinger: time.Millisecond,
		MaxRequestBytes: 1 << 20, StartAtEarliest: true, FetchMaxBytes: 10 << 20, FetchMaxWait: 50 * time.Millisecond,
		Partitions: 1, ReplicationFactor: 1}
	topic := cfg.Topic(name)
	harness.WaitFor(t, "topic "+topic, 30*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return cfg.EnsureTopics(ctx, kafkaclient.TopicSpec{Name: topic, Partitions: 1}) == nil
	})
	ms := &messages{}
	harness.ReadTopic(context.Background(), t, cfg, topic, 1, func(v []byte) {
		var m map[string]any
		if err := json.Unmarshal(v, &m); err != nil {
			m = map[string]any{"not_json": string(v)}
		}
		ms.mu.Lock()
		ms.got = append(ms.got, m)
		ms.mu.Unlock()
	})
	return ms
}

// where are the messages keep accepts, with their places among all.
func (ms *messages) where(keep func(map[string]any) bool) (found []map[string]any, at []int) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	for i, m := range ms.got {
		if keep(m) {
			found, at = append(found, m), append(at, i)
		}
	}
	return found, at
}

// first waits for a message keep accepts and returns it with its place.
func (ms *messages) first(t *testing.T, what string, keep func(map[string]any) bool) (map[string]any, int) {
	t.Helper()
	var m map[string]any
	at := -1
	harness.WaitFor(t, what, 90*time.Second, func() bool {
		found, places := ms.where(keep)
		if len(found) == 0 {
			return false
		}
		m, at = found[0], places[0]
		return true
	})
	return m, at
}

func field(m map[string]any, path ...string) any {
	var v any = m
	for _, p := range path {
		o, _ := v.(map[string]any)
		v = o[p]
	}
	return v
}

func num(m map[string]any, path ...string) int64 {
	f, _ := field(m, path...).(float64)
	return int64(f)
}

func uuid(id string) func(map[string]any) bool {
	return func(m map[string]any) bool { return m["uuid"] == id }
}

func completion(crawlID string) func(map[string]any) bool {
	return func(m map[string]any) bool { return m["action"] == "crawl-complete" && m["crawlid"] == crawlID }
}

// feedLines writes each message (JSON) to the Kafka Monitor's incoming
// topic, in order, in one batch.
func feedLines(t *testing.T, k *harness.Kafka, msgs ...map[string]any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := kafkaclient.Config{Brokers: k.Addrs, TopicPrefix: "demo", ConnTimeout: 5 * time.Second, Partitions: 1, ReplicationFactor: 1}
	topic := cfg.Topic("incoming")
	if err := cfg.EnsureTopics(ctx, kafkaclient.TopicSpec{Name: topic, Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	var batch []kafka.Message
	for _, m := range msgs {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		batch = append(batch, kafka.Message{Value: b})
	}
	w := &kafka.Writer{Addr: kafka.TCP(k.Addrs...), Topic: topic, BatchTimeout: time.Millisecond, RequiredAcks: kafka.RequireAll}
	defer w.Close()
	if err := w.WriteMessages(ctx, batch...); err != nil {
		t.Fatalf("feed: %v", err)
	}
}

// The Redis Monitor's answers on a Redis Cluster, with two monitors, the
// Kafka Monitor and a crawler: info on a crawl and on an app, the queue
// and redis-monitor stats, a stop and an expiry, each with the figures
// the one-Redis tests expect (crawler/e2e/cluster), and each ended crawl's
// crawl-complete once, after the action's own answer, saying what ended it.
func TestInfoStatsStopAndExpireOnARedisCluster(t *testing.T) {
	rc := harness.StartRedisCluster(t)
	k := harness.StartKafka(t, harness.KafkaOptions{NoAutoCreate: true})
	a := testsite.StartAt(t, "127.0.0.2:0")
	b := testsite.StartAt(t, "127.0.0.3:0")
	domainA, err := rediskeys.DomainOfURL(a.URL("/"))
	if err != nil {
		t.Fatal(err)
	}

	env := harness.ClusterSettings(1, k.Hosts(), "") // REDIS_PORT 1: nothing there, the cluster is used
	env[redisconn.ClusterNodes.Name()] = rc.Seeds()
	env["LOG_LEVEL"], env["SC_LOG_LEVEL"] = "INFO", "INFO"
	// One page per domain per minute: the rest stays queued; a quiet
	// period longer than the test keeps the crawls from completing but by
	// their stop and expiry.
	env["QUEUE_HITS"], env["QUEUE_WINDOW"], env["LEDGER_COMPLETE_QUIET"] = "1", "60", "300"
	procs := map[string][]string{"kafka-monitor": {"run"}, "crawler": nil, "redis-monitor-1": nil, "redis-monitor-2": nil}
	for name, args := range procs {
		bin := strings.TrimSuffix(strings.TrimSuffix(name, "-1"), "-2")
		harness.StartProcess(t, harness.ProcessSpec{Name: name, Path: bins.Path(t, bin), Args: args, Env: harness.Environ(env),
			StopGrace: 10 * time.Second, Supervise: true})
	}
	outbound := readAll(t, k, "outbound_firehose")
	crawled := readAll(t, k, "crawled_firehose")

	expires := time.Now().Add(30 * time.Second).Unix()
	var seeds []map[string]any
	for i := range 5 {
		seeds = append(seeds, map[string]any{"url": b.URL(fmt.Sprintf("/page/%d", i+1)), "appid": "e2e", "crawlid": "expireme",
			"maxdepth": 0, "expires": expires})
	}
	for i := range 5 {
		seeds = append(seeds, map[string]any{"url": a.URL(fmt.Sprintf("/page/%d", i+1)), "appid": "e2e", "crawlid": "stopme", "maxdepth": 0})
	}
	feedLines(t, k, seeds...)
	for _, id := range []string{"stopme", "expireme"} {
		crawled.first(t, "a page of "+id, func(m map[string]any) bool { return m["crawlid"] == id })
	}

	feedLines(t, k,
		map[string]any{"action": "info", "appid": "e2e", "crawlid": "stopme", "uuid": "info-crawl", "spiderid": "link"},
		map[string]any{"action": "info", "appid": "e2e", "uuid": "info-app", "spiderid": "link"},
		map[string]any{"stats": "queue", "appid": "e2e", "uuid": "stats-queue"})
	ic, _ := outbound.first(t, "info (crawlid)", uuid("info-crawl"))
	if num(ic, "total_pending") != 4 || num(ic, "total_domains") != 1 || num(ic, "domains", domainA, "total") != 4 ||
		num(ic, "progress", "seeds") != 5 || num(ic, "progress", "queued") != 4 || field(ic, "progress", "state") != "running" {
		t.Errorf("info on stopme: %v", ic)
	}
	ia, _ := outbound.first(t, "info (appid)", uuid("info-app"))
	if num(ia, "total_pending") != 8 || num(ia, "total_crawlids") != 2 || num(ia, "total_domains") != 2 ||
		num(ia, "crawlids", "expireme", "total") != 4 || num(ia, "progress", "expireme", "seeds") != 5 {
		t.Errorf("info on the app: %v", ia)
	}
	sq, _ := outbound.first(t, "the queue stats", uuid("stats-queue"))
	if num(sq, "queues", "total_backlog") != 8 || num(sq, "queues", "queue_link", "num_domains") != 2 {
		t.Errorf("queue stats: %v", sq)
	}
	// The crawler's response counts, kept on a cluster in a hash of time
	// buckets per host and code (stats.BucketSet): the pages fetched (the
	// two seen, a third if a minute passed), the same in every window and
	// the lifetime, by spider and by machine. The crawler writes them every
	// 250 ms, so ask until they are in.
	var sc map[string]any
	for i := 0; ; i++ {
		id := fmt.Sprintf("stats-crawler-%d", i)
		feedLines(t, k, map[string]any{"stats": "crawler", "appid": "e2e", "uuid": id})
		sc, _ = outbound.first(t, "the crawler stats", uuid(id))
		if num(sc, "spiders", "link", "200", "lifetime") >= 2 || i == 30 {
			break
		}
	}
	machines, _ := field(sc, "machines").(map[string]any)
	if len(machines) != 2 || num(sc, "machines", "count") != 1 {
		t.Errorf("crawler stats: machines %v, want one", machines)
	}
	for host := range machines {
		if host == "count" {
			continue
		}
		pages := num(sc, "spiders", "link", "200", "lifetime")
		for _, w := range []string{"900", "3600", "21600", "43200", "86400", "604800", "lifetime"} {
			if n := num(sc, "spiders", "link", "200", w); n < 2 || n != pages || num(sc, "machines", host, "200", w) != pages {
				t.Errorf("crawler stats, window %s: spider %d, machine %s %d, want the %d pages of the lifetime (at least 2)", w,
					n, host, num(sc, "machines", host, "200", w), pages)
			}
		}
	}
	if num(sc, "spiders", "link", "count") != 1 {
		t.Errorf("crawler stats: %v, want one link crawler", field(sc, "spiders"))
	}
	// Kept in the one hash, not in the original's sorted sets (a member
	// for every page in every window).
	var mu sync.Mutex
	var hashes, zsets []string
	err = rc.TestClient(t).ForEachMaster(context.Background(), func(ctx context.Context, m *redis.Client) error {
		h, err := m.Keys(ctx, rediskeys.CrawlerResponsesPattern).Result()
		if err != nil {
			return err
		}
		z, err := m.Keys(ctx, "stats:crawler:*:link:200:*").Result()
		mu.Lock()
		hashes, zsets = append(hashes, h...), append(zsets, z...)
		mu.Unlock()
		return err
	})
	if err != nil || len(hashes) != 1 || len(zsets) != 0 {
		t.Errorf("response count keys: %q and %q (%v), want one hash of buckets and no sorted set", hashes, zsets, err)
	}

	// Asked once the three above are answered (and so counted): asked
	// with them, the other monitor could answer it before it counted them.
	feedLines(t, k, map[string]any{"stats": "redis-monitor", "appid": "e2e", "uuid": "stats-rm"})
	sr, _ := outbound.first(t, "the redis-monitor stats", uuid("stats-rm"))
	ids := 0
	for _, v := range field(sr, "nodes").(map[string]any) {
		l, _ := v.([]any)
		ids += len(l)
	}
	if ids != 2 || num(sr, "total", "lifetime") < 4 {
		t.Errorf("redis-monitor stats %v: want both monitors and at least the 4 requests", sr)
	}

	feedLines(t, k, map[string]any{"action": "stop", "appid": "e2e", "crawlid": "stopme", "uuid": "stop-1", "spiderid": "link"})
	st, stAt := outbound.first(t, "the stop answer", uuid("stop-1"))
	if st["action"] != "stop" || num(st, "total_purged") != 4 {
		t.Errorf("stop answer %v, want 4 purged", st)
	}
	checkEnded(t, outbound, "stopme", "stopped", "stop", stAt)

	ex, exAt := outbound.first(t, "the expired notification", func(m map[string]any) bool { return m["action"] == "expired" })
	if ex["crawlid"] != "expireme" || num(ex, "total_expired") != 4 {
		t.Errorf("expired notification %v, want 4 expired", ex)
	}
	checkEnded(t, outbound, "expireme", "expired", "expire", exAt)

	// Both crawls are marked done: no monitor claims them again. A last
	// request, answered after the monitors looked for finished crawls
	// again, shows each crawl-complete went out once.
	c := rc.TestClient(t)
	for _, id := range []string{"stopme", "expireme"} {
		harness.WaitFor(t, id+"'s completion marker to say done", 30*time.Second, func() bool {
			v, err := c.Get(context.Background(), rediskeys.Cluster.Completed("link", "e2e", id)).Result()
			return err == nil && strings.HasPrefix(v, "done|")
		})
	}
	feedLines(t, k, map[string]any{"action": "info", "appid": "e2e", "uuid": "info-last", "spiderid": "link"})
	last, _ := outbound.first(t, "the last info", uuid("info-last"))
	for _, id := range []string{"stopme", "expireme"} {
		if all, _ := outbound.where(completion(id)); len(all) != 1 {
			t.Errorf("%s completed %d times, want once", id, len(all))
		}
		if field(last, "progress", id, "state") != "complete" {
			t.Errorf("info on the app after the end: %s's progress %v", id, field(last, "progress", id))
		}
	}
	if num(last, "total_pending") != 0 || len(leftovers(t, c)) != 0 {
		t.Errorf("after the stop and the expiry: info %v, queued or leased %v", last, leftovers(t, c))
	}
}

// checkEnded checks crawlID's crawl-complete, ended by endedBy for reason
// with its 4 queued requests purged, 1 page published, and sent after the
// action's own answer (at place answerAt).
func checkEnded(t *testing.T, outbound *messages, crawlID, reason, endedBy string, answerAt int) {
	t.Helper()
	m, at := outbound.first(t, "the crawl-complete of "+crawlID, completion(crawlID))
	if m["reason"] != reason || field(m, "progress", "state") != "complete" || num(m, "progress", "seeds") != 5 ||
		num(m, "progress", "done") != 5 || num(m, "progress", "queued") != 0 || num(m, "progress", "in_flight") != 0 ||
		num(m, "progress", "published") != 1 || num(m, "progress", "purged", endedBy) != 4 || field(m, "progress", "ended_by") != endedBy {
		t.Errorf("crawl-complete of %s %v: want %s, 5 seeds done, 1 published, 4 purged by the %s", crawlID, m, reason, endedBy)
	}
	if at < answerAt {
		t.Errorf("the crawl-complete of %s (message %d) came before the %s's answer (message %d)", crawlID, at, endedBy, answerAt)
	}
}
