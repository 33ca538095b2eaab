package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

// /feed validates render with the Kafka Monitor's schema and checks, and
// sends an accepted request on as given.
func TestFeedPassesRenderOnAndRefusesWhatTheKafkaMonitorRefuses(t *testing.T) {
	c := newCluster(t)
	in := c.start(t)
	for _, tc := range []struct{ name, body, cause string }{
		{"an unknown option", `{"url": "http://example.com/", "appid": "abc", "crawlid": "1", "render": {"screenshot": true}}`, "additional properties 'screenshot' not allowed"},
		{"a timeout of zero", `{"url": "http://example.com/", "appid": "abc", "crawlid": "1", "render": {"timeout": 0}}`, "render: timeout: want seconds above 0"},
		{"a wait past the timeout", `{"url": "http://example.com/", "appid": "abc", "crawlid": "1", "render": {"wait_ms": 9000, "timeout": 5}}`, "render: wait_ms 9000 is not below the timeout"},
		{"a string", `{"url": "http://example.com/", "appid": "abc", "crawlid": "1", "render": "yes"}`, "want boolean or object"},
	} {
		a := in.post(t, "/feed", tc.body)
		if a.Code != 400 || !strings.Contains(a.Raw, tc.cause) {
			t.Errorf("%s: %d %s, want 400 saying %q", tc.name, a.Code, a.Raw, tc.cause)
		}
	}
	if n := c.count(t, "demo.incoming"); n != 0 {
		t.Fatalf("refused requests reached the incoming topic: %d", n)
	}
	body := `{"url": "http://spa.example/", "appid": "abc", "crawlid": "r1", "render": {"wait_for": "#app", "wait_ms": 200, "timeout": 12.5}}`
	if a := in.post(t, "/feed", body); a.Code != 200 {
		t.Fatalf("%d %s", a.Code, a.Raw)
	}
	got := c.watchIncoming(t, "demo.incoming", 2, nil)
	harness.WaitFor(t, "the request is read back", 30*time.Second, func() bool { return len(got.all()) == 1 })
	if string(got.all()[0]) != body {
		t.Fatalf("sent %q, want the body as given %q", got.all()[0], body)
	}
}
