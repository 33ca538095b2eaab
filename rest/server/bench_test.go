package server_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/rest/server"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
)

// BenchmarkFeedCrawl measures /feed with crawl requests from 64 concurrent
// HTTP clients (keep-alive connections over loopback) against a kfake broker
// and a real redis-server, with the default settings: INFO logging (one
// line per request, to io.Discard) and the access log (to io.Discard). Each
// request is validated against the Kafka Monitor's schemas and acknowledged
// by Kafka before its answer. It reports requests per second and the 50th
// and 99th percentile latencies.
//
//	go test -run '^$' -bench FeedCrawl -benchtime 5s ./server/
func BenchmarkFeedCrawl(b *testing.B) {
	c := newCluster(b)
	s := settingsFor(b, c.redis.Port, c.kafka.Hosts(), "LOG_JSON=false", "LOG_LEVEL=INFO", "FLASK_LOGGING_ENABLED=true",
		"KAFKA_INCOMING_PARTITIONS=6")
	log := harness.Logger(b, logfactory.Config{Name: "rest-service", Level: "INFO"}, io.Discard)
	rdb := redis.NewClient(&redis.Options{Addr: c.redis.Addr})
	defer rdb.Close()
	svc, err := server.New(context.Background(), s, log, rdb, server.WithAccessLog(io.Discard))
	if err != nil {
		b.Fatal(err)
	}
	defer svc.Close()
	srv := httptest.NewServer(svc.Handler())
	defer srv.Close()
	harness.WaitFor(b, "the service connects", 10*time.Second, func() bool { return svc.KafkaConnected() && svc.RedisConnected() })

	const clients = 64
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}}
	url := srv.URL + "/feed"
	body := []byte(`{"url": "http://example.com/page", "appid": "testapp", "crawlid": "bench", "priority": 5}`)

	var mu sync.Mutex
	var latencies []time.Duration
	b.SetParallelism((clients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		var mine []time.Duration
		buf := make([]byte, 512)
		for pb.Next() {
			t0 := time.Now()
			req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			res, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			for {
				if _, err := res.Body.Read(buf); err != nil {
					break
				}
			}
			res.Body.Close()
			if res.StatusCode != 200 {
				b.Errorf("status %d", res.StatusCode)
				return
			}
			mine = append(mine, time.Since(t0))
		}
		mu.Lock()
		latencies = append(latencies, mine...)
		mu.Unlock()
	})
	elapsed := time.Since(start)
	b.StopTimer()
	if len(latencies) == 0 {
		return
	}
	slices.Sort(latencies)
	pct := func(p float64) float64 {
		return float64(latencies[min(len(latencies)-1, int(p*float64(len(latencies))))].Microseconds()) / 1000
	}
	b.ReportMetric(float64(len(latencies))/elapsed.Seconds(), "req/s")
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}
