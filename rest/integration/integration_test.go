// Package integration runs the REST service with the real Kafka Monitor and
// Redis Monitor (in process) on a kfake broker and a real redis-server: the
// path of a request from /feed through both monitors and back.
package integration_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	kmonitor "github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/monitor"
	_ "github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugins/all"
	rmonitor "github.com/scrapycluster/scrapy-cluster-go/redis-monitor/monitor"
	_ "github.com/scrapycluster/scrapy-cluster-go/redis-monitor/plugins/all"
	"github.com/scrapycluster/scrapy-cluster-go/rest/server"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// env is the shared services and what every component's settings need to reach them.
type env struct {
	redis *harness.Redis
	kafka *harness.Kafka
	logs  *harness.OutputBuffer // every component's log, for failure reports
}

func (e *env) load(t *testing.T, declared settings.Group, extra ...string) *settings.Settings {
	t.Helper()
	flags := map[string]string{
		"REDIS_HOST": "127.0.0.1", "REDIS_PORT": strconv.Itoa(e.redis.Port), "REDIS_SOCKET_TIMEOUT": "2",
		"KAFKA_HOSTS": e.kafka.Hosts(), "KAFKA_CONN_TIMEOUT": "2", "KAFKA_TOPIC_PARTITIONS": "2", "KAFKA_INCOMING_PARTITIONS": "2",
		"LOG_JSON": "true", "LOG_LEVEL": "DEBUG",
	}
	for _, kv := range extra {
		name, value, _ := strings.Cut(kv, "=")
		flags[name] = value
	}
	s, err := settings.Load(declared, settings.Options{NoEnv: true, Flags: flags})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (e *env) logger(t *testing.T, name string) *logfactory.Logger {
	t.Helper()
	return harness.Logger(t, logfactory.Config{Name: name, Level: "DEBUG", JSON: true}, e.logs)
}

func (e *env) client(t *testing.T) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: e.redis.Addr})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// monitors runs a Kafka Monitor and a Redis Monitor until the returned stop is called.
func (e *env) monitors(t *testing.T) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	km, err := kmonitor.New(ctx, e.load(t, kmonitor.Settings(), "STATS_DUMP=0"), e.logger(t, "kafka-monitor"), e.client(t))
	if err != nil {
		t.Fatal(err)
	}
	rm, err := rmonitor.New(ctx, e.load(t, rmonitor.Settings(), "STATS_DUMP=0", "ZOOKEEPER_HOSTS=", "SLEEP_TIME=0.05"), e.logger(t, "redis-monitor"), e.client(t))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{}, 2)
	for _, run := range []func(context.Context) error{km.Run, rm.Run} {
		go func() {
			if err := run(ctx); err != nil {
				t.Errorf("monitor: %v", err)
			}
			done <- struct{}{}
		}()
	}
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		<-done
		<-done
		km.Close()
		rm.Close()
	}
	t.Cleanup(stop)
	return stop
}

// rest runs a REST instance behind httptest and waits until it is connected.
func (e *env) rest(t *testing.T, extra ...string) (*server.Service, string) {
	t.Helper()
	svc, err := server.New(context.Background(), e.load(t, server.Settings(), append([]string{"FLASK_LOGGING_ENABLED=false"}, extra...)...),
		e.logger(t, "rest-service"), e.client(t))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(svc.Handler())
	t.Cleanup(func() {
		srv.Close()
		svc.Close()
	})
	harness.WaitFor(t, "the REST service to connect to Kafka and Redis", 15*time.Second, func() bool {
		return svc.KafkaConnected() && svc.RedisConnected()
	})
	return svc, srv.URL
}

func post(t *testing.T, url, body string) (int, map[string]any) {
	t.Helper()
	res, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(res.Body)
	var out map[string]any
	if err := json.Unmarshal(buf.Bytes(), &out); err != nil {
		t.Fatalf("%s: %d %q", url, res.StatusCode, buf.String())
	}
	return res.StatusCode, out
}

func TestRequestsTravelThroughBothMonitorsAndBack(t *testing.T) {
	e := &env{redis: harness.StartRedis(t), kafka: harness.StartKafka(t, harness.KafkaOptions{NoAutoCreate: true}), logs: &harness.OutputBuffer{}}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs:\n%s", e.logs.String())
		}
	})
	patient, patientURL := e.rest(t, "WAIT_FOR_RESPONSE_TIME=20", "HTTP_WRITE_TIMEOUT=60")
	hasty, hastyURL := e.rest(t, "WAIT_FOR_RESPONSE_TIME=0.5")
	_, pollerURL := e.rest(t)
	stop := e.monitors(t)

	// With both monitors running, a stats request returns the stats as data:
	// here the REST services' own, counted from their heartbeats.
	code, got := post(t, patientURL+"/feed", `{"appid": "testapp", "uuid": "2hij1", "stats": "rest"}`)
	data, _ := got["data"].(map[string]any)
	if code != 200 || got["status"] != "SUCCESS" || got["error"] != nil || data["uuid"] != "2hij1" || data["stats"] != "rest" || data["appid"] != "testapp" {
		t.Fatalf("stats request: %d %v", code, got)
	}
	host, _ := os.Hostname()
	nodes, _ := data["nodes"].(map[string]any)
	ids, _ := nodes[host].([]any)
	for _, id := range []string{patient.ID(), hasty.ID()} {
		if !slices.Contains(ids, any(id)) {
			t.Errorf("rest stats nodes %v lack this host's instance %s", nodes, id)
		}
	}
	if _, ok := data["server_time"].(float64); !ok {
		t.Errorf("stats answer without server_time: %v", data)
	}

	// A crawl request is queued by the Kafka Monitor.
	if code, got := post(t, patientURL+"/feed", `{"url": "http://example.com/page", "appid": "testapp", "crawlid": "crawl1"}`); code != 200 || got["data"] != nil {
		t.Fatalf("crawl request: %d %v", code, got)
	}
	rdb := e.client(t)
	harness.WaitFor(t, "the crawl request is queued", 10*time.Second, func() bool {
		return rdb.ZCard(context.Background(), "link:example.com:queue").Val() == 1
	})

	// With the monitors stopped, the answer cannot come in time: a poll_id.
	stop()
	code, got = post(t, hastyURL+"/feed", `{"appid": "testapp", "uuid": "later1", "stats": "kafka-monitor"}`)
	if code != 200 || got["status"] != "SUCCESS" || jsonText(got["data"]) != `{"poll_id":"later1"}` {
		t.Fatalf("stats request without monitors: %d %v", code, got)
	}
	if code, _ := post(t, pollerURL+"/poll", `{"poll_id": "later1"}`); code != 404 {
		t.Fatalf("poll before the monitors came back: %d", code)
	}

	// Once they run again the answer comes, and another instance serves it.
	e.monitors(t)
	var answer map[string]any
	harness.WaitFor(t, "the poll finds the answer", 30*time.Second, func() bool {
		code, got := post(t, pollerURL+"/poll", `{"poll_id": "later1"}`)
		if code == 200 {
			answer = got
			return true
		}
		if code != 404 {
			t.Fatalf("poll: %d %v", code, got)
		}
		return false
	})
	data, _ = answer["data"].(map[string]any)
	if answer["status"] != "SUCCESS" || data["uuid"] != "later1" || data["stats"] != "kafka-monitor" || data["total"] == nil {
		t.Fatalf("polled answer %v", answer)
	}
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
