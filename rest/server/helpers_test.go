package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	_ "github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugins/all"
	"github.com/scrapycluster/scrapy-cluster-go/rest/server"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/kafkaclient"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisconn"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// cluster is the services a REST instance talks to: a real redis-server and
// a kfake broker.
type cluster struct {
	redis *harness.Redis
	kafka *harness.Kafka
	rdb   *redis.Client
	kcfg  kafkaclient.Config
}

func newCluster(t testing.TB) *cluster {
	t.Helper()
	r := harness.StartRedis(t)
	k := harness.StartKafka(t, harness.KafkaOptions{NoAutoCreate: true})
	return &cluster{redis: r, kafka: k, rdb: r.TestClient(t), kcfg: kafkaclient.Config{
		Brokers: k.Addrs, TopicPrefix: "demo", ConnTimeout: 5 * time.Second, MaxRequestBytes: 1 << 20,
		FetchMaxBytes: 1 << 20, FetchMaxWait: 50 * time.Millisecond, StartAtEarliest: true, Partitions: 2, ReplicationFactor: 1,
	}}
}

// instance is one REST service under test, served by httptest.
type instance struct {
	svc  *server.Service
	srv  *httptest.Server
	url  string
	logs *harness.OutputBuffer
	s    *settings.Settings
}

// settingsFor returns the service's settings for c, with short times so
// tests run quickly, then extra NAME=VALUE overrides.
func settingsFor(t testing.TB, redisPort int, kafkaHosts string, extra ...string) *settings.Settings {
	t.Helper()
	s, err := loadSettings(redisPort, kafkaHosts, extra...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// loadSettings is settingsFor's loading, its error returned.
func loadSettings(redisPort int, kafkaHosts string, extra ...string) (*settings.Settings, error) {
	flags := map[string]string{
		"REDIS_HOST": "127.0.0.1", "REDIS_PORT": strconv.Itoa(redisPort), "REDIS_SOCKET_TIMEOUT": "1",
		"KAFKA_HOSTS": kafkaHosts, "KAFKA_INCOMING_PARTITIONS": "2", "KAFKA_TOPIC_PARTITIONS": "2", "KAFKA_CONN_TIMEOUT": "1",
		"KAFKA_CONSUMER_SLEEP_TIME": "0.2", "WAIT_FOR_RESPONSE_TIME": "2", "KAFKA_FEED_TIMEOUT": "2",
		"LOG_JSON": "true", "LOG_LEVEL": "DEBUG", "FLASK_LOGGING_ENABLED": "false",
	}
	for _, kv := range extra {
		name, value, _ := strings.Cut(kv, "=")
		flags[name] = value
	}
	return settings.Load(server.Settings(), settings.Options{NoEnv: true, Flags: flags})
}

// start runs a REST instance against c and waits until it is connected to both.
func (c *cluster) start(t testing.TB, extra ...string) *instance {
	t.Helper()
	in := startInstance(t, settingsFor(t, c.redis.Port, c.kafka.Hosts(), extra...))
	harness.WaitFor(t, "the service connects to Kafka and Redis", 10*time.Second, func() bool {
		return in.svc.KafkaConnected() && in.svc.RedisConnected()
	})
	return in
}

// startOne starts a cluster and one REST instance on it (with extra
// NAME=VALUE settings), connected: most tests' beginning.
func startOne(t testing.TB, extra ...string) (*cluster, *instance) {
	t.Helper()
	c := newCluster(t)
	return c, c.start(t, extra...)
}

// startInstance runs a REST instance with s, without waiting for connections.
func startInstance(t testing.TB, s *settings.Settings, opts ...server.Option) *instance {
	t.Helper()
	logs := &harness.OutputBuffer{}
	log := harness.Logger(t, logfactory.Settings("").Config(s), logs)
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(redisconn.Port.From(s)), MaxRetries: -1,
		DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second})
	return serveInstance(t, s, log, logs, rdb, opts...)
}

// serveInstance runs a REST instance with s, log (writing to logs) and
// rdb, which it closes when the test ends.
func serveInstance(t testing.TB, s *settings.Settings, log *logfactory.Logger, logs *harness.OutputBuffer, rdb redis.UniversalClient, opts ...server.Option) *instance {
	t.Helper()
	svc, err := server.New(context.Background(), s, log, rdb, opts...)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(svc.Handler())
	t.Cleanup(func() {
		srv.Close()
		svc.Close()
		rdb.Close()
		if t.Failed() {
			t.Logf("service log:\n%s", logs.String())
		}
	})
	return &instance{svc: svc, srv: srv, url: srv.URL, logs: logs, s: s}
}

// logged reports whether a log line has message and every one of extras (JSON text).
func (in *instance) logged(message string, extras ...string) bool {
	for _, line := range strings.Split(in.logs.String(), "\n") {
		if !strings.Contains(line, `"message": "`+message+`"`) {
			continue
		}
		all := true
		for _, e := range extras {
			all = all && strings.Contains(line, e)
		}
		if all {
			return true
		}
	}
	return false
}

// answer is a decoded response.
type answer struct {
	Code int
	Body map[string]any
	Raw  string
}

func (in *instance) do(t testing.TB, method, path, contentType, body string) answer {
	t.Helper()
	req, err := http.NewRequest(method, in.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(res.Body)
	a := answer{Code: res.StatusCode, Raw: buf.String()}
	if method != http.MethodHead {
		if err := json.Unmarshal(buf.Bytes(), &a.Body); err != nil {
			t.Fatalf("%s %s answered %d with non-JSON %q: %v", method, path, res.StatusCode, buf.String(), err)
		}
		if ct := res.Header.Get("Content-Type"); ct != "application/json" {
			t.Fatalf("%s %s: Content-Type %q", method, path, ct)
		}
	}
	return a
}

func (in *instance) post(t testing.TB, path, body string) answer {
	t.Helper()
	return in.do(t, http.MethodPost, path, "application/json", body)
}

// incoming collects what arrives on the incoming topic (every partition).
type incoming struct {
	mu   sync.Mutex
	msgs [][]byte
}

func (in *incoming) all() [][]byte {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([][]byte(nil), in.msgs...)
}

// watchIncoming reads every partition of topic from the start until the test
// ends, calling each message's value to on (if set).
func (c *cluster) watchIncoming(t testing.TB, topic string, partitions int, on func([]byte)) *incoming {
	t.Helper()
	got := &incoming{}
	harness.ReadTopic(context.Background(), t, c.kcfg, topic, partitions, func(v []byte) {
		got.mu.Lock()
		got.msgs = append(got.msgs, v)
		got.mu.Unlock()
		if on != nil {
			on(v)
		}
	})
	return got
}

// count returns how many messages topic holds, from the partitions' offsets.
func (c *cluster) count(t testing.TB, topic string) int64 {
	t.Helper()
	client := &kafka.Client{Addr: kafka.TCP(c.kafka.Addrs...), Timeout: 5 * time.Second}
	md, err := client.Metadata(context.Background(), &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil || len(md.Topics) != 1 || md.Topics[0].Error != nil {
		t.Fatalf("metadata of %s: %v %+v", topic, err, md)
	}
	var reqs []kafka.OffsetRequest
	for _, p := range md.Topics[0].Partitions {
		reqs = append(reqs, kafka.FirstOffsetOf(p.ID), kafka.LastOffsetOf(p.ID))
	}
	res, err := client.ListOffsets(context.Background(), &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, po := range res.Topics[topic] {
		if po.Error != nil {
			t.Fatal(po.Error)
		}
		n += po.LastOffset - po.FirstOffset
	}
	return n
}

// publish writes answers to the outbound topic.
func (c *cluster) publish(t testing.TB, values ...string) {
	t.Helper()
	if err := c.tryPublish(values...); err != nil {
		t.Fatal(err)
	}
}

// tryPublish is publish for goroutines other than the test's.
func (c *cluster) tryPublish(values ...string) error {
	w := c.kcfg.NewWriter("demo.outbound_firehose")
	w.BatchTimeout = time.Millisecond
	defer w.Close()
	msgs := make([]kafka.Message, len(values))
	for i, v := range values {
		msgs[i] = kafka.Message{Value: []byte(v)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		return fmt.Errorf("publish answers: %w", err)
	}
	return nil
}

// fakeRedisMonitor answers every request with a uuid that arrives on the
// incoming topic, after gate (if set) lets it, with {"uuid", "appid", "stats", "answered_by"}.
func (c *cluster) fakeRedisMonitor(t testing.TB, gate <-chan struct{}) {
	t.Helper()
	var mu sync.Mutex // one publisher at a time keeps the test's writer use simple
	c.watchIncoming(t, "demo.incoming", 2, func(v []byte) {
		var req map[string]any
		if json.Unmarshal(v, &req) != nil || req["uuid"] == nil {
			return
		}
		if gate != nil {
			<-gate
		}
		ans, _ := json.Marshal(map[string]any{"uuid": req["uuid"], "appid": req["appid"], "stats": req["stats"], "answered_by": "fake"})
		mu.Lock()
		defer mu.Unlock()
		if err := c.tryPublish(string(ans)); err != nil {
			t.Error(err)
		}
	})
}
