package domainqueues_test

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/domainqueues"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

func TestScanVisitsTheRenderQueuesToo(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	seed(t, rdb, rediskeys.QueueKey("link", "a.com"), req("app", "c1", 1))
	seed(t, rdb, rediskeys.RenderQueueKey("link", "a.com"), req("app", "c1", 2), req("app", "c2", 3))
	seed(t, rdb, rediskeys.RenderQueueKey("link", "b.com"), req("app", "c1", 4))
	seed(t, rdb, rediskeys.RenderQueueKey("other", "a.com"), req("app", "c1", 5))
	seed(t, rdb, "link:a:b.com:renderqueue", req("app", "c1", 6)) // not a render queue
	var seen []string
	err := domainqueues.Scan(ctx, rdb, "link", func(q domainqueues.Queue) error {
		seen = append(seen, fmt.Sprintf("%s render=%v n=%d", q.Domain, q.Render, len(q.Entries)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(seen)
	if want := []string{"a.com render=false n=1", "a.com render=true n=2", "b.com render=true n=1"}; !reflect.DeepEqual(seen, want) {
		t.Errorf("seen %v, want %v", seen, want)
	}
	keys, err := domainqueues.Keys(ctx, rdb, "link")
	if want := []string{"link:a.com:queue", "link:a.com:renderqueue", "link:b.com:renderqueue"}; err != nil || !reflect.DeepEqual(keys, want) {
		t.Errorf("Keys = %v, %v; want %v", keys, err, want)
	}
	domains, pending, err := domainqueues.CrawlDomains(ctx, rdb, "link", "app", "c1")
	if err != nil || pending != 3 || domains["a.com"].Total != 2 || domains["b.com"].Total != 1 || len(domains) != 2 {
		t.Errorf("CrawlDomains = %v, %d, %v; want a.com 2 (queue and render queue), b.com 1", domains, pending, err)
	}
}

func TestPurgeEmptiesTheCrawlsRenderQueuesWithItsQueues(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	crawl := ledger.Crawl{SpiderID: "link", AppID: "app", CrawlID: "stopme"}
	seed(t, rdb, rediskeys.QueueKey("link", "a.com"), req("app", "stopme", 1), req("app", "keep", 2))
	seed(t, rdb, rediskeys.RenderQueueKey("link", "a.com"), req("app", "stopme", 3), req("app", "stopme", 4), req("app", "keep", 5))
	var tl ledger.Tally
	tl.Enqueued(crawl, 3)
	pipe := rdb.TxPipeline()
	tl.Write(ctx, pipe, time.Now(), time.Hour)
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	n, err := domainqueues.Purge(ctx, rdb, "link", "app", "stopme", ledger.PurgedStop, time.Now())
	if err != nil || n != 3 {
		t.Fatalf("purged %d, %v; want 3", n, err)
	}
	for key, want := range map[string][]string{
		rediskeys.QueueKey("link", "a.com"):       {req("app", "keep", 2)},
		rediskeys.RenderQueueKey("link", "a.com"): {req("app", "keep", 5)},
	} {
		if got := rdb.ZRange(ctx, key, 0, -1).Val(); !reflect.DeepEqual(got, want) {
			t.Errorf("%s holds %v, want %v", key, got, want)
		}
	}
	ps, err := ledger.Read(ctx, rdb, crawl)
	if err != nil {
		t.Fatal(err)
	}
	if p := ps[0]; p.Purged["stop"] != 3 || p.Queued != 0 {
		t.Errorf("progress %+v, want 3 purged by the stop, none queued", p)
	}
}
