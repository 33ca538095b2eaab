package redisscripts_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// clusterCrawl is the crawl of the cluster tests.
var clusterCrawl = ledger.Crawl{SpiderID: "link", AppID: "app", CrawlID: "c1"}

// domainFilter is the compact filter of crawl c's requests for domain on
// a Redis Cluster (rediskeys.Cluster): every key in the domain's slot.
func domainFilter(c ledger.Crawl, domain string) filterKeys {
	l := rediskeys.Cluster
	leases := l.Leases(c.SpiderID, domain)
	bits, meta := l.BloomFilter(c.SpiderID, domain, c.CrawlID)
	return filterKeys{owners: leases + ":owners", records: leases + ":items", queue: l.Queue(c.SpiderID, domain),
		bits: bits, meta: meta, ledger: c.LedgerIn(l, domain)}
}

// On a Redis Cluster a crawl has a compact filter per domain, in the
// domain's slot, each starting small (1,024 requests, as the crawler's
// cluster filters do) and growing by layers: 4,000 fingerprints go into
// each of 8 domains' filters, then 4,000 others (four layers each). Of the
// 64,000 new fingerprints, the share dropped as seen stays within the
// rate (0.002, with room for chance: four standard deviations), every
// fingerprint added is seen again, and the crawl's false drops estimate,
// summed over its shares on every master (ledger.ReadSum), is near the
// real count (every drop of a new fingerprint is false).
func TestPerDomainCompactFiltersOnAClusterKeepTheRateAndTheSummedEstimate(t *testing.T) {
	rc := harness.StartRedisCluster(t)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(rc.Seeds(), ","), ReadTimeout: time.Minute, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	const rate, capacity, perDomain = 0.002, 1024, 4000
	crawl := clusterCrawl
	var domains []string
	masters := map[string]bool{}
	for i := range 8 {
		d := fmt.Sprintf("d%d.com", i)
		domains = append(domains, d)
		masters[rc.MasterOf(t, rediskeys.Cluster.Queue("link", d)).Addr] = true
	}
	if len(masters) != 3 {
		t.Fatalf("the domains' keys are on %d masters; the test wants 3", len(masters))
	}
	var falseDrops, askedNew int
	for _, d := range domains {
		k := domainFilter(crawl, d)
		known, others := fps("known"+d, perDomain), fps("other"+d, perDomain)
		q, dropped := bloomFinishIn(t, rdb, k, known, rate, capacity)
		if q+dropped != perDomain {
			t.Fatalf("%s: %d queued + %d dropped of %d", d, q, dropped, perDomain)
		}
		_, dropped2 := bloomFinishIn(t, rdb, k, others, rate, capacity)
		falseDrops += dropped + dropped2
		askedNew += 2 * perDomain
		if _, seen := bloomFinishIn(t, rdb, k, known[:1000], rate, capacity); seen != 1000 {
			t.Errorf("%s: %d of 1000 fingerprints added were not seen again", d, 1000-seen)
		}
		meta := rdb.HGetAll(ctx, k.meta).Val()
		if meta["rate"] != "0.002" || meta["capacity"] != "1024" || meta["layers"] != "4" {
			t.Errorf("%s's filter meta: %v", d, meta)
		}
		if n := rdb.Exists(ctx, rediskeys.Cluster.DupeFilter("link", d, "c1")).Val(); n != 0 {
			t.Errorf("%s has an exact filter too", d)
		}
	}
	n := float64(askedNew)
	if bound := rate*n + 4*math.Sqrt(rate*n); float64(falseDrops) > bound {
		t.Errorf("%d of %d new fingerprints were dropped as seen, more than %v at rate %v", falseDrops, askedNew, bound, rate)
	}
	if falseDrops == 0 {
		t.Errorf("no false drop among %d: the filters are not the size the rate asks for", askedNew)
	}
	p, consistent, err := ledger.ReadSum(ctx, rdb, crawl, domains)
	if err != nil || !consistent {
		t.Fatalf("ledger sum: %v, consistent %v", err, consistent)
	}
	actual := float64(falseDrops)
	if d := math.Abs(p.DupeFilterFalseDropsEstimate - actual); d > 4*math.Sqrt(actual)+5 {
		t.Errorf("the summed ledger estimates %.1f false drops, the real count is %v", p.DupeFilterFalseDropsEstimate, actual)
	}
	if want := int64(falseDrops + 1000*len(domains)); p.Refused[string(ledger.RefusedDuplicate)] != want {
		t.Errorf("the summed ledger counts %d duplicates, the scripts answered %d", p.Refused[string(ledger.RefusedDuplicate)], want)
	}
	t.Logf("false drops %d of %d new fingerprints; the summed estimate %.1f", falseDrops, askedNew, p.DupeFilterFalseDropsEstimate)
}

// BenchmarkClusterDupeFilterBytesPerURL is BenchmarkDupeFilterBytesPerURL
// on a Redis Cluster (three masters, a replica each): 100,000 distinct
// URLs (SHA1 fingerprints, 200 a page, a page a run of finish.lua) of one
// crawl, spread evenly over domains=20 (5,000 each) or domains=1000 (100
// each, a broad crawl), into each domain's duplicate filter in its slot,
// in each DUPEFILTER_MODE (bloom: DUPEFILTER_ERROR_RATE 0.001, the first
// layer 1,024 requests, as the crawler's cluster filters start). It
// reports the filters' Redis bytes per URL (MEMORY USAGE of every
// domain's keys, summed).
//
//	go test -run '^$' -bench ClusterDupeFilterBytesPerURL -benchtime 1x ./scutils/redisscripts/
func BenchmarkClusterDupeFilterBytesPerURL(b *testing.B) {
	rc := harness.StartRedisCluster(b)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(rc.Seeds(), ","), ReadTimeout: time.Minute, MaxRetries: -1})
	b.Cleanup(func() { rdb.Close() })
	crawl := clusterCrawl
	const urls = 100000
	for _, domains := range []int{20, 1000} {
		for _, mode := range []string{"exact", "bloom"} {
			b.Run(fmt.Sprintf("domains=%d/mode=%s", domains, mode), func(b *testing.B) {
				for b.Loop() {
					if err := rdb.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return m.FlushAll(ctx).Err() }); err != nil {
						b.Fatal(err)
					}
					var bytes int64
					for i := range domains {
						k := domainFilter(crawl, fmt.Sprintf("d%d.com", i))
						keys := []string{k.bits, k.meta}
						if mode == "exact" {
							k.bits, k.meta = rediskeys.Cluster.DupeFilter("link", fmt.Sprintf("d%d.com", i), "c1"), ""
							keys = []string{k.bits}
						}
						bloomFinishIn(b, rdb, k, fps(fmt.Sprintf("url%d-", i), urls/domains), 0.001, 1024)
						for _, key := range keys {
							n, err := rdb.MemoryUsage(ctx, key).Result()
							if err != nil {
								b.Fatal(fmt.Errorf("MEMORY USAGE %s: %w", key, err))
							}
							bytes += n
						}
					}
					b.ReportMetric(float64(bytes)/urls, "redis-bytes/url")
				}
			})
		}
	}
}
