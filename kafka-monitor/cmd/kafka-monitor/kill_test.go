package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/kafkaclient"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
)

// startMonitor runs `kafka-monitor run` with args as a process, killed
// when the test ends.
func startMonitor(t *testing.T, bin string, args ...string) *harness.Process {
	t.Helper()
	return harness.StartProcess(t, harness.ProcessSpec{Name: "kafka-monitor", Path: bin, Args: append([]string{"run"}, args...)})
}

// TestAKilledMonitorLosesNoSeedAndStoresFewTwice builds the binary, feeds 300
// crawl requests one by one while it runs, SIGKILLs it when half are fed,
// feeds the rest, starts a new one and checks Redis: every seed is queued,
// and at most 1% were stored twice. A request stored twice is two queue
// members, as each carries the time its monitor received it ("ts"). The
// monitor runs with the production defaults (KAFKA_CONSUMER_COMMIT_INTERVAL_MS
// 5000, INFO logs).
func TestAKilledMonitorLosesNoSeedAndStoresFewTwice(t *testing.T) {
	r := harness.StartRedis(t)
	k := harness.StartKafka(t, harness.KafkaOptions{NoAutoCreate: true})
	bin := filepath.Join(harness.BuildBinaries(t, "./kafka-monitor/cmd/kafka-monitor"), "kafka-monitor")
	// The production defaults: commits as the monitor makes them, INFO logs.
	args := []string{"--set", "KAFKA_HOSTS=" + k.Hosts(), "--set", "REDIS_HOST=127.0.0.1", "--set", "REDIS_PORT=" + strconv.Itoa(r.Port),
		"--set", "STATS_DUMP=0", "--set", "ADMIN_ADDR=127.0.0.1:0", "--log-level", "INFO", "--log-json"}
	ctx := context.Background()
	rdb := r.TestClient(t)
	const queue, seeds = "link:example.com:queue", 300

	kcfg := kafkaclient.Config{Brokers: []string{k.Addrs[0]}, ConnTimeout: 5 * time.Second, MaxRequestBytes: 1 << 20}
	if err := kcfg.EnsureTopics(ctx, kafkaclient.TopicSpec{Name: "demo.incoming", Partitions: 6}); err != nil {
		t.Fatal(err)
	}
	w := kcfg.NewWriter("demo.incoming")
	w.BatchSize = 1 // each seed on its own, as clients feed them
	defer w.Close()
	feed := func(i int) {
		t.Helper()
		seed := fmt.Sprintf(`{"url": "http://kill.example.com/seed/%d", "appid": "testapp", "crawlid": "seed-%d"}`, i, i)
		if err := w.WriteMessages(ctx, kafka.Message{Value: []byte(seed)}); err != nil {
			t.Fatal(err)
		}
	}

	first := startMonitor(t, bin, args...)
	feed(0)
	waitUntil(t, time.Minute, "the first monitor stores the first seed", func() bool { return rdb.ZCard(ctx, queue).Val() == 1 })
	// Feed as fast as the writer goes, but at most 100 ahead of the monitor:
	// it has stored some and is busy with a batch when it is killed.
	for i := 1; i < seeds/2; i++ {
		waitUntil(t, time.Minute, "the monitor keeps up", func() bool { return rdb.ZCard(ctx, queue).Val() >= int64(i-100) })
		feed(i)
	}
	first.Kill()
	storedByFirst := rdb.ZCard(ctx, queue).Val()
	for i := seeds / 2; i < seeds; i++ {
		feed(i)
	}

	second := startMonitor(t, bin, args...)
	ids := func() map[string]int {
		n := map[string]int{}
		for _, m := range rdb.ZRange(ctx, queue, 0, -1).Val() {
			var req struct{ CrawlID string }
			if err := json.Unmarshal([]byte(m), &req); err != nil {
				t.Fatalf("queue member %q: %v", m, err)
			}
			n[req.CrawlID]++
		}
		return n
	}
	// Every partition got seeds after the kill, behind any redelivered ones:
	// once all are stored, nothing more will come.
	waitUntil(t, 2*time.Minute, "every seed is stored", func() bool { return len(ids()) == seeds })
	second.Signal(syscall.SIGTERM)
	if err := second.Wait(); err != nil {
		t.Fatalf("second monitor after SIGTERM: %v", err)
	}

	got := ids()
	twice := 0
	for i := range seeds {
		switch n := got[fmt.Sprintf("seed-%d", i)]; {
		case n == 0:
			t.Errorf("seed-%d lost", i)
		case n > 1:
			twice += n - 1
		}
	}
	skipped := 0
	for line := range strings.SplitSeq(second.Output().String(), "\n") {
		var entry struct {
			Message  string
			Messages int
		}
		if json.Unmarshal([]byte(line), &entry) == nil && strings.HasPrefix(entry.Message, "Skipped requests stored before") {
			skipped += entry.Messages
		}
	}
	// Whatever the kill cut short, each crawl counts the seeds its queue holds.
	for i := range seeds {
		c := ledger.Crawl{SpiderID: "link", AppID: "testapp", CrawlID: fmt.Sprintf("seed-%d", i)}
		if counted := rdb.HGet(ctx, c.Key(), ledger.FieldSeeds).Val(); counted != strconv.Itoa(got[c.CrawlID]) {
			t.Errorf("seed-%d: queued %d times, counted %q times in its ledger", i, got[c.CrawlID], counted)
		}
	}
	t.Logf("%d seeds stored by the killed monitor, %d delivered again and skipped, %d stored again", storedByFirst, skipped, twice)
	if limit := seeds / 100; twice > limit {
		t.Errorf("%d of %d seeds stored twice, want at most %d (1%%)", twice, seeds, limit)
	}
}

func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	harness.WaitFor(t, what, timeout, cond)
}
