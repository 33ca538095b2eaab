package engine

import (
	"io"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/fetch"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/scheduler"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider"
	_ "github.com/scrapycluster/scrapy-cluster-go/crawler/spiders/link"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/bytebudget"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/kafkaclient"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// BenchmarkMetricsPerPage is what the metrics cost a crawled page on the
// hot path: the in-flight gauge up and down, the fetch timed and its
// response counted by code with its bytes, the publication timed; from
// GOMAXPROCS goroutines at once, as the engine's workers run. Divide by a
// page's CPU cost (crawler-cpu-µs/page of e2e's BenchmarkPagesPerSecond)
// for the share (docs/metrics.md).
func BenchmarkMetricsPerPage(b *testing.B) {
	s, err := settings.Load(Settings(), settings.Options{NoEnv: true})
	if err != nil {
		b.Fatal(err)
	}
	log := harness.Logger(b, logfactory.Config{Name: "bench", Level: "ERROR"}, io.Discard)
	sp, err := spider.New("link")
	if err != nil {
		b.Fatal(err)
	}
	scfg, err := scheduler.ConfigFromSettings(s, sp.Name())
	if err != nil {
		b.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	defer rdb.Close()
	sched, err := scheduler.New(rdb, scfg, log)
	if err != nil {
		b.Fatal(err)
	}
	pub := kafkaclient.Config{Brokers: []string{"127.0.0.1:1"}}.NewPublisher("crawled", false, nil)
	defer pub.Close()
	m := newMetrics(&Engine{spider: sp, sched: sched, pub: pub, followups: bytebudget.New(1)})
	res := &fetch.Result{Status: 200, Body: make([]byte, 20<<10)}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.inFlight.Inc()
			m.fetched(time.Now(), res, nil)
			m.published(time.Now(), nil)
			m.inFlight.Dec()
		}
	})
}
