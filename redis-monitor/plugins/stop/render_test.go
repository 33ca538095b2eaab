package stop_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/redis-monitor/plugin/plugintest"
	"github.com/scrapycluster/scrapy-cluster-go/redis-monitor/plugins/stop"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// A stop purges the crawl's render requests with its others: none is
// left for a rendering crawler to fetch.
func TestStopPurgesTheCrawlsRenderRequests(t *testing.T) {
	rdb := plugintest.EmptyRedis(t)
	ctx := context.Background()
	f := plugintest.Setup(t, &stop.Monitor{}, rdb, nil, nil)
	keep := `{"appid":"testapp","crawlid":"keep","priority":1,"render":true,"url":"http://spa.example/k"}`
	for i := range 3 {
		rdb.ZAdd(ctx, rediskeys.RenderQueueKey("link", "spa.example"), redis.Z{Score: -1,
			Member: fmt.Sprintf(`{"appid":"testapp","crawlid":"ABC123","priority":1,"render":{"timeout":5},"url":"http://spa.example/%d"}`, i)})
	}
	rdb.ZAdd(ctx, rediskeys.RenderQueueKey("link", "spa.example"), redis.Z{Score: -1, Member: keep})
	rdb.ZAdd(ctx, rediskeys.QueueKey("link", "spa.example"), redis.Z{Score: -1, Member: `{"appid":"testapp","crawlid":"ABC123","priority":1,"url":"http://spa.example/plain"}`})
	rdb.Set(ctx, "stop:link:testapp:ABC123", "u1", 0)
	if _, err := f.Process(ctx, "stop:link:testapp:ABC123"); err != nil {
		t.Fatal(err)
	}
	f.ExpectOnlyAnswer(t, `{"total_purged": 4, "server_time": 1767323045, "crawlid": "ABC123",
		"uuid": "u1", "spiderid": "link", "appid": "testapp", "action": "stop"}`)
	if got := rdb.ZRange(ctx, rediskeys.RenderQueueKey("link", "spa.example"), 0, -1).Val(); !reflect.DeepEqual(got, []string{keep}) {
		t.Errorf("the render queue holds %v, want only the other crawl's %s", got, keep)
	}
	if n := rdb.Exists(ctx, rediskeys.QueueKey("link", "spa.example")).Val(); n != 0 {
		t.Error("the crawl's ordinary request is left")
	}
}
