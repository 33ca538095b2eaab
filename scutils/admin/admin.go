// Package admin is the admin endpoint every long-running Scrapy Cluster
// process serves: Prometheus metrics, liveness and readiness probes, and
// optionally Go's profiler.
//
//	GET /metrics        the process's metrics in the Prometheus text format: the
//	                    component's own (see docs/metrics.md) and the Go runtime's
//	                    and process's collectors
//	GET /healthz        200 {"status": "ok"} while the process serves
//	GET /readyz         200 when every dependency answers (Redis, Kafka, and
//	                    ZooKeeper when configured), else 503; the JSON body
//	                    says which failed and why
//	GET /debug/pprof/   Go's profiler, only with ADMIN_PPROF
//
// The Kafka Monitor, Redis Monitor and crawler serve it on ADMIN_ADDR; the
// REST service serves it beside its API on its own port. Each Server has a
// registry of its own (not Prometheus's global one), so tests can run
// several components in one process.
package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/lifecycle"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// The admin settings. The REST service serves the endpoint on its API's
// port, so it declares Pprof alone.
var (
	Addr = settings.String("ADMIN_ADDR", "",
		"host:port of the admin endpoint: `/metrics`, `/healthz`, `/readyz` ([metrics and probes](metrics.md)); `\"\"` serves none; port 0 takes any free port (logged at start). Several processes on one host need one each; a taken port stops the start with an error naming this setting").Ours()
	Pprof = settings.Bool("ADMIN_PPROF", false, "also serve Go's profiler at `/debug/pprof/` on the admin endpoint (the REST service's: its API port)").Ours()
)

// Default admin addresses: one port per component, so that every component
// of a cluster can run on one host. Several crawlers on one host need one
// address each.
const (
	KafkaMonitorAddr = ":9410"
	RedisMonitorAddr = ":9411"
	CrawlerAddr      = ":9412"
)

// Settings are the admin settings of a component that serves the endpoint
// on an address of its own, addr by default.
func Settings(addr string) settings.Group { return settings.Declare(Addr.WithDefault(addr), Pprof) }

// Check is one dependency /readyz probes.
type Check struct {
	// Name names the dependency in the answer ("redis", "kafka", "zookeeper").
	Name string
	// Probe returns nil when the dependency answers; it must respect ctx.
	Probe func(ctx context.Context) error
}

// Instrumented is a service with metrics of its own; RunService registers
// them on the process's Server.
type Instrumented interface {
	Collectors() []prometheus.Collector
}

// Host is a service that serves the admin endpoint on a listener of its
// own (the REST service, beside its API) instead of on ADMIN_ADDR.
type Host interface {
	ServeAdmin(*Server)
}

// Server is one process's admin endpoint.
type Server struct {
	registry *prometheus.Registry
	pprof    bool
	timeout  time.Duration

	mu     sync.Mutex
	checks []Check
}

// Option configures New.
type Option func(*Server)

// WithPprof serves /debug/pprof/ when on.
func WithPprof(on bool) Option { return func(s *Server) { s.pprof = on } }

// WithProbeTimeout bounds each readiness probe (default 2 s).
func WithProbeTimeout(d time.Duration) Option { return func(s *Server) { s.timeout = d } }

// New returns a Server whose registry holds the Go runtime and process
// collectors.
func New(opts ...Option) *Server {
	s := &Server{registry: prometheus.NewRegistry(), timeout: 2 * time.Second}
	for _, o := range opts {
		o(s)
	}
	s.registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return s
}

// Registry is the Server's own registry.
func (s *Server) Registry() *prometheus.Registry { return s.registry }

// Register adds collectors to the registry.
func (s *Server) Register(cs ...prometheus.Collector) error {
	for _, c := range cs {
		if err := s.registry.Register(c); err != nil {
			return fmt.Errorf("register metrics: %w", err)
		}
	}
	return nil
}

// AddCheck adds a dependency to /readyz.
func (s *Server) AddCheck(checks ...Check) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checks = append(s.checks, checks...)
}

// Paths are the admin endpoint's paths (and the prefix of the profiler's).
var Paths = []string{"/metrics", "/healthz", "/readyz", "/debug/pprof/"}

// Handler serves the admin paths; anything else is 404.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{
		Registry: s.registry, ErrorHandling: promhttp.ContinueOnError,
	}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", s.readyz)
	if s.pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}

// Wrap serves the admin paths with the admin handler and everything else
// with api.
func (s *Server) Wrap(api http.Handler) http.Handler {
	adm := s.Handler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if IsAdminPath(r.URL.Path) {
			adm.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
}

// IsAdminPath reports whether path is one of Paths (or under the profiler's).
func IsAdminPath(path string) bool {
	switch path {
	case "/metrics", "/healthz", "/readyz":
		return true
	}
	return strings.HasPrefix(path, "/debug/pprof/")
}

// CheckResult is one dependency's state in the /readyz answer.
type CheckResult struct {
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

// Readiness is the /readyz answer.
type Readiness struct {
	// Status is "ready" or "not ready".
	Status string                 `json:"status"`
	Checks map[string]CheckResult `json:"checks"`
}

// Ready runs every check at once, each within the probe timeout.
func (s *Server) Ready(ctx context.Context) Readiness {
	s.mu.Lock()
	checks := append([]Check(nil), s.checks...)
	s.mu.Unlock()
	results := make([]CheckResult, len(checks))
	var wg sync.WaitGroup
	for i, c := range checks {
		wg.Go(func() {
			pctx, cancel := context.WithTimeout(ctx, s.timeout)
			defer cancel()
			if err := c.Probe(pctx); err != nil {
				if errors.Is(err, context.DeadlineExceeded) && pctx.Err() != nil {
					err = fmt.Errorf("no answer within %v: %w", s.timeout, err)
				}
				results[i] = CheckResult{Error: err.Error()}
				return
			}
			results[i] = CheckResult{OK: true}
		})
	}
	wg.Wait()
	out := Readiness{Status: "ready", Checks: make(map[string]CheckResult, len(checks))}
	for i, c := range checks {
		out.Checks[c.Name] = results[i]
		if !results[i].OK {
			out.Status = "not ready"
		}
	}
	return out
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ready := s.Ready(r.Context())
	code := http.StatusOK
	if ready.Status != "ready" {
		code = http.StatusServiceUnavailable
	}
	writeJSON(w, code, ready)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// Listen opens the admin endpoint's listener on addr (ADMIN_ADDR). A taken
// port is an error naming the setting.
func Listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("setting %s: listen on %s for the admin endpoint (give each process on a host its own, or \"\" for none): %w", Addr.Name(), addr, err)
	}
	return ln, nil
}

// Serve serves the admin endpoint on ln until ctx ends, then shuts it down,
// cutting requests still running a second later (a profile in progress).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		// Long enough for a 30-second CPU profile.
		WriteTimeout: 2 * time.Minute,
	}
	return lifecycle.ServeHTTP(ctx, srv, ln, time.Second)
}
