package monitor_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/redis-monitor/monitor"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// work writes a crawl's ledger as the Kafka Monitor and a crawler do: n
// requests queued, then done of them published.
func work(t *testing.T, c *cluster, crawl ledger.Crawl, n, done int) {
	t.Helper()
	harness.CrawlerTally(t, c.rdb, crawl, n, done, time.Now())
}

func completes(answers []map[string]any) map[string]int {
	out := map[string]int{}
	for _, a := range answers {
		if a["action"] == "crawl-complete" {
			out[fmt.Sprint(a["crawlid"])]++
		}
	}
	return out
}

func TestThreeMonitorsPublishEachCrawlCompleteOnce(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	fast := map[string]string{"LEDGER_COMPLETE_INTERVAL": "0.02"}
	monitors := []*running{c.start(t, fast), c.start(t, fast), c.start(t, fast)}
	const n = 60
	for i := range n {
		work(t, c, ledger.Crawl{SpiderID: "link", AppID: "testapp", CrawlID: fmt.Sprintf("c%d", i)}, 3, 3)
	}
	pending := ledger.Crawl{SpiderID: "link", AppID: "testapp", CrawlID: "pending"}
	work(t, c, pending, 3, 2) // one request still queued or leased: not complete
	got := c.answers(t, "demo.outbound_firehose", n)
	counts := completes(got)
	for i := range n {
		if id := fmt.Sprintf("c%d", i); counts[id] != 1 {
			t.Errorf("crawl %s completed %d times in the first %d messages, want once", id, counts[id], n)
		}
	}
	waitFor(t, "every finished crawl to leave the active set", func() bool {
		m := c.rdb.ZRange(ctx, rediskeys.LedgerActiveKey, 0, -1).Val()
		return len(m) == 1 && m[0] == pending.Member()
	})
	// The last request of the pending crawl is done: it completes too.
	work(t, c, pending, 0, 1)
	got = c.answers(t, "demo.outbound_firehose", n+1)
	if counts := completes(got); counts["pending"] != 1 {
		t.Fatalf("the pending crawl completed %d times once done, want once", counts["pending"])
	}
	waitFor(t, "the active set to empty", func() bool { return c.rdb.ZCard(ctx, rediskeys.LedgerActiveKey).Val() == 0 })
	published, shares := shutdownAll(t, monitors, (*monitor.Monitor).Completed)
	if published != n+1 {
		t.Fatalf("monitors published %d crawl-complete messages (%s), want exactly %d", published, shares, n+1)
	}
	t.Logf("shares of the %d completions:%s", n+1, shares)
}

func TestACrawlCompleteHasItsShapeOnTheFirehoseAndTheAppIDTopic(t *testing.T) {
	c := newCluster(t)
	c.start(t, map[string]string{"KAFKA_APPID_TOPICS": "true"})
	crawl := ledger.Crawl{SpiderID: "link", AppID: "testapp", CrawlID: "abc"}
	before := time.Now().Unix()
	work(t, c, crawl, 2, 2)
	for _, topic := range []string{"demo.outbound_firehose", "demo.outbound_testapp"} {
		m := c.answers(t, topic, 1)[0]
		progress, _ := m["progress"].(map[string]any)
		st, _ := m["server_time"].(float64)
		if m["action"] != "crawl-complete" || m["appid"] != "testapp" || m["crawlid"] != "abc" || m["spiderid"] != "link" ||
			m["reason"] != "finished" || int64(st) < before || len(m) != 7 {
			t.Errorf("%s: %v", topic, m)
		}
		if progress["state"] != "complete" || progress["enqueued"] != 2.0 || progress["published"] != 2.0 || progress["done"] != 2.0 ||
			progress["queued"] != 0.0 || progress["in_flight"] != 0.0 || fmt.Sprint(progress["status_codes"]) != "map[200:2]" {
			t.Errorf("%s: progress %v", topic, progress)
		}
	}
	ps, err := ledger.Read(context.Background(), c.rdb, crawl)
	if err != nil || ps[0] == nil || ps[0].State != ledger.StateComplete {
		t.Fatalf("the crawl's progress after its crawl-complete: %+v (%v), want complete", ps, err)
	}
}

func TestACrawlCompleteWaitsForKafkaToComeBack(t *testing.T) {
	c, r, restoreKafka := startWithoutKafka(t)
	ctx := context.Background()
	crawl := ledger.Crawl{SpiderID: "link", AppID: "testapp", CrawlID: "outage"}
	work(t, c, crawl, 1, 1)
	waitFor(t, "the monitor trying to publish", func() bool { return r.log.Contains("Failed to send to Kafka; retrying") })
	if c.rdb.HExists(ctx, crawl.Key(), ledger.FieldCompleted).Val() {
		t.Fatal("crawl marked completed before its crawl-complete was sent")
	}
	restoreKafka()
	waitFor(t, "the crawl marked completed after Kafka came back", func() bool {
		return c.rdb.HExists(ctx, crawl.Key(), ledger.FieldCompleted).Val()
	})
	if got := c.answers(t, "demo.outbound_firehose", 1); got[0]["crawlid"] != "outage" || got[0]["action"] != "crawl-complete" {
		t.Fatalf("message %v", got[0])
	}
	r.shutdown(t)
	if n := r.m.Completed(); n != 1 {
		t.Fatalf("published %d crawl-complete messages, want 1", n)
	}
	if n := strings.Count(r.log.String(), "Sent crawl-complete to kafka"); n != 1 {
		t.Fatalf("logged %d sent crawl-completes, want 1", n)
	}
}
