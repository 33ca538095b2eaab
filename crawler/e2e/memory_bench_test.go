package e2e_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/testsite"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
)

// BenchmarkBombMixRSS: what hostile pages cost a crawler's memory at the
// default settings (DOWNLOAD_MAXSIZE 10 MiB, CONCURRENT_REQUESTS 16). Each
// iteration starts a fresh crawler, warms it up with one small page, then
// crawls (maxdepth 1, so links are extracted too):
//
//   - mix: 16 gzip bombs, each on a domain of its own (1 GiB of zero bytes
//     sent as 1.3 MB of gzip), and a 50 MB plain page, all at once;
//   - page=50MB: one 50 MB plain page with its Content-Length;
//   - page=50MB-chunked: the same without a Content-Length;
//   - links: 16 pages of 250,000 links each (9.5 MB), each on a domain of
//     its own, all at once (MAX_LINKS_PER_PAGE keeps each to its 6,000
//     first links; the peak is taken when the 16 pages are published,
//     while their follow-ups are being queued and crawled).
//
// It reports the crawler's peak resident memory (VmHWM of
// /proc/<pid>/status) once every result is in Kafka, and how much it grew
// over the warmed-up crawler's peak.
//
//	go test -run '^$' -bench BombMixRSS -benchtime 1x ./e2e/
func BenchmarkBombMixRSS(b *testing.B) {
	const bombs, pageBytes = 16, 50 << 20
	for _, bc := range []struct {
		name  string
		paths func(b *testing.B) []string // the URLs to crawl, each on a site started for it
	}{
		{"mix", func(b *testing.B) []string {
			var urls []string
			for range bombs {
				urls = append(urls, testsite.StartAt(b, freshIP()+":0").URL("/bomb/gzip/1024"))
			}
			return append(urls, testsite.StartAt(b, freshIP()+":0").URL("/huge/"+strconv.Itoa(pageBytes)))
		}},
		{"page=50MB", func(b *testing.B) []string {
			return []string{testsite.StartAt(b, freshIP()+":0").URL("/huge/" + strconv.Itoa(pageBytes))}
		}},
		{"page=50MB-chunked", func(b *testing.B) []string {
			return []string{testsite.StartAt(b, freshIP()+":0").URL("/huge/" + strconv.Itoa(pageBytes) + "?chunked=1")}
		}},
		{"links", func(b *testing.B) []string {
			var urls []string
			for range bombs {
				urls = append(urls, testsite.StartAt(b, freshIP()+":0").URL("/links/250000"))
			}
			return urls
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			testsite.Bomb("gzip", 1024) // built before the clock starts
			c := newCluster(b)
			var peak, growth float64
			for i := 0; i < b.N; i++ {
				p := c.startCrawler(b, "crawler-"+strconv.Itoa(i), benchSettings)
				warm := testsite.StartAt(b, freshIP()+":0")
				c.seed(b, crawl("link", warm.URL("/page/1"), fmt.Sprintf("warm-%d", i), 0))
				c.countResults(b, 1, 60*time.Second)
				before := procStatus(b, p.pid())["VmHWM"]

				urls := bc.paths(b)
				var reqs []*crawlrequest.Request
				for _, u := range urls {
					reqs = append(reqs, crawl("link", u, fmt.Sprintf("hostile-%d", i), 1))
				}
				c.seed(b, reqs...)
				c.countResults(b, len(urls), 120*time.Second)
				if p.exited() {
					b.Fatalf("crawler exited: %v\n%s", p.Wait(), tail(p.out.String(), 4<<10))
				}
				after := procStatus(b, p.pid())["VmHWM"]
				peak, growth = max(peak, after), max(growth, after-before)
				if err := p.stop(10 * time.Second); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(peak, "peak-RSS-MB")
			b.ReportMetric(growth, "growth-MB")
		})
	}
}
