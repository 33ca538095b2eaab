package monitor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/redis-monitor/monitor"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

func TestDumpsFlattenCrawlerAndQueueStatsAsTheOriginal(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	now := float64(time.Now().UnixNano()) / 1e9
	for i, host := range []string{"host1", "host2"} {
		c.rdb.Set(ctx, rediskeys.CrawlerHeartbeatKey(host, "link", fmt.Sprint("id", i)), now, time.Minute)
		c.rdb.ZAdd(ctx, rediskeys.CrawlerStatusKey(host, "link", "200")+":900", redis.Z{Score: now, Member: fmt.Sprint("hit", i)})
		c.rdb.PFAdd(ctx, rediskeys.CrawlerStatusKey(host, "link", "200")+":lifetime", fmt.Sprint("hit", i))
	}
	for i := range 3 {
		c.rdb.ZAdd(ctx, "link:istresearch.com:queue", redis.Z{Score: -1, Member: fmt.Sprintf(`{"appid":"a","crawlid":"c","n":%d}`, i)})
	}
	c.rdb.ZAdd(ctx, "wandering:dmoz.org:queue", redis.Z{Score: -1, Member: `{"appid":"a","crawlid":"c"}`})
	r := c.start(t, map[string]string{"STATS_DUMP": "1"})
	waitFor(t, "the three dumps", func() bool {
		return r.log.Contains(`"Crawler Stats Dump"`) && r.log.Contains(`"Queue Stats Dump"`) && r.log.Contains(`"Redis Monitor Stats Dump"`)
	})

	crawl, err := monitor.CrawlDump(ctx, r.m)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"link_200_900":2,"link_200_lifetime":2,"link_spider_count":2,"total_spider_count":2,"unique_spider_count":1}`
	if got, _ := json.Marshal(crawl); string(got) != want {
		t.Errorf("crawl dump %s, want %s", got, want)
	}
	queue, err := monitor.QueueDump(ctx, r.m)
	if err != nil {
		t.Fatal(err)
	}
	want = `{"queue_link":{"num_domains":1,"spider_backlog":3},"queue_wandering":{"num_domains":1,"spider_backlog":1},"total_backlog":4}`
	if got, _ := json.Marshal(queue); string(got) != want {
		t.Errorf("queue dump %s, want %s", got, want)
	}
}
