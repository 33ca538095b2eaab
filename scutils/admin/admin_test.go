package admin_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/admin"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/domainconfig"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/kafkaclient"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, rec.Body.String()
}

func TestEndpointsAnswerAsDocumented(t *testing.T) {
	ok := admin.Check{Name: "good", Probe: func(context.Context) error { return nil }}
	bad := admin.Check{Name: "bad", Probe: func(context.Context) error { return errors.New("connection refused") }}
	slow := admin.Check{Name: "slow", Probe: func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }}
	for _, tc := range []struct {
		name     string
		opts     []admin.Option
		checks   []admin.Check
		path     string
		code     int
		contains []string
	}{
		{"healthz answers ok", nil, []admin.Check{bad}, "/healthz", 200, []string{`"status":"ok"`}},
		{"readyz is ready when every check passes", nil, []admin.Check{ok}, "/readyz", 200, []string{`"status":"ready"`, `"good":{"ok":true}`}},
		{"readyz names the failing check and its error", nil, []admin.Check{ok, bad}, "/readyz", 503,
			[]string{`"status":"not ready"`, `"bad":{"ok":false,"error":"connection refused"}`, `"good":{"ok":true}`}},
		{"readyz gives up on a check that does not answer", []admin.Option{admin.WithProbeTimeout(50 * time.Millisecond)}, []admin.Check{slow}, "/readyz", 503,
			[]string{`"slow":{"ok":false,"error":"no answer within 50ms`}},
		{"metrics carry the Go runtime and process collectors", nil, nil, "/metrics", 200, []string{"go_goroutines", "process_cpu_seconds_total"}},
		{"pprof is off by default", nil, nil, "/debug/pprof/", 404, nil},
		{"pprof is served when on", []admin.Option{admin.WithPprof(true)}, nil, "/debug/pprof/", 200, []string{"goroutine"}},
		{"other paths are not found", nil, nil, "/feed", 404, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := admin.New(tc.opts...)
			s.AddCheck(tc.checks...)
			code, body := get(t, s.Handler(), tc.path)
			if code != tc.code {
				t.Fatalf("GET %s = %d, want %d: %s", tc.path, code, tc.code, body)
			}
			for _, want := range tc.contains {
				if !strings.Contains(body, want) {
					t.Errorf("GET %s lacks %q:\n%.2000s", tc.path, want, body)
				}
			}
		})
	}
}

func TestRegisteredCollectorsAreServedAndRegistriesAreSeparate(t *testing.T) {
	a, b := admin.New(), admin.New()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "scrapy_test_things_total", Help: "Things."})
	if err := a.Register(c); err != nil {
		t.Fatal(err)
	}
	c.Add(3)
	if _, body := get(t, a.Handler(), "/metrics"); !strings.Contains(body, "scrapy_test_things_total 3") {
		t.Errorf("a's metrics lack the counter:\n%.1000s", body)
	}
	if _, body := get(t, b.Handler(), "/metrics"); strings.Contains(body, "scrapy_test_things_total") {
		t.Error("b's registry has a's counter")
	}
	if err := b.Register(c); err != nil {
		t.Errorf("a second server cannot register the same collector: %v", err)
	}
	if err := a.Register(c); err == nil {
		t.Error("registering a collector twice on one server succeeded")
	}
}

func TestWrapServesTheAdminPathsBesideTheAPI(t *testing.T) {
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "api "+r.URL.Path) })
	h := admin.New().Wrap(api)
	for path, want := range map[string]string{"/": "api /", "/feed": "api /feed", "/healthz": `"status":"ok"`, "/metrics": "go_goroutines"} {
		if _, body := get(t, h, path); !strings.Contains(body, want) {
			t.Errorf("GET %s = %.200q, want %q in it", path, body, want)
		}
	}
}

func TestATakenPortIsAnErrorNamingTheSetting(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = admin.Listen(ln.Addr().String())
	if err == nil || !strings.Contains(err.Error(), "ADMIN_ADDR") {
		t.Fatalf("Listen on a taken port = %v, want an error naming ADMIN_ADDR", err)
	}
}

func TestServeStopsWhenItsContextEnds(t *testing.T) {
	ln, err := admin.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- admin.New().Serve(ctx, ln) }()
	resp, err := http.Get("http://" + ln.Addr().String() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("healthz = %d", resp.StatusCode)
	}
	cancel()
	harness.WaitDone(t, "Serve after its context ended", 5*time.Second, done)
}

// waitReady polls s's readiness until dep's state is want.
func waitReady(t *testing.T, s *admin.Server, dep string, want bool) admin.Readiness {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := s.Ready(context.Background())
		if r.Checks[dep].OK == want {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s ok never became %v: %+v", dep, want, r)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestDependencyChecksFollowRedisKafkaAndZooKeeper(t *testing.T) {
	r := harness.StartRedis(t)
	k := harness.StartKafka(t)
	zk := harness.StartZooKeeper(t)
	declared := settings.Join(kafkaclient.Settings(), domainconfig.Settings())
	s, err := settings.Load(declared, settings.Options{Flags: map[string]string{"KAFKA_HOSTS": k.Hosts(), "ZOOKEEPER_HOSTS": zk.Addr}})
	if err != nil {
		t.Fatal(err)
	}
	checks, err := admin.DependencyChecks(s, r.TestClient(t))
	if err != nil {
		t.Fatal(err)
	}
	srv := admin.New()
	srv.AddCheck(checks...)
	if got := srv.Ready(context.Background()); got.Status != "ready" || len(got.Checks) != 3 {
		t.Fatalf("with every service up: %+v", got)
	}

	r.Stop()
	if got := waitReady(t, srv, "redis", false); got.Status != "not ready" || got.Checks["redis"].Error == "" {
		t.Errorf("Redis down: %+v", got)
	}
	if err := r.Restart(); err != nil {
		t.Fatal(err)
	}
	waitReady(t, srv, "redis", true)

	zk.Stop()
	waitReady(t, srv, "zookeeper", false)
	if err := zk.Restart(); err != nil {
		t.Fatal(err)
	}
	waitReady(t, srv, "zookeeper", true)

	k.Close()
	waitReady(t, srv, "kafka", false)
	k2, err := harness.LaunchKafka(harness.KafkaOptions{Ports: []int{portOf(t, k.Addrs[0])}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k2.Close)
	if got := waitReady(t, srv, "kafka", true); got.Status != "ready" {
		t.Errorf("every service back: %+v", got)
	}
}

func TestZooKeeperIsCheckedOnlyWhereTheComponentHasItAndItIsSet(t *testing.T) {
	for _, tc := range []struct {
		name     string
		declared settings.Group
		hosts    string
		want     int
	}{
		{"a component without the setting does not check it, even given one", kafkaclient.Settings(), "zk:2181", 2},
		{"an empty setting keeps the config in Redis", settings.Join(kafkaclient.Settings(), domainconfig.Settings()), "", 2},
		{"a set one is checked", settings.Join(kafkaclient.Settings(), domainconfig.Settings()), "zk:2181", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := settings.Load(tc.declared, settings.Options{Flags: map[string]string{"ZOOKEEPER_HOSTS": tc.hosts}})
			if err != nil {
				t.Fatal(err)
			}
			checks, err := admin.DependencyChecks(s, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(checks) != tc.want {
				t.Errorf("%d checks, want %d", len(checks), tc.want)
			}
		})
	}
}

func portOf(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := net.LookupPort("tcp", p)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
