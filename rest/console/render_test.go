package console_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/rest/server"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// A crawl's page counts its requests waiting in render queues with those
// in its queues, each render queue's share on a row of its own marked
// render.
func TestTheCrawlPageCountsTheRenderQueues(t *testing.T) {
	r := harness.StartRedis(t)
	k := harness.StartKafka(t)
	rdb := r.TestClient(t)
	ctx := context.Background()
	if err := ledger.LoadScripts(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	cr := ledger.Crawl{SpiderID: "link", AppID: "app", CrawlID: "spa"}
	now := time.Now()
	pipe := rdb.Pipeline()
	for i, queue := range []string{rediskeys.QueueKey("link", "a.example"), rediskeys.RenderQueueKey("link", "a.example"),
		rediskeys.RenderQueueKey("link", "a.example"), rediskeys.RenderQueueKey("link", "b.example")} {
		req := &crawlrequest.Request{URL: fmt.Sprintf("http://a.example/%d", i), AppID: cr.AppID, CrawlID: cr.CrawlID, SpiderID: cr.SpiderID, Priority: 1}
		member, err := req.Encode()
		if err != nil {
			t.Fatal(err)
		}
		ledger.QueueSeed(ctx, pipe, queue, req.Score(), string(member), cr, now, time.Hour)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := settings.Load(server.Settings(), settings.Options{NoEnv: true, Flags: map[string]string{
		"REDIS_HOST": "127.0.0.1", "REDIS_PORT": strconv.Itoa(r.Port), "KAFKA_HOSTS": k.Hosts(),
		"ZOOKEEPER_HOSTS": "", "FLASK_LOGGING_ENABLED": "false", "LOG_LEVEL": "ERROR",
	}})
	if err != nil {
		t.Fatal(err)
	}
	_, base := serveREST(t, s, harness.Logger(t, logfactory.Config{}, io.Discard), r.TestClient(t))
	res, err := http.Get(base + "/ui/crawl?spiderid=link&appid=app&crawlid=spa")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET the crawl page: %d, %v", res.StatusCode, err)
	}
	page := string(body)
	if want := `id="queued-total">4<`; !regexp.MustCompile(regexp.QuoteMeta(want)).MatchString(page) {
		t.Errorf("the page does not count 4 queued requests (%s)", want)
	}
	rows := regexp.MustCompile(`<tr data-domain="([^"]+)"( data-render)?><td>[^<]*(?:<span[^>]*>render</span>)?</td><td class="n">(\d+)</td>`).FindAllStringSubmatch(page, -1)
	var got []string
	for _, m := range rows {
		got = append(got, fmt.Sprintf("%s%s=%s", m[1], m[2], m[3]))
	}
	if want := "[a.example=1 a.example data-render=2 b.example data-render=1]"; fmt.Sprint(got) != want {
		t.Errorf("domain rows %v, want %s\n%s", got, want, page)
	}
}
