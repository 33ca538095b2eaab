package cli_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/admin"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/cli"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

func TestReadyURLReachesUnspecifiedHostsOnLoopback(t *testing.T) {
	for _, tc := range []struct{ addr, want, err string }{
		{":9412", "http://127.0.0.1:9412/readyz", ""},
		{"0.0.0.0:9410", "http://127.0.0.1:9410/readyz", ""},
		{"[::]:9411", "http://127.0.0.1:9411/readyz", ""},
		{"10.1.2.3:9412", "http://10.1.2.3:9412/readyz", ""},
		{"[::1]:9412", "http://[::1]:9412/readyz", ""},
		{"localhost", "", "missing port"},
		{":0", "", "not one a process listens on"},
	} {
		got, err := cli.ReadyURL(tc.addr)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ReadyURL(%q) = %q, %v; want an error with %q", tc.addr, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ReadyURL(%q) = %q, %v; want %q", tc.addr, got, err, tc.want)
		}
	}
}

// instrumented is a service with one counter, running until cancelled.
type instrumented struct {
	runs    prometheus.Counter
	running chan struct{}
}

func (s *instrumented) Run(ctx context.Context) error {
	s.runs.Inc()
	close(s.running)
	<-ctx.Done()
	return nil
}
func (s *instrumented) Close() {}
func (s *instrumented) Collectors() []prometheus.Collector {
	return []prometheus.Collector{s.runs}
}

func adminRoot(t *testing.T, defaults settings.Group, build cli.Builder) (*cobra.Command, *cli.SettingsFlags) {
	t.Helper()
	root, flags := cli.NewRoot("thing", "short", "long", defaults)
	root.RunE = func(cmd *cobra.Command, _ []string) error {
		return cli.RunService(cmd.Context(), flags, defaults, build)
	}
	root.AddCommand(cli.HealthcheckCommand(defaults, flags, cli.AdminAddr))
	return root, flags
}

func TestRunServiceServesTheAdminEndpointWithTheServicesMetrics(t *testing.T) {
	r := harness.StartRedis(t)
	k := harness.StartKafka(t)
	port := harness.Port(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	defaults := settings.Join(cli.ComponentSettings("thing", "x.log"), admin.Settings(":9999"))
	t.Setenv("REDIS_PORT", strconv.Itoa(r.Port))
	t.Setenv("KAFKA_HOSTS", k.Hosts())
	t.Setenv("ADMIN_ADDR", addr)
	t.Setenv("LOG_LEVEL", "ERROR")
	svc := &instrumented{runs: prometheus.NewCounter(prometheus.CounterOpts{Name: "scrapy_thing_runs_total", Help: "Runs."}), running: make(chan struct{})}
	root, _ := adminRoot(t, defaults, func(context.Context, *settings.Settings, *logfactory.Logger, redis.UniversalClient) (cli.Service, error) {
		return svc, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	root.SetArgs(nil)
	go func() { done <- root.ExecuteContext(ctx) }()
	select {
	case <-svc.running:
	case err := <-done:
		t.Fatalf("RunService returned: %v", err)
	}
	body := httpGet(t, "http://"+addr+"/metrics", 200)
	if !strings.Contains(body, "scrapy_thing_runs_total 1") || !strings.Contains(body, "go_goroutines") {
		t.Errorf("metrics:\n%.2000s", body)
	}
	httpGet(t, "http://"+addr+"/readyz", 200)

	// The healthcheck sub-command finds the process by the same settings.
	hc, _ := adminRoot(t, defaults, nil)
	var out bytes.Buffer
	hc.SetOut(&out)
	hc.SetArgs([]string{"healthcheck"})
	if err := hc.Execute(); err != nil || !strings.Contains(out.String(), `"status":"ready"`) {
		t.Errorf("healthcheck = %v, %q", err, out.String())
	}

	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get("http://" + addr + "/healthz"); err == nil {
		t.Error("the admin endpoint still answers after RunService returned")
	}
	// Nothing answers now: the health check fails with exit status 1.
	hc, _ = adminRoot(t, defaults, nil)
	hc.SetOut(io.Discard)
	hc.SetArgs([]string{"healthcheck", "--timeout", "2s"})
	if err := hc.Execute(); err == nil {
		t.Error("healthcheck of a stopped process succeeded")
	}
}

func TestATakenAdminAddrFailsTheStartBeforeTheServiceIsBuilt(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	defaults := settings.Join(cli.ComponentSettings("thing", "x.log"), admin.Settings(":9999"))
	t.Setenv("ADMIN_ADDR", ln.Addr().String())
	t.Setenv("LOG_LEVEL", "ERROR")
	built := false
	root, _ := adminRoot(t, defaults, func(context.Context, *settings.Settings, *logfactory.Logger, redis.UniversalClient) (cli.Service, error) {
		built = true
		return nil, errors.New("built")
	})
	root.SetArgs(nil)
	err = root.Execute()
	if err == nil || !strings.Contains(err.Error(), "ADMIN_ADDR") || built {
		t.Fatalf("Execute = %v (built %v), want an error naming ADMIN_ADDR before the build", err, built)
	}
}

func httpGet(t *testing.T, url string, want int) string {
	t.Helper()
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("GET %s = %d, want %d: %s", url, resp.StatusCode, want, b)
	}
	return string(b)
}
