package cluster_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/testsite"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// With STATS_RESPONSE_BUCKETS on one Redis, the crawler counts its
// responses in one hash of time buckets per host, spider and code (as on a
// Redis Cluster) and writes none of the original's sorted sets, and the
// Redis Monitor's crawler stats count every page in every window and the
// lifetime, by spider and by machine.
func TestResponseCountsInTimeBucketsOnOneRedis(t *testing.T) {
	site := testsite.StartAt(t, "127.0.0.1:0")
	c := newCluster(t, harness.RedisOptions{}, map[string]string{"STATS_RESPONSE_BUCKETS": "true"})
	crawled := c.watch("crawled_firehose")
	outbound := c.watch("outbound_firehose")
	want := testsite.Reachable(site.URL("/"), 1, notFile, site)
	c.feed(map[string]any{"url": site.URL("/"), "appid": appID, "crawlid": "buckets", "maxdepth": 1})
	expectCrawl(t, crawled, "buckets", want, 60*time.Second)

	// The crawler writes its counts every 250 ms: ask until they are in.
	var answer map[string]any
	count := func(path ...string) int {
		m := answer
		for _, k := range path[:len(path)-1] {
			m, _ = m[k].(map[string]any)
		}
		n, _ := m[path[len(path)-1]].(float64)
		return int(n)
	}
	for i := 0; ; i++ {
		uuid := fmt.Sprintf("stats-crawler-%d", i)
		c.feed(map[string]any{"stats": "crawler", "appid": appID, "uuid": uuid})
		answer = outbound.await(t, "the crawler stats", 30*time.Second, byUUID(uuid))
		if count("spiders", "link", "200", "lifetime") >= len(want) || i == 30 {
			break
		}
	}
	machines := obj(t, answer, "machines")
	if len(machines) != 2 || count("machines", "count") != 1 {
		t.Fatalf("crawler stats: machines %s, want one", brief(machines))
	}
	for host := range machines {
		if host == "count" {
			continue
		}
		for _, w := range []string{"900", "3600", "21600", "43200", "86400", "604800", "lifetime"} {
			if n, m := count("spiders", "link", "200", w), count("machines", host, "200", w); n != len(want) || m != len(want) {
				t.Errorf("crawler stats, window %s: spider %d, machine %s %d, want the %d pages crawled", w, n, host, m, len(want))
			}
		}
		hash := rediskeys.Single.WithResponseBuckets(true).CrawlerResponses(host, "link", "200")
		if n, err := c.rdb.HGet(context.Background(), hash, "lifetime").Int(); err != nil || n != len(want) {
			t.Errorf("%s lifetime: %d (%v), want %d", hash, n, err, len(want))
		}
	}
	if count("spiders", "link", "count") != 1 {
		t.Errorf("crawler stats: %s, want one link crawler", brief(obj(t, answer, "spiders")))
	}
	if zsets := c.rdb.Keys(context.Background(), "stats:crawler:*:link:200:*").Val(); len(zsets) != 0 {
		t.Errorf("the original's response counts were written too: %q", zsets)
	}
}
