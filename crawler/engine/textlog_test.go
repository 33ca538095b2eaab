package engine_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

// TestTextLogLinesNameTheRequestAndTheReason crawls a page and a request
// that never gets an answer with text logs (SC_LOG_JSON=false, the
// default): the pipeline's and the retry lines carry the URL, crawl id and
// the reason as key=value fields, which the original's bare text dropped.
func TestTextLogLinesNameTheRequestAndTheReason(t *testing.T) {
	e := newEnv(t, map[string]string{"SC_LOG_JSON": "false", "DOWNLOAD_TIMEOUT": "0.3", "RETRY_TIMES": "1"})
	page, hang := e.site.URL("/page/1"), e.site.URL("/hang")
	e.seed(t, crawl(page, "text-ok", 0))
	e.seed(t, crawl(hang, "text-hang", 0))
	e.pages(t, 1, 30*time.Second)
	e.drained(t, "link")

	q := regexp.QuoteMeta
	for _, want := range []struct{ what, re string }{
		{"the scraped page", `\] INFO: Scraped page url=` + q(page) + ` appid=testapp crawlid=text-ok spiderid=link action=emit .*status_code=200`},
		{"the page sent to Kafka", `\] INFO: Sent page to Kafka url=` + q(page) + ` appid=testapp crawlid=text-ok spiderid=link action=ack .*success=true`},
		{"the retry", `\] ERROR: Scraper Retry url=` + q(hang) + ` appid=testapp crawlid=text-hang spiderid=link error="[^"]+" error_reason="[^"]+" retry_count=0 status_code=504`},
		{"the request given up", `\] ERROR: Gave up retrying the request; dropped url=` + q(hang) + ` appid=testapp crawlid=text-hang spiderid=link reason=timeout error="[^"]+" retry_times=1`},
	} {
		harness.WaitFor(t, want.what+" in the text log", 10*time.Second, func() bool {
			return regexp.MustCompile(want.re).MatchString(e.log.String())
		})
	}
	for _, line := range strings.Split(e.log.String(), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "{") {
			t.Fatalf("a JSON line in the text log: %s", line)
		}
	}
}
