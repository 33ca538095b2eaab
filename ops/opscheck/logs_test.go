package opscheck_test

import (
	"bufio"
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

	"github.com/segmentio/kafka-go"

	"github.com/scrapycluster/scrapy-cluster-go/ops/localcluster"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

// logLine is one JSON log line of a component, decoded.
type logLine map[string]any

// componentLogs are real JSON log lines of each component, by the name the
// ELK material uses for it.
type componentLogs map[string][]logLine

var collected struct {
	once sync.Once
	logs componentLogs
	// skipped says the first test that asked was skipped (a service the
	// components need is not installed): the tests after it skip too.
	skipped bool
}

// realLogs runs the four components against real services with JSON logs,
// drives a crawl, bad requests, stats and info requests and the REST
// endpoints through them, and returns the lines they wrote. It runs once per
// test binary; the tests that need lines share them.
func realLogs(t *testing.T) componentLogs {
	t.Helper()
	collected.once.Do(func() {
		// driveComponents ends the goroutine when it skips or fails t;
		// the deferred call still sees which it was.
		defer func() { collected.skipped = t.Skipped() }()
		collected.logs = driveComponents(t)
	})
	if collected.skipped {
		t.Skip("the components' log lines were not collected: a service they need is not installed (see the first test that asked)")
	}
	if collected.logs == nil {
		t.Fatal("the components' log lines could not be collected (see the first test that asked)")
	}
	return collected.logs
}

func driveComponents(t *testing.T) componentLogs {
	r := harness.StartRedis(t)
	zk := harness.StartZooKeeper(t)
	k := harness.StartKafka(t)

	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch req.URL.Path {
		case "/":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, `<html><body><a href="/a">a</a> <a href="/missing">missing</a></body></html>`)
		case "/a":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, `<html><body>a page</body></html>`)
		default:
			http.NotFound(w, req)
		}
	}))
	t.Cleanup(site.Close)

	restPort := harness.Port(t)
	env := []string{
		"REDIS_HOST=127.0.0.1", "REDIS_PORT=" + strconv.Itoa(r.Port),
		"KAFKA_HOSTS=" + k.Hosts(), "ZOOKEEPER_HOSTS=" + zk.Addr,
		"LOG_JSON=true", "SC_LOG_JSON=true", "STATS_DUMP=1",
		// One page per domain and hour: the crawl's follow-up requests stay
		// queued, so the Redis Monitor's queue dump has a link backlog.
		"PUBLIC_IP_URL=", "QUEUE_MODERATED=false", "QUEUE_HITS=1", "QUEUE_WINDOW=3600",
		"FLASK_PORT=" + strconv.Itoa(restPort), "FLASK_HOST=127.0.0.1",
		// The site is on loopback, which the crawler refuses by default.
		"FETCH_ALLOWED_NETWORKS=" + localcluster.LoopbackNetworks,
	}
	procs := map[string]*proc{
		"kafka-monitor": startProc(t, "", env, binary(t, "kafka-monitor"), "run"),
		"redis-monitor": startProc(t, "", env, binary(t, "redis-monitor")),
		"crawler":       startProc(t, "", env, binary(t, "crawler")),
		"rest":          startProc(t, "", env, binary(t, "rest")),
	}
	seen := func(component, message string) func() bool {
		return func() bool { return strings.Contains(procs[component].stdout.String(), `"message": "`+message) }
	}

	feed := func(req string) {
		run(t, 30*time.Second, env, binary(t, "kafka-monitor"), "feed", req)
	}
	feed(`{"url": "` + site.URL + `/", "appid": "testapp", "crawlid": "elk1", "maxdepth": 1}`)
	feed(`{"stats": "kafka-monitor", "appid": "testapp", "uuid": "elk-stats-1"}`)
	feed(`{"action": "info", "appid": "testapp", "uuid": "elk-info-1", "crawlid": "elk1", "spiderid": "link"}`)
	// Requests feed refuses go to Kafka directly, as a misbehaving client's would.
	w := &kafka.Writer{Addr: kafka.TCP(k.Addrs...), Topic: "demo.incoming", AllowAutoTopicCreation: true}
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.WriteMessages(ctx, kafka.Message{Value: []byte("not json")}, kafka.Message{Value: []byte(`{"appid": "testapp", "crazykey": 1}`)}); err != nil {
		t.Fatalf("write bad requests: %v", err)
	}

	restURL := "http://127.0.0.1:" + strconv.Itoa(restPort)
	waitFor(t, 30*time.Second, "the REST service to answer", func() bool {
		resp, err := http.Get(restURL + "/")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	resp, err := http.Post(restURL+"/feed", "application/json", strings.NewReader(`{"stats": "rest", "appid": "testapp", "uuid": "elk-rest-1"}`))
	if err != nil {
		t.Fatalf("POST /feed: %v", err)
	}
	resp.Body.Close()
	if resp, err := http.Get(restURL + "/nowhere"); err == nil {
		resp.Body.Close()
	}

	waitFor(t, 60*time.Second, "the crawler to send pages to Kafka", seen("crawler", "Sent page to Kafka"))
	waitFor(t, 30*time.Second, "the Kafka Monitor's stats dump", seen("kafka-monitor", "Kafka Monitor Stats Dump"))
	waitFor(t, 30*time.Second, "the Redis Monitor's stats dump", seen("redis-monitor", "Redis Monitor Stats Dump"))
	waitFor(t, 30*time.Second, "the Redis Monitor's queue dump with the link backlog", func() bool {
		return strings.Contains(procs["redis-monitor"].stdout.String(), `"queue_link": {`)
	})
	waitFor(t, 30*time.Second, "the REST service's feed line", seen("rest", "'feed' endpoint called"))

	logs := componentLogs{}
	for name, p := range procs {
		if !p.stop(20 * time.Second) {
			t.Errorf("%s did not stop within 20 s of SIGTERM", name)
		}
		sc := bufio.NewScanner(strings.NewReader(p.stdout.String()))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var line logLine
			d := json.NewDecoder(bytes.NewReader(sc.Bytes()))
			d.UseNumber() // numbers as Elasticsearch sees them: 200, not 200.0
			if err := d.Decode(&line); err != nil {
				t.Errorf("%s wrote a line on stdout that is not JSON with LOG_JSON on: %q", name, sc.Text())
				continue
			}
			logs[name] = append(logs[name], line)
		}
	}
	return logs
}
