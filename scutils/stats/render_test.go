package stats

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// Render queues are backlog: a domain's counts the requests of its queue
// and its render queue, and render_backlog says how many of them wait for
// a rendering crawler; the shape without render queues is the spec's.
func TestRenderQueuesCountInTheirDomainsBacklog(t *testing.T) {
	rdb := harness.StartRedis(t).TestClient(t)
	ctx := context.Background()
	now := time.Now()
	writeClusterState(t, rdb, now)
	fill(t, rdb, rediskeys.RenderQueueKey("link", "dmoz.org"), 4)
	fill(t, rdb, rediskeys.RenderQueueKey("link", "spa.example"), 1)
	// Not render queues: the wrong suffix, a colon in the domain.
	fill(t, rdb, "link:dmoz.org:renderqueues", 7)
	fill(t, rdb, "link:a:b:renderqueue", 7)

	r := Reader{Redis: rdb, Now: now}
	want := &QueueStats{
		Spiders: map[string]*SpiderQueue{
			"link": {Domains: []DomainBacklog{{Domain: "dmoz.org", Backlog: 6, RenderBacklog: 4}, {Domain: "istresearch.com", Backlog: 3},
				{Domain: "spa.example", Backlog: 1, RenderBacklog: 1}}, SpiderBacklog: 10, NumDomains: 3, RenderBacklog: 5},
			"wandering": {Domains: []DomainBacklog{{Domain: "example.com", Backlog: 1}}, SpiderBacklog: 1, NumDomains: 1},
		},
		TotalBacklog:  11,
		RenderBacklog: 5,
	}
	queues, err := r.Queues(ctx)
	if err != nil {
		t.Fatal(err)
	}
	check(t, "Queues", queues, want)
	_, queues, err = r.CrawlersAndQueues(ctx)
	if err != nil {
		t.Fatal(err)
	}
	check(t, "CrawlersAndQueues", queues, want)
	cluster, err := r.Cluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	check(t, "Cluster", cluster.Queues, want)
	got, err := json.Marshal(cluster.Queues.Section())
	if err != nil {
		t.Fatal(err)
	}
	const section = `{"queue_link":{"domains":[{"domain":"dmoz.org","backlog":6,"render_backlog":4},{"domain":"istresearch.com","backlog":3},` +
		`{"domain":"spa.example","backlog":1,"render_backlog":1}],"spider_backlog":10,"num_domains":3,"render_backlog":5},` +
		`"queue_wandering":{"domains":[{"domain":"example.com","backlog":1}],"spider_backlog":1,"num_domains":1},"total_backlog":11,"total_render_backlog":5}`
	if string(got) != section {
		t.Errorf("Section:\n got  %s\n want %s", got, section)
	}
}
