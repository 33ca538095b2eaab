package render

import (
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the pool's Prometheus metrics (docs/metrics.md).
type Metrics struct {
	duration prometheus.Histogram
	rendered prometheus.Counter
	restarts prometheus.Counter
	inUse    prometheus.Gauge
	blocked  prometheus.Counter
	tabs     prometheus.Counter

	refusedDesc *prometheus.Desc
	mu          sync.Mutex
	refused     map[string]*atomic.Int64
}

func newMetrics(labels prometheus.Labels) *Metrics {
	return &Metrics{
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "scrapy_crawler_render_duration_seconds", ConstLabels: labels,
			Help:    "Time a render took (waiting for a browser, loading, wait_for, wait_ms and reading the DOM), whether it succeeded or failed.",
			Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}),
		rendered: prometheus.NewCounter(prometheus.CounterOpts{Name: "scrapy_crawler_pages_rendered_total", ConstLabels: labels,
			Help: "Pages rendered in a browser."}),
		restarts: prometheus.NewCounter(prometheus.CounterOpts{Name: "scrapy_crawler_browser_restarts_total", ConstLabels: labels,
			Help: "Browsers started in place of another: recycled after RENDER_RECYCLE pages, crashed or hung."}),
		inUse: prometheus.NewGauge(prometheus.GaugeOpts{Name: "scrapy_crawler_render_pages_in_use", ConstLabels: labels,
			Help: "Pages being rendered right now (at most RENDER_CONCURRENCY)."}),
		blocked: prometheus.NewCounter(prometheus.CounterOpts{Name: "scrapy_crawler_render_blocked_total", ConstLabels: labels,
			Help: "Requests of rendered pages for the resource types of RENDER_BLOCK, failed before they were sent."}),
		tabs: prometheus.NewCounter(prometheus.CounterOpts{Name: "scrapy_crawler_render_tabs_opened_total", ConstLabels: labels,
			Help: "Tabs opened, each in its own browser context; a tab renders page after page, wiped between them, until its browser is replaced or a page in it fails."}),
		refusedDesc: prometheus.NewDesc("scrapy_crawler_render_refused_total",
			"Requests of rendered pages (the page, its scripts, XHR, frames, redirects) the crawler's guard refused, by reason.",
			[]string{"reason"}, labels),
		refused: map[string]*atomic.Int64{},
	}
}

func (m *Metrics) refuse(reason string) {
	m.mu.Lock()
	n, ok := m.refused[reason]
	if !ok {
		n = &atomic.Int64{}
		m.refused[reason] = n
	}
	m.mu.Unlock()
	n.Add(1)
}

// Refused is how many requests the guard refused for reason.
func (m *Metrics) Refused(reason string) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if n, ok := m.refused[reason]; ok {
		return n.Load()
	}
	return 0
}

// Collectors are the metrics, for the crawler's admin endpoint.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.duration, m.rendered, m.restarts, m.inUse, m.blocked, m.tabs, refusedCollector{m}}
}

type refusedCollector struct{ m *Metrics }

func (c refusedCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.m.refusedDesc }

func (c refusedCollector) Collect(ch chan<- prometheus.Metric) {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	for reason, n := range c.m.refused {
		ch <- prometheus.MustNewConstMetric(c.m.refusedDesc, prometheus.CounterValue, float64(n.Load()), reason)
	}
}
