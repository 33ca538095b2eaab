package monitor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"
)

// seedQueues fills the link spider's queues with requests of crawl
// testapp/big spread evenly over domains.
func seedQueues(b *testing.B, rdb *redis.Client, requests, domains int) {
	b.Helper()
	ctx := context.Background()
	pipe := rdb.Pipeline()
	for i := range requests {
		d := i % domains
		member, _ := json.Marshal(map[string]any{
			"url": fmt.Sprintf("http://d%d.example.com/page/%d", d, i), "appid": "testapp", "crawlid": "big",
			"spiderid": "link", "priority": -(i % 3), "maxdepth": 2, "attrs": nil, "allowed_domains": nil,
			"allow_regex": nil, "deny_regex": nil, "deny_extensions": nil, "expires": 0, "useragent": nil,
			"cookie": nil, "ts": 1767323045.123456,
		})
		pipe.ZAdd(ctx, fmt.Sprintf("link:d%d.example.com:queue", d), redis.Z{Score: float64(i % 3), Member: member})
		if pipe.Len() >= 5000 {
			if _, err := pipe.Exec(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		b.Fatal(err)
	}
}

// answerReader reads the firehose from its current end.
func answerReader(b *testing.B, c *cluster) *kafka.Reader {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := c.kafkaConfig()
	if err := cfg.EnsureTopics(ctx, kafkaTopic("demo.outbound_firehose")); err != nil {
		b.Fatal(err)
	}
	r, err := cfg.NewPartitionReader("demo.outbound_firehose", 0, kafka.LastOffset)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	return r
}

func awaitAnswer(b *testing.B, r *kafka.Reader, uuid string) map[string]any {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		msg, err := r.ReadMessage(ctx)
		if err != nil {
			b.Fatalf("waiting for %s: %v", uuid, err)
		}
		var a map[string]any
		if json.Unmarshal(msg.Value, &a) == nil && a["uuid"] == uuid {
			return a
		}
	}
}

// BenchmarkInfo100k is the time from an info request (appid form) landing
// in Redis to its answer on Kafka, over 100,000 queued requests in 1,000
// domain queues. Target: within 1 s.
func BenchmarkInfo100k(b *testing.B) {
	c := newCluster(b)
	seedQueues(b, c.rdb, 100_000, 1000)
	c.start(b, nil)
	r := answerReader(b, c)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		uuid := fmt.Sprintf("info-%d", i)
		c.rdb.Set(ctx, "info:link:testapp", uuid, 0)
		a := awaitAnswer(b, r, uuid)
		if a["total_pending"] != 100000.0 || a["total_domains"] != 1000.0 {
			b.Fatalf("answer totals %v %v", a["total_pending"], a["total_domains"])
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/answer")
}

// BenchmarkStop100k is the time from a stop request landing in Redis to its
// answer on Kafka, purging 100,000 queued requests from 1,000 domain queues.
// Target: within 1 s.
func BenchmarkStop100k(b *testing.B) {
	c := newCluster(b)
	c.start(b, nil)
	r := answerReader(b, c)
	ctx := context.Background()
	var total time.Duration
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		seedQueues(b, c.rdb, 100_000, 1000)
		uuid := fmt.Sprintf("stop-%d", i)
		c.rdb.Del(ctx, "link:blacklist")
		b.StartTimer()
		start := time.Now()
		c.rdb.Set(ctx, "stop:link:testapp:big", uuid, 0)
		a := awaitAnswer(b, r, uuid)
		total += time.Since(start)
		if a["total_purged"] != 100000.0 {
			b.Fatalf("purged %v", a["total_purged"])
		}
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/answer")
}

// BenchmarkIdleCPU runs the redis-monitor binary with nothing to do (every
// default plugin enabled, Redis holding 1,000 domain queues and some stats
// keys, as a live cluster's Redis does) and reports the share of one core
// it uses. Target: below 2%.
func BenchmarkIdleCPU(b *testing.B) {
	c := newCluster(b)
	seedQueues(b, c.rdb, 10_000, 1000)
	bin := filepath.Join(b.TempDir(), "redis-monitor")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/redis-monitor").CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "--log-level", "WARNING")
	cmd.Env = append(os.Environ(), "REDIS_HOST=127.0.0.1", "REDIS_PORT="+strconv.Itoa(redisServer.Port),
		"KAFKA_HOSTS="+c.kafka.Hosts(), "ZOOKEEPER_HOSTS=", "ADMIN_ADDR=127.0.0.1:0")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	time.Sleep(2 * time.Second) // start-up
	const window = 10 * time.Second
	b.ResetTimer()
	var share float64
	for b.Loop() {
		before := cpuTicks(b, cmd.Process.Pid)
		time.Sleep(window)
		share = float64(cpuTicks(b, cmd.Process.Pid)-before) / 100 / window.Seconds() // USER_HZ is 100
	}
	b.ReportMetric(share*100, "%cpu")
}

// cpuTicks is a process's user+system CPU time in clock ticks.
func cpuTicks(b *testing.B, pid int) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	fields := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return utime + stime
}
