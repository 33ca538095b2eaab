package expire_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/redis-monitor/plugin/plugintest"
	"github.com/scrapycluster/scrapy-cluster-go/redis-monitor/plugins/expire"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// An expired crawl's render requests go with its others.
func TestExpirePurgesTheCrawlsRenderRequests(t *testing.T) {
	rdb := plugintest.EmptyRedis(t)
	ctx := context.Background()
	f := plugintest.Setup(t, &expire.Monitor{}, rdb, nil, nil)
	deadline := f.Clock.Add(time.Minute)
	queue := rediskeys.RenderQueueKey("link", "spa.example")
	for i := range 5 {
		rdb.ZAdd(ctx, queue, redis.Z{Score: -1, Member: fmt.Sprintf(
			`{"appid":"testapp","crawlid":"ist234","expires":%d,"priority":1,"render":true,"url":"http://spa.example/%d"}`, deadline.Unix(), i)})
	}
	rdb.ZAdd(ctx, queue, redis.Z{Score: -1, Member: `{"appid":"testapp","crawlid":"other","priority":1,"render":true,"url":"http://spa.example/x"}`})
	key := "timeout:link:testapp:ist234"
	rdb.Set(ctx, key, deadline.Unix(), 0)
	f.Clock = deadline.Add(time.Second)
	if handled, err := f.Process(ctx, key); !handled || err != nil {
		t.Fatalf("handled %v, %v after the deadline", handled, err)
	}
	f.ExpectOnlyAnswer(t, `{"total_expired": 5, "server_time": 1767323106, "crawlid": "ist234",
		"spiderid": "link", "appid": "testapp", "action": "expired"}`)
	if n := rdb.ZCard(ctx, queue).Val(); n != 1 {
		t.Fatalf("%d render requests left, want the other crawl's 1", n)
	}
}
