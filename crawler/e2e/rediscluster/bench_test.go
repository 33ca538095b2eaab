package rediscluster_test

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

// BenchmarkWaitReplicasCost is what REDIS_WAIT_REPLICAS=1 costs a crawl on
// a Redis Cluster (three masters, a replica each), against 0: the Kafka
// Monitor and two crawlers crawl 20 unthrottled domains
// per iteration (520 pages), a new crawl each. It reports pages/s, the Redis
// CPU per page of the three masters together and of the busiest one.
//
//	go test -run '^$' -bench BenchmarkWaitReplicasCost -benchtime 1x ./crawler/e2e/rediscluster/
func BenchmarkWaitReplicasCost(b *testing.B) {
	for _, wait := range []int{0, 1} {
		b.Run("wait="+strconv.Itoa(wait), func(b *testing.B) { benchCrawlCost(b, wait) })
	}
}

func benchCrawlCost(b *testing.B, wait int) {
	rc, k, seed, want := depthThreeCrawl(b, 20)
	env := clusterEnv(rc, k, map[string]string{"REDIS_WAIT_REPLICAS": strconv.Itoa(wait),
		"CONCURRENT_REQUESTS": "32", "CONCURRENT_REQUESTS_PER_DOMAIN": "8", "LOG_LEVEL": "WARNING", "SC_LOG_LEVEL": "WARNING"})
	startComponents(b, env, "kafka-monitor", "crawler-1", "crawler-2")
	masters := rc.Masters(b)
	cpu := func() []time.Duration {
		out := make([]time.Duration, len(masters))
		for i, m := range masters {
			rdb := m.Client()
			out[i] = harness.RedisCPU(b, rdb)
			rdb.Close()
		}
		return out
	}
	var elapsed time.Duration
	used := make([]time.Duration, len(masters))
	for i := 0; i < b.N; i++ {
		crawlID := fmt.Sprintf("bench%d", i)
		pages := readPages(b, k, crawlID)
		start, cpuStart := time.Now(), cpu()
		feed(b, env, fmt.Sprintf(`{"url": %q, "appid": "e2e", "crawlid": %q, "spiderid": "link", "maxdepth": 3}`, seed, crawlID))
		harness.WaitFor(b, "every page of the crawl published", 300*time.Second, func() bool { return pages.distinct() >= len(want) })
		elapsed += time.Since(start)
		for j, c := range cpu() {
			used[j] += c - cpuStart[j]
		}
	}
	n := float64(b.N * len(want))
	var total time.Duration
	for _, u := range used {
		total += u
	}
	b.ReportMetric(n/elapsed.Seconds(), "pages/s")
	b.ReportMetric(float64(total.Microseconds())/n, "masters-cpu-µs/page")
	b.ReportMetric(float64(slices.Max(used).Microseconds())/n, "busiest-master-cpu-µs/page")
	b.ReportMetric(float64(len(want)), "pages/crawl")
}
