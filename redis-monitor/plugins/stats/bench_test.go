package stats

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// benchDomains is how many domain queues the benchmarks' Redis holds.
const benchDomains = 1000

// benchPlugin returns the plugin over the spec's state plus benchDomains
// domain queues of 1-20 requests, publishing by encoding the answer to JSON
// as the Kafka publisher does.
func benchPlugin(b *testing.B) (*Monitor, *redis.Client) {
	f, rdb := setup(b)
	writeSpecState(b, rdb, f.Clock)
	for i := range benchDomains {
		fillQueue(b, rdb, "link", fmt.Sprintf("domain%04d.com", i), 1+i%20)
	}
	p := &Monitor{}
	env := f.Env
	env.Publish = func(_ context.Context, answer map[string]any) error {
		_, err := json.Marshal(answer)
		return err
	}
	if err := p.Setup(context.Background(), env); err != nil {
		b.Fatal(err)
	}
	return p, rdb
}

func benchmarkAnswer(b *testing.B, stats string) {
	p, _ := benchPlugin(b)
	ctx := context.Background()
	key := rediskeys.StatsRequestKey(stats, "testapp")
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := p.Handle(ctx, key, "u1"); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "answers/s")
}

// BenchmarkQueueAnswer answers {"stats": "queue"} over 1,000 domain queues.
func BenchmarkQueueAnswer(b *testing.B) { benchmarkAnswer(b, "queue") }

// BenchmarkAllAnswer answers {"stats": "all"} over 1,000 domain queues and
// the spec example's component and crawler stats.
func BenchmarkAllAnswer(b *testing.B) { benchmarkAnswer(b, "all") }

// BenchmarkQueueAnswerOriginalStyle is the baseline: the original's queue
// stats, KEYS then one ZCARD round trip per queue, over the same Redis.
func BenchmarkQueueAnswerOriginalStyle(b *testing.B) {
	_, rdb := benchPlugin(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		keys, err := rdb.Keys(ctx, rediskeys.AllQueuesPattern).Result()
		if err != nil {
			b.Fatal(err)
		}
		queues := map[string]any{}
		total := int64(0)
		for _, k := range keys {
			n, err := rdb.ZCard(ctx, k).Result()
			if err != nil {
				b.Fatal(err)
			}
			total += n
			queues[strings.Split(k, ":")[1]] = n
		}
		queues["total_backlog"] = total
		if _, err := json.Marshal(queues); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "answers/s")
}
