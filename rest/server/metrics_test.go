package server_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/rest/server"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/admin"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
)

func TestTheAdminEndpointsAndRequestMetricsAreServedBesideTheAPI(t *testing.T) {
	c := newCluster(t)
	s := settingsFor(t, c.redis.Port, c.kafka.Hosts())
	log := harness.Logger(t, logfactory.Config{Name: "rest", Level: "ERROR"}, io.Discard)
	svc, err := server.New(context.Background(), s, log, c.rdb)
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	a := admin.New()
	a.AddCheck(admin.RedisCheck(c.rdb))
	if err := a.Register(svc.Collectors()...); err != nil {
		t.Fatal(err)
	}
	svc.ServeAdmin(a)
	srv := httptest.NewServer(svc.Handler())
	defer srv.Close()
	harness.WaitFor(t, "the service connects", 10*time.Second, func() bool { return svc.KafkaConnected() && svc.RedisConnected() })

	get := func(method, path string, want int) string {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader("{}"))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != want {
			t.Fatalf("%s %s = %d, want %d: %s", method, path, resp.StatusCode, want, b)
		}
		return string(b)
	}
	get("GET", "/", 200)
	get("GET", "/", 200)
	get("POST", "/feed", 400)                  // no schema matches {}
	get("GET", "/poll", 405)                   // a known endpoint, whatever it answers
	get("POST", "/poll", 400)                  // no poll_id
	get("GET", "/no/such/path/"+t.Name(), 404) // made-up paths share one series
	get("GET", "/healthz", 200)
	if body := get("GET", "/readyz", 200); !strings.Contains(body, `"redis":{"ok":true}`) {
		t.Errorf("readyz: %s", body)
	}
	metrics := get("GET", "/metrics", 200)
	for _, want := range []string{
		`scrapy_rest_requests_total{code="200",endpoint="/"} 2`,
		`scrapy_rest_requests_total{code="400",endpoint="/feed"} 1`,
		`scrapy_rest_requests_total{code="405",endpoint="/poll"} 1`,
		`scrapy_rest_requests_total{code="400",endpoint="/poll"} 1`,
		`scrapy_rest_requests_total{code="404",endpoint="other"} 1`,
		`scrapy_rest_requests_total{code="200",endpoint="/readyz"} 1`,
		`scrapy_rest_request_duration_seconds_count{endpoint="/"} 2`,
		`scrapy_rest_feed_waiting 0`,
		`scrapy_rest_kafka_connected 1`,
		`scrapy_rest_redis_connected 1`,
		`go_goroutines`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(metrics, t.Name()) {
		t.Error("a made-up path became a label")
	}
}
