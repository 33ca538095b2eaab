package server

import (
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/admin"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// metrics are the REST service's Prometheus metrics (docs/metrics.md).
type metrics struct {
	requests *prometheus.CounterVec   // endpoint, code
	duration *prometheus.HistogramVec // endpoint
	funcs    []prometheus.Collector
}

func newMetrics(svc *Service) *metrics {
	bool01 := func(f func() bool) func() float64 {
		return func() float64 {
			if f() {
				return 1
			}
			return 0
		}
	}
	return &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "scrapy_rest_requests_total",
			Help: "HTTP requests answered, by endpoint (\"other\" for unknown paths) and status code.",
		}, []string{"endpoint", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "scrapy_rest_request_duration_seconds",
			Help:    "Time to answer an HTTP request, by endpoint; /feed includes the wait for its answer.",
			Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"endpoint"}),
		funcs: []prometheus.Collector{
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "scrapy_rest_feed_waiting",
				Help: "/feed requests waiting for their answer from the cluster.",
			}, func() float64 { return float64(svc.Waiting()) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "scrapy_rest_kafka_connected",
				Help: "1 while Kafka is reachable and answers are being read, else 0 (kafka_connected of GET /).",
			}, bool01(svc.KafkaConnected)),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "scrapy_rest_redis_connected",
				Help: "1 while Redis is reachable, else 0 (redis_connected of GET /).",
			}, bool01(svc.RedisConnected)),
		},
	}
}

// Collectors are the service's metrics (admin.Instrumented).
func (svc *Service) Collectors() []prometheus.Collector {
	return append([]prometheus.Collector{svc.metrics.requests, svc.metrics.duration}, svc.metrics.funcs...)
}

// ServeAdmin makes Handler serve a's endpoints (/metrics, /healthz,
// /readyz, /debug/pprof/ with ADMIN_PPROF) beside the API, on the API's
// port (admin.Host). Call it before Serve.
func (svc *Service) ServeAdmin(a *admin.Server) { svc.admin = a }

// APIAddr is where the service listens: FLASK_HOST:FLASK_PORT.
func APIAddr(s *settings.Settings) string {
	return net.JoinHostPort(Host.From(s), strconv.Itoa(Port.From(s)))
}

// instrumented adds the admin endpoints (after ServeAdmin) to api and
// counts and times every request.
func (svc *Service) instrumented(api http.Handler) http.Handler {
	if svc.admin != nil {
		api = svc.admin.Wrap(api)
	}
	m := svc.metrics
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &codeWriter{ResponseWriter: w, code: http.StatusOK}
		api.ServeHTTP(sw, r)
		ep := endpoint(r.URL.Path, sw.code)
		m.requests.WithLabelValues(ep, strconv.Itoa(sw.code)).Inc()
		m.duration.WithLabelValues(ep).Observe(time.Since(start).Seconds())
	})
}

// knownEndpoints are labelled by name whatever they answer.
var knownEndpoints = map[string]bool{"/": true, "/feed": true, "/poll": true, "/metrics": true, "/healthz": true, "/readyz": true}

// endpoint is a request's endpoint label: a known endpoint's path; else
// the first path segment ("/ui", "/debug") of a path some route answered;
// "other" for paths that are not found, so that no client can make up new
// series.
func endpoint(path string, code int) string {
	if knownEndpoints[path] {
		return path
	}
	if code == http.StatusNotFound {
		return "other"
	}
	first, _, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	return "/" + first
}

// codeWriter remembers the status code written.
type codeWriter struct {
	http.ResponseWriter
	code        int
	wroteHeader bool
}

func (c *codeWriter) WriteHeader(code int) {
	if !c.wroteHeader {
		c.code, c.wroteHeader = code, true
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *codeWriter) Write(p []byte) (int, error) {
	c.wroteHeader = true
	return c.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection (flushes, deadlines).
func (c *codeWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }
