package redisscripts_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisscripts"
)

// BenchmarkDupeFilterBytesPerURL follows 100,000 distinct URLs (SHA1
// fingerprints, 200 a page, 5 pages a run of finish.lua) into one crawl's
// duplicate filter, in each DUPEFILTER_MODE (bloom: DUPEFILTER_ERROR_RATE
// 0.001, DUPEFILTER_CAPACITY 100,000), and reports the filter's Redis
// bytes per URL (MEMORY USAGE of its keys) and Redis CPU per URL of the
// whole finish run (INFO cpu: queue writes included, the same in both).
//
//	go test -run '^$' -bench DupeFilterBytesPerURL -benchtime 1x ./scutils/redisscripts/
func BenchmarkDupeFilterBytesPerURL(b *testing.B) {
	for _, mode := range []string{"exact", "bloom"} {
		b.Run("mode="+mode, func(b *testing.B) {
			rdb := harness.StartRedis(b).TestClient(b)
			rdb = redis.NewClient(&redis.Options{Addr: rdb.Options().Addr, ReadTimeout: time.Minute, MaxRetries: -1})
			defer rdb.Close()
			const urls = 100000
			keys := []string{"link:dupefilter:c1"}
			if mode == "bloom" {
				keys = []string{bloomBits, bloomMeta}
			}
			for b.Loop() {
				rdb.FlushAll(ctx)
				all := fps("url", urls)
				cpu0 := harness.RedisCPU(b, rdb)
				for len(all) > 0 {
					f := &redisscripts.Finish{LeaseOwners: "leases:link:owners", LeaseRecords: "leases:link:items", Stamp: stamp,
						LedgerTTL: time.Hour, DupeFilterTTL: time.Hour, DomainMaxPageTTL: time.Hour, GlobalPageTTL: time.Hour}
					if mode == "bloom" {
						f.BloomRate, f.BloomCapacity = 0.001, 100000
					}
					for range 5 {
						chunk := all[:min(200, len(all))]
						all = all[len(chunk):]
						g := redisscripts.FinishGroup{Queue: "link:b.com:queue", Channel: "link:queue-announce", Ledger: crawl1, Score: -1}
						for _, fp := range chunk {
							g.Requests = append(g.Requests, redisscripts.FinishRequest{Fingerprint: fp, Member: fp})
						}
						p := redisscripts.FinishPage{Blacklist: "link:blacklist", Crawl: "app||c1", DupeFilter: keys[0], Groups: []redisscripts.FinishGroup{g}}
						if mode == "bloom" {
							p.DupeFilterMeta = bloomMeta
						}
						f.Pages = append(f.Pages, p)
					}
					if _, err := f.Run(ctx, rdb); err != nil {
						b.Fatal(err)
					}
				}
				cpu := harness.RedisCPU(b, rdb) - cpu0
				var bytes int64
				for _, k := range keys {
					n, err := rdb.MemoryUsage(ctx, k).Result()
					if err != nil {
						b.Fatal(fmt.Errorf("MEMORY USAGE %s: %w", k, err))
					}
					bytes += n
				}
				b.ReportMetric(float64(bytes)/urls, "redis-bytes/url")
				b.ReportMetric(float64(cpu.Microseconds())/urls, "redis-cpu-µs/url")
			}
		})
	}
}

// BenchmarkFIFOEnqueue is the cost of the tiebreak (fifo_score) on the
// Kafka Monitor's enqueue: ledger_seeds queueing batches of 500 seeds of
// three crawls into one queue, at a whole score (tiebreak=on: one look at
// the queue per run, a score computed per seed) and at a score with a
// fraction (tiebreak=off: the score used as it is, as before the
// tiebreak). It reports Redis CPU per seed (INFO cpu).
//
//	go test -run '^$' -bench FIFOEnqueue -benchtime 200x ./scutils/redisscripts/
func BenchmarkFIFOEnqueue(b *testing.B) {
	for _, tc := range []struct {
		name  string
		score float64
	}{{"tiebreak=on", -5}, {"tiebreak=off", -5.5}} {
		b.Run(tc.name, func(b *testing.B) {
			rdb := harness.StartRedis(b).TestClient(b)
			const perRun = 500
			n := 0
			cpu0 := harness.RedisCPU(b, rdb)
			for b.Loop() {
				reqs := make([]redisscripts.SeedRequest, perRun)
				for i := range reqs {
					n++
					reqs[i] = redisscripts.SeedRequest{Queue: "link:b.com:queue", Score: tc.score, Ledger: fifoCrawls[i%3],
						Member: fmt.Sprintf(`{"url": "http://b.com/%d", "appid": "app", "crawlid": "c%d", "priority": 5}`, n, i%3)}
				}
				if err := redisscripts.Eval(ctx, rdb, redisscripts.Seeds{Requests: reqs, Stamp: stamp, TTL: time.Hour}).Err(); err != nil {
					b.Fatal(err)
				}
				if n%20000 == 0 {
					rdb.Del(ctx, "link:b.com:queue")
				}
			}
			b.ReportMetric(float64((harness.RedisCPU(b, rdb)-cpu0).Microseconds())/float64(n), "redis-cpu-µs/seed")
		})
	}
}
