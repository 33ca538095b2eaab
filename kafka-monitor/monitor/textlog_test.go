package monitor_test

import (
	"regexp"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

// TestRejectedRequestsTextLineNamesTheRequestAndTheReason: with text logs
// (LOG_JSON=false, the default) the line of a request a plugin refuses
// carries its URL, appid, crawl id and the plugin's reason as key=value
// fields, which the original's bare text dropped; the message itself
// names the reason.
func TestRejectedRequestsTextLineNamesTheRequestAndTheReason(t *testing.T) {
	c := newCluster(t, harness.RedisOptions{}, "LOG_JSON=false")
	m, _ := c.start(t)
	c.produce(t, `{"url": "ftp://example.com/a", "appid": "testapp", "crawlid": "text-bad"}`)
	waitFor(t, "the request", func() bool { return m.Processed() == 1 })
	re := regexp.MustCompile(`\] WARNING: Request rejected: url: scheme "ftp" not allowed; want http or https url=ftp://example.com/a appid=testapp crawlid=text-bad error="url: scheme \\"ftp\\" not allowed; want http or https" data="\{\\"url\\": \\"ftp://example.com/a\\", .*\}" parsed=true plugin=ScraperHandler size=\d+ valid=false\n`)
	if !harness.Until(5*time.Second, func() bool { return re.MatchString(c.logs.String()) }) {
		t.Fatalf("no rejection line like %s in:\n%s", re, c.logs)
	}
}
