package console_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/scrapycluster/scrapy-cluster-go/rest/frontier/frontiertest"
	"github.com/scrapycluster/scrapy-cluster-go/rest/server"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisconn"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// The console on a Redis Cluster (three masters, three replicas), in a
// real headless Chromium: a crawl submitted through the form goes through
// /feed to the Kafka Monitor, which queues it on the cluster; the Crawls
// page lists it beside a crawl queued over 20 domains spread over all
// three masters, each crawl's page counts its requests in the queues of
// every master, and the Domains page shows every domain's backlog.
func TestConsoleOnARedisClusterInABrowser(t *testing.T) {
	chromium := chromiumFor(t, "starts a Redis Cluster, the Kafka Monitor and a browser")
	rc := harness.StartRedisCluster(t)
	cc := rc.TestClient(t)
	k := harness.StartKafka(t)
	c := &cluster{tb: t, env: harness.ClusterSettings(6379, k.Hosts(), "")}
	c.env["REDIS_CLUSTER_NODES"] = rc.Seeds()
	c.env["KAFKA_CONSUMER_SLEEP_TIME"] = "0.2"
	c.env["UI_REFRESH"] = "1"
	c.start("kafka-monitor", "kafka-monitor", "run")

	s, err := settings.Load(server.Settings(), settings.Options{NoEnv: true, Flags: c.env})
	if err != nil {
		t.Fatal(err)
	}
	logs := &harness.OutputBuffer{}
	log := harness.Logger(t, logfactory.Settings("").Config(s), logs)
	rdb := redisconn.New(s)
	t.Cleanup(func() {
		rdb.Close()
		if t.Failed() {
			t.Logf("REST service log (last 16 KiB):\n%s", harness.Tail(logs.String(), 16<<10))
		}
	})
	svc, restURL := serveREST(t, s, log, rdb, server.WithAccessLog(logs))
	harness.WaitFor(t, "the REST service to report Kafka and the Redis Cluster connected", 30*time.Second, func() bool {
		return svc.KafkaConnected() && svc.RedisConnected()
	})

	big := ledger.Crawl{SpiderID: "link", AppID: "clusterapp", CrawlID: "big"}
	seeds, masters := map[string]int{}, map[string]bool{}
	for i := range 20 {
		d := fmt.Sprintf("site%d.com", i)
		seeds[d] = i%3 + 1
		masters[rc.MasterOf(t, rediskeys.Cluster.Queue("link", d)).Addr] = true
	}
	if len(masters) != 3 {
		t.Fatalf("the 20 domains' queues are on %d masters, want all 3", len(masters))
	}
	frontiertest.Seed(t, cc, rediskeys.Cluster, big, time.Now().Add(-time.Minute), seeds)

	b := newBrowser(t, chromium)
	ui := restURL + "/ui/"
	b.do("open the submit form", chromedp.Navigate(ui+"submit"), chromedp.WaitVisible(chromedp.CSS(`#submit-form`)))
	b.do("submit a crawl",
		chromedp.SetValue(chromedp.ID(`#f-url`), "http://site3.com/submitted"),
		chromedp.SetValue(chromedp.ID(`#f-appid`), big.AppID),
		chromedp.SetValue(chromedp.ID(`#f-crawlid`), "sub1"),
		chromedp.Click(chromedp.ID(`#submit`)),
		chromedp.WaitVisible(chromedp.ID(`#sent-crawl`)),
		chromedp.Click(chromedp.ID(`#sent-crawl`)),
		chromedp.WaitVisible(chromedp.ID(`#crawl-queues`)))
	b.waitJS("sub1's seed queued on its page", `document.getElementById("queued-total").textContent === "1"
		&& (document.getElementById("ledger-queued") || {}).textContent === "1"`, 60*time.Second)
	if got := b.text(`#crawl-queues tbody`); !strings.Contains(got, "site3.com") {
		t.Errorf("sub1's queues: %q, want site3.com's", got)
	}
	b.noErrors("sub1's page")

	b.do("open the crawls page", chromedp.Navigate(ui+"crawls"), chromedp.WaitVisible(chromedp.ID(`#crawls`)))
	if got := b.text("#crawls-total") + " " + b.text("#crawls-active"); got != "2 2" {
		t.Errorf("crawls total and active %q, want 2 2", got)
	}
	if got := eval[string](b, `[...document.querySelectorAll("#crawls tbody tr")].map(r => r.dataset.crawlid).join(" ")`); got != "sub1 big" {
		t.Errorf("crawls listed %q, want sub1 big (newest first)", got)
	}
	if got := b.text(`#crawls tr[data-crawlid="big"] .progress .muted`); got != "0 / 39 (0%)" {
		t.Errorf("big's progress %q, want 0 / 39 (0%%)", got)
	}
	b.noErrors("crawls")

	b.do("open big's page", chromedp.Click(chromedp.CSS(`#crawls tr[data-crawlid="big"] a`)), chromedp.WaitVisible(chromedp.ID(`#crawl-queues`)))
	if got := b.text("#queued-total") + " " + b.text("#ledger-queued"); got != "39 39" {
		t.Errorf("big's queued (queues, ledger) %q, want 39 39", got)
	}
	if n := eval[int](b, `document.querySelectorAll("#crawl-queues tbody tr").length`); n != 20 {
		t.Errorf("big's page lists %d domain queues, want 20", n)
	}
	b.noErrors("big's page")

	b.do("open the domains page", chromedp.Navigate(ui+"domains"), chromedp.WaitVisible(chromedp.ID(`#domains`)))
	if n := eval[int](b, `document.querySelectorAll("#domains tbody tr[data-domain]").length`); n != 20 {
		t.Errorf("the domains page lists %d domains, want 20", n)
	}
	for domain, want := range map[string]string{"site3.com": "2", "site2.com": "3", "site0.com": "1"} {
		if got := b.text(`#domains tr[data-domain="` + domain + `"] td.n`); got != want {
			t.Errorf("%s's backlog %q, want %s", domain, got, want)
		}
	}
	if got := b.text(".error"); got != "" {
		t.Errorf("the domains page shows an error: %s", got)
	}
	b.noErrors("domains")

	b.do("open the overview", chromedp.Navigate(ui), chromedp.WaitVisible(chromedp.CSS(`.cards`)))
	if got := b.text(".error"); got != "" {
		t.Errorf("the overview shows an error: %s", got)
	}
	b.noErrors("overview")
}
