package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/rest/frontier/frontiertest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisconn"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// clusterDomains are the 20 domains of the big crawl: their keys spread
// over all three masters of a test cluster.
func clusterDomains() []string {
	out := make([]string, 20)
	for i := range out {
		out[i] = fmt.Sprintf("site%d.example", i)
	}
	return out
}

// writeCrawls writes, in layout l, what the Kafka Monitor and the crawlers
// write of these crawls: "big" of app1 over the 20 domains (domain i with
// i%3+1 seeds; 2 pages published in site2.example; 1 link refused as a
// duplicate in site5.example, 2 as off-domain in other.test, a domain it
// has nothing queued in), five small crawls of app1, one of spider
// wandering, one whose ledger expired (its shares deleted), its
// request still queued, and two of app4 started at the same instant.
func writeCrawls(t *testing.T, rdb redis.UniversalClient, l rediskeys.Layout) {
	t.Helper()
	t0 := time.Unix(1767323000, 0)
	big := ledger.Crawl{SpiderID: "link", AppID: "app1", CrawlID: "big"}
	seeds := map[string]int{}
	for i, d := range clusterDomains() {
		seeds[d] = i%3 + 1
	}
	frontiertest.Seed(t, rdb, l, big, t0.Add(30*time.Minute), seeds)
	frontiertest.Crawled(t, rdb, l, big, "site2.example", 2, nil, t0.Add(31*time.Minute))
	frontiertest.Crawled(t, rdb, l, big, "site5.example", 0, map[ledger.Reason]int{ledger.RefusedDuplicate: 1}, t0.Add(31*time.Minute))
	frontiertest.Crawled(t, rdb, l, big, "other.test", 0, map[ledger.Reason]int{ledger.RefusedOffDomain: 2}, t0.Add(32*time.Minute))
	for i := range 5 {
		c := ledger.Crawl{SpiderID: "link", AppID: "app1", CrawlID: fmt.Sprintf("c%d", i)}
		frontiertest.Seed(t, rdb, l, c, t0.Add(time.Duration(i)*time.Minute), map[string]int{fmt.Sprintf("site%d.example", 4*i): 1})
	}
	w := ledger.Crawl{SpiderID: "wandering", AppID: "app2", CrawlID: "w"}
	frontiertest.Seed(t, rdb, l, w, t0.Add(10*time.Minute), map[string]int{"b.test": 2})
	frontiertest.Crawled(t, rdb, l, w, "b.test", 1, nil, t0.Add(11*time.Minute))
	gone := ledger.Crawl{SpiderID: "link", AppID: "app3", CrawlID: "gone"}
	frontiertest.Seed(t, rdb, l, gone, t0.Add(20*time.Minute), map[string]int{"site7.example": 1})
	if err := rdb.Del(context.Background(), gone.LedgerIn(l, "site7.example").Hash).Err(); err != nil {
		t.Fatal(err)
	}
	for i, id := range []string{"t1", "t2"} {
		tied := ledger.Crawl{SpiderID: "link", AppID: "app4", CrawlID: id}
		frontiertest.Seed(t, rdb, l, tied, t0.Add(40*time.Minute), map[string]int{fmt.Sprintf("site%d.example", 1+8*i): 1})
	}
}

// startClusterInstance runs a REST instance on the Redis Cluster rc (and
// c's Kafka), with the client the service builds from its settings.
func startClusterInstance(t *testing.T, c *cluster, rc *harness.RedisCluster) *instance {
	t.Helper()
	s := settingsFor(t, c.redis.Port, c.kafka.Hosts(), "REDIS_CLUSTER_NODES="+rc.Seeds(), "ZOOKEEPER_HOSTS=")
	logs := &harness.OutputBuffer{}
	log := harness.Logger(t, logfactory.Settings("").Config(s), logs)
	rdb := redisconn.New(s)
	in := serveInstance(t, s, log, logs, rdb)
	harness.WaitFor(t, "the service connects to Kafka and the Redis Cluster", 20*time.Second, func() bool {
		return in.svc.KafkaConnected() && in.svc.RedisConnected()
	})
	return in
}

// The REST service on a Redis Cluster answers /crawls and /crawls/<id>,
// and its console shows the crawls, a crawl and the domains' queues, from
// the keys of every master: exactly what it answers for the same crawls
// on one Redis, with the figures the one-Redis tests expect.
func TestCrawlsOnARedisClusterReadAsOnOneRedis(t *testing.T) {
	c := newCluster(t)
	rc := harness.StartRedisCluster(t)
	cc := rc.TestClient(t)
	masters := map[string]bool{}
	for _, d := range clusterDomains() {
		masters[rc.MasterOf(t, rediskeys.Cluster.Queue("link", d)).Addr] = true
	}
	if len(masters) != 3 {
		t.Fatalf("the 20 domains' queues are on %d masters, want all 3", len(masters))
	}
	writeCrawls(t, c.rdb, rediskeys.Single)
	writeCrawls(t, cc, rediskeys.Cluster)
	single, onCluster := c.start(t, "ZOOKEEPER_HOSTS="), startClusterInstance(t, c, rc)

	for _, path := range []string{"/crawls", "/crawls?appid=app1&offset=1&limit=2", "/crawls?appid=app3", "/crawls?appid=app4", "/crawls/big?appid=app1",
		"/crawls/w?appid=app2&spiderid=wandering", "/crawls/gone?appid=app3"} {
		one, two := single.do(t, "GET", path, "", ""), onCluster.do(t, "GET", path, "", "")
		if one.Code != two.Code || harness.JSONText(t, one.Body) != harness.JSONText(t, two.Body) {
			t.Errorf("GET %s\none Redis: %d %s\ncluster:   %d %s", path, one.Code, harness.JSONText(t, one.Body), two.Code, harness.JSONText(t, two.Body))
		}
	}
	a := onCluster.do(t, "GET", "/crawls", "", "")
	if got := fmt.Sprint(crawlIDs(t, a)); got != "[link/app4/t2 link/app4/t1 link/app1/big wandering/app2/w link/app1/c4 link/app1/c3 link/app1/c2 link/app1/c1 link/app1/c0]" {
		t.Errorf("crawls %s", got)
	}
	if total := a.Body["data"].(map[string]any)["total"]; total != 9.0 {
		t.Errorf("total %v, want 9 (the expired crawl dropped)", total)
	}
	gone := ledger.Crawl{SpiderID: "link", AppID: "app3", CrawlID: "gone"}
	if n := cc.ZCard(context.Background(), rediskeys.Cluster.LedgerCrawls("site7.example")).Val(); n != 1 {
		t.Errorf("site7.example's index holds %d crawls after the listing, want 1 (big; %s dropped)", n, gone.CrawlID)
	}

	a = onCluster.do(t, "GET", "/crawls/big?appid=app1", "", "")
	data := a.Body["data"].(map[string]any)
	p := data["progress"].(map[string]any)
	wantRefused := map[string]any{"duplicate": 1.0, "off_domain": 2.0}
	if p["seeds"] != 39.0 || p["published"] != 2.0 || p["queued"] != 37.0 || p["done"] != 2.0 || p["state"] != "running" ||
		fmt.Sprint(p["refused"]) != fmt.Sprint(wantRefused) || p["started"] != 1767324800.0 || p["last_activity"] != 1767324920.0 {
		t.Errorf("progress %v", p)
	}
	domains := data["domains"].(map[string]any)
	for i, d := range clusterDomains() {
		if got := domains[d].(map[string]any)["total"]; got != float64(i%3+1) {
			t.Errorf("domain %s total %v, want %d", d, got, i%3+1)
		}
	}
	if len(domains) != 20 || data["total_pending"] != 39.0 {
		t.Errorf("%d domains, %v pending; want 20 and 39", len(domains), data["total_pending"])
	}

	// A crawl without a schedule: cancelling one says so in both modes, and
	// a crawl request with one goes to Kafka on a cluster as on one Redis.
	a = onCluster.post(t, "/recrawl/cancel", `{"appid":"app1","crawlid":"big"}`)
	if a.Code != 409 || !strings.Contains(a.Raw, "was fed without a recrawl object") {
		t.Errorf("recrawl/cancel: %d %s", a.Code, a.Raw)
	}
	if a = single.post(t, "/recrawl/cancel", `{"appid":"app1","crawlid":"big"}`); a.Code != 409 || !strings.Contains(a.Raw, "was fed without a recrawl object") {
		t.Errorf("recrawl/cancel on one Redis: %d %s", a.Code, a.Raw)
	}
	if a = onCluster.post(t, "/feed", `{"url":"http://a.test/","appid":"app1","crawlid":"r","recrawl":{"every":60}}`); a.Code != 200 {
		t.Errorf("feed of a scheduled crawl: %d %s", a.Code, a.Raw)
	}
	scheduleBig(t, c.rdb, cc)
	one, two := single.do(t, "GET", "/crawls/big?appid=app1", "", ""), onCluster.do(t, "GET", "/crawls/big?appid=app1", "", "")
	if harness.JSONText(t, one.Body) != harness.JSONText(t, two.Body) {
		t.Errorf("GET /crawls/big of a scheduled crawl\none Redis: %s\ncluster:   %s", harness.JSONText(t, one.Body), harness.JSONText(t, two.Body))
	}
	data = two.Body["data"].(map[string]any)
	runs, _ := data["runs"].([]any)
	if sched, _ := data["recrawl"].(map[string]any); sched["runs_started"] != 2.0 || len(runs) != 2 ||
		runs[0].(map[string]any)["progress"].(map[string]any)["published"] != 4.0 {
		t.Errorf("the scheduled crawl on a cluster: recrawl %v, runs %v; want 2 runs, run 1 with 4 published", data["recrawl"], data["runs"])
	}
	for _, in := range []*instance{single, onCluster} {
		a = in.post(t, "/recrawl/cancel", `{"appid":"app1","crawlid":"big"}`)
		data, _ := a.Body["data"].(map[string]any)
		if sched, _ := data["recrawl"].(map[string]any); a.Code != 200 || sched["state"] != "ended" || sched["ended_by"] != "cancel" {
			t.Errorf("recrawl/cancel of a scheduled crawl: %d %s", a.Code, a.Raw)
		}
	}

	// The console's pages: the same tables in both modes.
	for _, page := range []struct{ path, id string }{
		{"/ui/crawls", "crawls"}, {"/ui/crawls?appid=app1&offset=0", "crawls"},
		{"/ui/crawl?spiderid=link&appid=app1&crawlid=big", "crawl-queues"},
		{"/ui/crawls", "crawls-total"}, {"/ui/crawls", "crawls-active"},
		{"/ui/domains", "domains"},
	} {
		one, two := pageElement(t, single.url+page.path, page.id), pageElement(t, onCluster.url+page.path, page.id)
		if one != two {
			t.Errorf("%s #%s\none Redis:\n%s\ncluster:\n%s", page.path, page.id, one, two)
		}
	}
	crawls := getPage(t, onCluster.url+"/ui/crawls")
	for _, want := range []string{`<span id="crawls-total">9</span>`, `<span id="crawls-active">10</span>`, `<tr data-crawlid="big" data-state="running">`} {
		if !strings.Contains(crawls, want) {
			t.Errorf("the crawls page lacks %s", want)
		}
	}
	crawl := getPage(t, onCluster.url+"/ui/crawl?spiderid=link&appid=app1&crawlid=big")
	for _, want := range []string{`<td id="ledger-queued">37</td>`, `<span id="queued-total">39</span>`, `<span id="crawl-progress-text">2 / 39 done (5%)</span>`} {
		if !strings.Contains(crawl, want) {
			t.Errorf("the crawl page lacks %s", want)
		}
	}
	if strings.Contains(crawl, `class="error"`) {
		t.Errorf("the crawl page shows an error:\n%s", crawl)
	}
}

// getPage is the body of a console page that answers 200.
func getPage(t *testing.T, url string) string {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, res.StatusCode, body)
	}
	return string(body)
}

// agoCell is a cell of a time relative to the page's rendering: a
// moment ago, or a running crawl's time so far.
var agoCell = regexp.MustCompile(`<td>[^<]* ago</td>|<td class="n">\d+h \d\dm</td>`)

// pageElement is the element of id (a table or a section, up to its
// closing tag) of a console page, its times relative to now left out.
func pageElement(t *testing.T, url, id string) string {
	t.Helper()
	body := getPage(t, url)
	start := strings.Index(body, ` id="`+id+`"`)
	if start < 0 {
		t.Fatalf("GET %s: no #%s in\n%s", url, id, body)
	}
	tag := body[strings.LastIndex(body[:start], "<")+1 : start]
	end := strings.Index(body[start:], "</"+tag+">")
	if end < 0 {
		t.Fatalf("GET %s: #%s is not closed", url, id)
	}
	return agoCell.ReplaceAllString(body[start:start+end], "<td>…</td>")
}

// scheduleBig gives the crawl big a re-crawl schedule in run 2 on one
// Redis (rdb) and on the cluster (cc): the same schedule, and run 1's
// ledger kept whole on one Redis, as two domains' shares on the cluster.
func scheduleBig(t *testing.T, rdb redis.Cmdable, cc *redis.ClusterClient) {
	t.Helper()
	ctx := context.Background()
	big := ledger.Crawl{SpiderID: "link", AppID: "app1", CrawlID: "big"}
	sched := map[string]any{"state": "active", "every": "60", "runs": "0", "emit": "all", "adaptive": "0", "expires": "0",
		"runs_started": "2", "run_started_at": "1767324900.000", "next_run_at": "1767324960.000"}
	l, d := rediskeys.Cluster, clusterDomains()
	for _, err := range []error{
		rdb.HSet(ctx, rediskeys.Single.Recrawl(big.SpiderID, big.AppID, big.CrawlID), sched).Err(),
		cc.HSet(ctx, l.Recrawl(big.SpiderID, big.AppID, big.CrawlID), sched).Err(),
		rdb.HSet(ctx, rediskeys.LedgerRunsKey(big.SpiderID, big.AppID, big.CrawlID), "1",
			"completed\n1767324890\ndone\n4\npublished\n4\nrun\n1\nseeds\n1\nstarted\n1767324800").Err(),
		cc.HSet(ctx, l.LedgerRuns(big.SpiderID, big.AppID, big.CrawlID, d[0]), "1",
			"completed\n1767324890\ndone\n3\npublished\n3\nrun\n1\nseeds\n1\nstarted\n1767324800", "reset", "2").Err(),
		cc.HSet(ctx, l.LedgerRuns(big.SpiderID, big.AppID, big.CrawlID, d[5]), "1",
			"completed\n1767324880\ndone\n1\npublished\n1\nstarted\n1767324810", "reset", "2").Err(),
		rdb.HSet(ctx, big.Key(), ledger.FieldRun, "2").Err(),
		cc.HSet(ctx, big.LedgerIn(l, d[0]).Hash, ledger.FieldRun, "2").Err(),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
}
