package monitor_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
)

// BenchmarkIngestCrawlRequests measures valid crawl requests per second from
// demo.incoming into Redis for one monitor process, configured as in
// production: INFO log line per request, total and per-plugin stats over the
// six default windows, offsets committed after every stored batch, every
// stored request marked. The log lines go to an *os.File on /dev/null,
// gathered as to production's stdout or log file (not to the tests'
// in-memory buffer, whose growing costs production nothing). The requests
// are in Kafka (kfake, in this process) before the clock starts; it stops
// when the last is stored. Redis and the broker share the machine's cores
// with the monitor.
func BenchmarkIngestCrawlRequests(b *testing.B) { benchIngest(b) }

// BenchmarkIngestWithoutStats is the same without STATS_TOTAL/STATS_PLUGINS.
func BenchmarkIngestWithoutStats(b *testing.B) {
	benchIngest(b, "STATS_TOTAL=false", "STATS_PLUGINS=false")
}

// BenchmarkIngestWarningLogs is the same with LOG_LEVEL=WARNING (no line per request).
func BenchmarkIngestWarningLogs(b *testing.B) { benchIngest(b, "LOG_LEVEL=WARNING") }

func benchIngest(b *testing.B, extra ...string) {
	settings := append([]string{"LOG_LEVEL=INFO", "LOG_JSON=false", "KAFKA_INCOMING_PARTITIONS=6",
		"KAFKA_CONSUMER_AUTO_COMMIT_ENABLE=true"}, extra...)
	c := newCluster(b, harness.RedisOptions{}, settings...)
	c.logToDevNull(b)
	reqs := make([]string, 0, 1000)
	for i := range b.N {
		reqs = append(reqs, fmt.Sprintf(`{"url": "http://site%d.example.com/page/%d", "appid": "benchapp", "crawlid": "crawl%d", "priority": %d, "maxdepth": 1}`, i%50, i, i%10, 1+i%100))
		if len(reqs) == cap(reqs) {
			c.produce(b, reqs...)
			reqs = reqs[:0]
		}
	}
	if len(reqs) > 0 {
		c.produce(b, reqs...)
	}
	b.ResetTimer()
	start, redisStart, selfStart := time.Now(), harness.RedisCPU(b, c.rdb), harness.ProcessCPU(b)
	m, _ := c.start(b)
	deadline := time.Now().Add(10 * time.Minute)
	var first time.Time
	for m.Processed() < int64(b.N) {
		if first.IsZero() && m.Processed() > 0 {
			first = time.Now()
			b.Logf("first request handled %v after the start", first.Sub(start))
		}
		if time.Now().After(deadline) {
			b.Fatalf("handled %d of %d", m.Processed(), b.N)
		}
		time.Sleep(time.Millisecond)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "requests/s")
	// Where the CPU went: redis-server, and this process (the monitor, the
	// kfake broker and the log buffer).
	b.ReportMetric(float64((harness.RedisCPU(b, c.rdb)-redisStart).Microseconds())/float64(b.N), "redis-cpu-µs/request")
	b.ReportMetric(float64((harness.ProcessCPU(b)-selfStart).Microseconds())/float64(b.N), "process-cpu-µs/request")
}

// logToDevNull sends c's log lines to /dev/null through an *os.File,
// gathered, as a production monitor writes them to stdout or a file.
func (c *cluster) logToDevNull(b *testing.B) {
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { devNull.Close() })
	cfg := logfactory.Settings("").Config(c.s)
	cfg.Output, cfg.Gather = devNull, true // as lines to stdout are
	if c.log, err = logfactory.New(cfg); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.log.Flush) // before the file closes

}
