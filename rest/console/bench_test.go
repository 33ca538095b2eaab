package console_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/rest/server"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// The benchmark's cluster state: as many crawls as domain queues, each
// crawl seeded in its own domain with queuedPerDomain requests waiting, and
// the stats of several crawler hosts over the last hour.
const (
	benchCrawls     = 1000
	queuedPerDomain = 10
	benchHosts      = 5
	hitsPerCounter  = 2000
)

// fillCluster writes benchCrawls crawls (ledger and seeds, through the
// ledger's own seed script, plus follow-ups and published results) in as
// many domain queues, and heartbeats and response-code windows.
func fillCluster(b *testing.B, rdb *redis.Client) {
	ctx := context.Background()
	if err := ledger.LoadScripts(ctx, rdb); err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	pipe := rdb.Pipeline()
	var tally ledger.Tally
	for i := range benchCrawls {
		cr := ledger.Crawl{SpiderID: "link", AppID: "benchapp", CrawlID: fmt.Sprintf("crawl-%04d", i)}
		domain := fmt.Sprintf("domain%04d.example.com", i)
		queue := rediskeys.QueueKey("link", domain)
		for j := range queuedPerDomain {
			req := &crawlrequest.Request{URL: fmt.Sprintf("http://%s/page/%d", domain, j), AppID: cr.AppID, CrawlID: cr.CrawlID,
				SpiderID: cr.SpiderID, Priority: 1, MaxDepth: 2}
			member, err := req.Encode()
			if err != nil {
				b.Fatal(err)
			}
			if j == 0 {
				ledger.QueueSeed(ctx, pipe, queue, req.Score(), string(member), cr, now, time.Hour)
			} else {
				pipe.ZAdd(ctx, queue, redis.Z{Score: req.Score(), Member: member})
			}
		}
		tally.Enqueued(cr, queuedPerDomain+4)
		for range 5 {
			tally.Fetched(cr, 200)
			tally.Published(cr, false)
		}
	}
	tally.Write(ctx, pipe, now, time.Hour)
	for h := range benchHosts {
		host := fmt.Sprintf("host%d", h)
		pipe.Set(ctx, rediskeys.CrawlerHeartbeatKey(host, "link", "id"+host), now.Unix(), time.Hour)
		for _, code := range []string{"200", "404"} {
			key := rediskeys.CrawlerStatusKey(host, "link", code) + ":3600"
			for n := range hitsPerCounter {
				at := now.Add(-time.Duration(n) * time.Hour / hitsPerCounter)
				pipe.ZAdd(ctx, key, redis.Z{Score: float64(at.UnixNano()) / 1e9, Member: fmt.Sprint(host, code, n)})
			}
		}
	}
	for _, comp := range []string{"kafka-monitor", "redis-monitor"} {
		pipe.Set(ctx, rediskeys.HeartbeatKey(comp, "host0", "id"), 1, time.Hour)
		pipe.ZAdd(ctx, rediskeys.StatsKey(comp, "fail")+":900", redis.Z{Score: float64(now.Unix()), Member: "f"})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		b.Fatal(err)
	}
	if n := rdb.ZCard(ctx, rediskeys.LedgerCrawlsKey).Val(); n != benchCrawls {
		b.Fatalf("the ledger lists %d crawls, want %d", n, benchCrawls)
	}
}

// BenchmarkConsolePages times the console's pages end to end over HTTP
// (request, Redis reads, rendering, the whole body read) against a real
// redis-server holding 1,000 domain queues (10,000 requests) and 1,000
// crawls in the ledger. The target is 300 ms for the Overview and Crawls.
func BenchmarkConsolePages(b *testing.B) {
	r := harness.StartRedis(b)
	k := harness.StartKafka(b)
	rdb := r.TestClient(b)
	fillCluster(b, rdb)
	s, err := settings.Load(server.Settings(), settings.Options{NoEnv: true, Flags: map[string]string{
		"REDIS_HOST": "127.0.0.1", "REDIS_PORT": strconv.Itoa(r.Port), "KAFKA_HOSTS": k.Hosts(),
		"ZOOKEEPER_HOSTS": "", "FLASK_LOGGING_ENABLED": "false", "LOG_LEVEL": "ERROR",
	}})
	if err != nil {
		b.Fatal(err)
	}
	log := harness.Logger(b, logfactory.Config{}, io.Discard)
	svcRedis := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(r.Port)})
	b.Cleanup(func() { svcRedis.Close() })
	_, base := serveREST(b, s, log, svcRedis)
	client := &http.Client{Timeout: 30 * time.Second}
	for _, page := range []struct{ name, path, want string }{
		{"Overview", "/ui/", `id="total-backlog">10` + "\u202f" + `000<`},
		{"Crawls", "/ui/crawls", `data-crawlid="crawl-`},
		{"Domains", "/ui/domains", `data-domain="domain0499.example.com"`},
		{"Crawl", "/ui/crawl?spiderid=link&appid=benchapp&crawlid=crawl-0500", `id="queued-total">10<`},
	} {
		b.Run(page.name, func(b *testing.B) {
			var size int
			for b.Loop() {
				res, err := client.Get(base + page.path)
				if err != nil {
					b.Fatal(err)
				}
				body, err := io.ReadAll(res.Body)
				res.Body.Close()
				if err != nil || res.StatusCode != http.StatusOK {
					b.Fatalf("GET %s: %d %v", page.path, res.StatusCode, err)
				}
				if size == 0 && !strings.Contains(string(body), page.want) {
					b.Fatalf("GET %s does not show %s:\n%s", page.path, page.want, body)
				}
				size = len(body)
			}
			b.ReportMetric(float64(size), "bytes/page")
		})
	}
}
