package engine_test

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"

	"github.com/segmentio/kafka-go"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/engine"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/spiders/link"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
)

// panicky is a spider that panics on every page.
type panicky struct{}

func (panicky) Name() string { return "panicky" }
func (panicky) Parse(context.Context, *spider.Response) (spider.Output, error) {
	panic("the spider's bug")
}

// silent is a spider that makes no result of any page.
type silent struct{}

func (silent) Name() string { return "silent" }
func (silent) Parse(context.Context, *spider.Response) (spider.Output, error) {
	return spider.Output{}, nil
}

func init() {
	spider.Register("panicky", func() spider.Spider { return panicky{} })
	spider.Register("silent", func() spider.Spider { return silent{} })
}

// closedPort is a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestEveryExitFromPopToAcknowledgementIsAPublicationOrALoggedCountedDrop(t *testing.T) {
	type counter func(*engine.Counters) int64
	var (
		expired     counter = func(c *engine.Counters) int64 { return c.Expired.Load() }
		refused     counter = func(c *engine.Counters) int64 { return c.Refused.Load() }
		dropped     counter = func(c *engine.Counters) int64 { return c.Dropped.Load() }
		tooLarge    counter = func(c *engine.Counters) int64 { return c.TooLarge.Load() }
		unpublished counter = func(c *engine.Counters) int64 { return c.Unpublished.Load() }
		parseErrors counter = func(c *engine.Counters) int64 { return c.ParseErrors.Load() }
		published   counter = func(c *engine.Counters) int64 { return c.Published.Load() }
	)
	tests := []struct {
		name     string
		settings map[string]string
		spider   string
		path     string // the request: a crawl of this page of the test site, unless request says otherwise
		request  func(e *env, t *testing.T) *crawlrequest.Request
		// prepare runs before the engine gets the request (e.g. to set up Kafka).
		prepare func(e *env, t testing.TB)
		log     string  // a line the exit logs
		counter counter // the engine's count of it, which must be 1
		field   string  // the ledger's count of it, which must be 1
	}{
		{
			name: "an expired crawl is refused",
			request: func(e *env, _ *testing.T) *crawlrequest.Request {
				r := crawl(e.site.URL("/page/1"), "x", 0)
				r.Expires = 1
				return r
			},
			log: "Crawl expired; request refused", counter: expired,
			field: "refused:expired",
		},
		{
			name:     "a private address is refused",
			settings: map[string]string{"FETCH_ALLOWED_NETWORKS": "127.0.0.2/32"},
			path:     "/page/1",
			log:      `"message": "Request refused; not fetched"`, counter: refused,
			field: "refused:private_address",
		},
		{
			name:     "robots.txt refuses",
			settings: map[string]string{"ROBOTSTXT_OBEY": "true"},
			path:     "/private/1",
			log:      `"reason": "robots"`, counter: refused,
			field: "refused:robots",
		},
		{
			name: "a redirect loop is uncrawlable",
			path: "/loop/a",
			log:  `"reason": "redirect_loop"`, counter: dropped,
			field: "dropped:uncrawlable",
		},
		{
			name:     "a hanging page is given up after its retries",
			settings: map[string]string{"DOWNLOAD_TIMEOUT": "1", "RETRY_TIMES": "1"},
			path:     "/hang",
			log:      `"reason": "timeout"`, counter: dropped,
			field: "dropped:timeout",
		},
		{
			name:     "a closed port is given up after its retries",
			settings: map[string]string{"RETRY_TIMES": "1"},
			request:  func(_ *env, t *testing.T) *crawlrequest.Request { return crawl("http://"+closedPort(t)+"/", "x", 0) },
			log:      `"reason": "connection"`, counter: dropped,
			field: "dropped:connection",
		},
		{
			name:     "a 504 is given up after its retries",
			settings: map[string]string{"RETRY_TIMES": "1"},
			path:     "/status/504",
			log:      `"reason": "504"`, counter: dropped,
			field: "dropped:504",
		},
		{
			name:     "a result too large even reduced is dropped",
			settings: map[string]string{"KAFKA_PRODUCER_MAX_REQUEST_SIZE": "20000"},
			request: func(e *env, _ *testing.T) *crawlrequest.Request {
				r := crawl(e.site.URL("/page/1"), "x", 0)
				r.Attrs = json.RawMessage(`{"big":"` + strings.Repeat("a", 30000) + `"}`)
				return r
			},
			log: "Dropped a result that cannot be sent to Kafka", counter: tooLarge,
			field: "dropped:too_large",
		},
		{
			name: "a result Kafka refuses for good is dropped",
			prepare: func(e *env, t testing.TB) {
				client := &kafka.Client{Addr: kafka.TCP(e.kafka.Addrs...)}
				_, err := client.CreateTopics(context.Background(), &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{
					Topic: "demo.crawled_firehose", NumPartitions: 1, ReplicationFactor: 1,
					ConfigEntries: []kafka.ConfigEntry{{ConfigName: "max.message.bytes", ConfigValue: "600"}},
				}}})
				if err != nil {
					t.Fatal(err)
				}
			},
			path: "/page/1",
			log:  "Failed to send page to Kafka", counter: unpublished,
			field: "dropped:unpublished",
		},
		{
			name:   "a spider that makes no result drops the page",
			spider: "silent",
			path:   "/page/1",
			log:    "The spider made no result of the page", counter: dropped,
			field: "dropped:no_result",
		},
		{
			name:   "a spider's panic still publishes the page",
			spider: "panicky",
			path:   "/page/1",
			log:    "Spider panicked; publishing the page", counter: parseErrors,
			field: "published",
		},
		{
			name: "a page is published",
			path: "/page/1",
			log:  "Sent page to Kafka", counter: published,
			field: "published",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spiderID := tc.spider
			if spiderID == "" {
				spiderID = link.Name
			}
			settings := map[string]string{"SPIDER": spiderID}
			for k, v := range tc.settings {
				settings[k] = v
			}
			e := newEnvWith(t, settings, tc.prepare)
			var r *crawlrequest.Request
			if tc.request != nil {
				r = tc.request(e, t)
			} else {
				r = crawl(e.site.URL(tc.path), "x", 0)
			}
			r.SpiderID = spiderID
			e.seedCounted(t, r)
			c := ledger.Crawl{SpiderID: spiderID, AppID: r.AppID, CrawlID: r.CrawlID}
			p := e.ledgerUntil(t, c, "the request's fate in its ledger", func(p *ledger.Progress) bool { return p.Done == 1 })
			got := map[string]int64{"published": p.Published}
			for k, v := range p.Refused {
				got["refused:"+k] = v
			}
			for k, v := range p.Dropped {
				got["dropped:"+k] = v
			}
			for k, v := range got {
				if (k == tc.field) != (v == 1) || v > 1 {
					t.Errorf("ledger %v; want %s 1 and no other fate", got, tc.field)
					break
				}
			}
			if n := tc.counter(e.eng.Counters()); n != 1 {
				t.Errorf("engine counter %d, want 1", n)
			}
			if !e.log.Contains(tc.log) {
				t.Errorf("no %q in the log", tc.log)
			}
			if n, _ := e.eng.Scheduler().Leases().Count(context.Background()); n != 0 {
				t.Errorf("%d leases left", n)
			}
		})
	}
}
