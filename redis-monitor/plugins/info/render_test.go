package info_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// renderQueue adds n render requests of a crawl to a domain's render
// queue, as the Kafka Monitor queues them.
func renderQueue(t *testing.T, rdb *redis.Client, domain, appid, crawlid string, priority, n int) {
	t.Helper()
	for i := range n {
		member := fmt.Sprintf(`{"appid":%q,"crawlid":%q,"priority":%d,"render":true,"spiderid":"link","url":"http://%s/r/%d"}`,
			appid, crawlid, priority, domain, i)
		if err := rdb.ZAdd(context.Background(), rediskeys.RenderQueueKey("link", domain), redis.Z{Score: float64(-priority), Member: member}).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// Render requests wait for a rendering crawler: info counts them in
// total_pending and in their domain's entry, beside the domain's ordinary
// requests.
func TestCrawlInfoCountsTheRenderRequests(t *testing.T) {
	f, rdb := setup(t)
	queue(t, rdb, "spa.example", "testapp", "ABC123", 5, 1, 0)
	renderQueue(t, rdb, "spa.example", "testapp", "ABC123", 7, 2)
	renderQueue(t, rdb, "app.example", "testapp", "ABC123", 1, 3)
	renderQueue(t, rdb, "app.example", "testapp", "other", 1, 4)
	got := ask(t, f, rdb, "info:link:testapp:ABC123", "u1")
	assertAnswer(t, got, `{
		"server_time": 1767323045, "crawlid": "ABC123",
		"total_pending": 6, "total_domains": 2,
		"spiderid": "link", "appid": "testapp",
		"domains": {
			"spa.example": {"low_priority": 5, "high_priority": 7, "total": 3},
			"app.example": {"low_priority": 1, "high_priority": 1, "total": 3}
		},
		"uuid": "u1"
	}`)
}

func TestAppInfoCountsTheRenderRequests(t *testing.T) {
	f, rdb := setup(t)
	queue(t, rdb, "spa.example", "testapp", "c1", 5, 1, 0)
	renderQueue(t, rdb, "spa.example", "testapp", "c1", 5, 2)
	renderQueue(t, rdb, "app.example", "testapp", "c2", 1, 3)
	renderQueue(t, rdb, "app.example", "otherapp", "c2", 1, 4)
	got := ask(t, f, rdb, "info:link:testapp", "u2")
	assertAnswer(t, got, `{
		"server_time": 1767323045, "uuid": "u2",
		"total_pending": 6, "total_domains": 2, "total_crawlids": 2,
		"spiderid": "link", "appid": "testapp",
		"crawlids": {
			"c1": {"domains": {"spa.example": {"low_priority": 5, "high_priority": 5, "total": 3}}, "distinct_domains": 1, "total": 3},
			"c2": {"domains": {"app.example": {"low_priority": 1, "high_priority": 1, "total": 3}}, "distinct_domains": 1, "total": 3}
		}
	}`)
}
