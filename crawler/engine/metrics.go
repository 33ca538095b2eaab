package engine

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/fetch"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
)

// metrics are the crawler's Prometheus metrics (docs/metrics.md), all
// labelled with the spider. What the engine and the scheduler count anyway
// (Counters, scheduler.Stats) is read when scraped; the rest is counted
// where it happens, with one atomic add or histogram observation each.
type metrics struct {
	e *Engine

	codes   [600]atomic.Int64 // responses by status code 100-599 known to net/http
	unknown [10]atomic.Int64  // responses with other codes, by class

	dropMu  sync.RWMutex
	dropped map[string]*atomic.Int64 // by reason; the reasons are the code's own words

	fetchDuration   prometheus.Histogram
	responseBytes   prometheus.Counter
	inFlight        prometheus.Gauge
	acknowledging   prometheus.Gauge
	publishDuration prometheus.Histogram
	publishErrors   prometheus.Counter
	funcs           []prometheus.Collector

	responsesDesc, droppedDesc *prometheus.Desc
}

// newMetrics builds e's metrics and tells e's publisher to count its failures.
func newMetrics(e *Engine) *metrics {
	labels := prometheus.Labels{"spider": e.spider.Name()}
	m := &metrics{
		e:       e,
		dropped: map[string]*atomic.Int64{},
		fetchDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "scrapy_crawler_fetch_duration_seconds", ConstLabels: labels,
			Help:    "Time a fetch took, redirects included, whether it got a response or failed.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}),
		responseBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "scrapy_crawler_response_bytes_total", ConstLabels: labels,
			Help: "Bytes of response bodies received (after decompression, at most DOWNLOAD_MAXSIZE each).",
		}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "scrapy_crawler_requests_in_flight", ConstLabels: labels,
			Help: "Requests being fetched, parsed or published right now.",
		}),
		acknowledging: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "scrapy_crawler_requests_acknowledging", ConstLabels: labels,
			Help: "Requests published or given up, waiting for Redis to end their leases (and queue their follow-ups).",
		}),
		publishDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "scrapy_crawler_kafka_publish_duration_seconds", ConstLabels: labels,
			Help:    "Time from handing a page to the Kafka producer until Kafka acknowledged it (retries included).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}),
		publishErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "scrapy_crawler_kafka_publish_errors_total", ConstLabels: labels,
			Help: "Attempts to publish a page that Kafka failed (retried while Kafka is away, or refused for good).",
		}),
		responsesDesc: prometheus.NewDesc("scrapy_crawler_responses_total",
			"Responses received, by status class and code (codes net/http does not know are code=\"other\").",
			[]string{"class", "code"}, labels),
		droppedDesc: prometheus.NewDesc("scrapy_crawler_requests_dropped_total",
			"Popped requests that ended without a publication, by the crawl ledger's reason: refused after the pop "+
				"(expired, private_address, robots), given up (timeout, connection, 504, uncrawlable), not published "+
				"(too_large, unpublished, no_result); and undecodable queue members.",
			[]string{"reason"}, labels),
	}
	counter := func(name, help string, f func() int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: labels},
			func() float64 { return float64(f()) })
	}
	gauge := func(name, help string, f func() int) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: labels},
			func() float64 { return float64(f()) })
	}
	c, sched := &e.counters, e.sched
	m.funcs = []prometheus.Collector{
		counter("scrapy_crawler_pages_published_total", "Pages published to Kafka.", c.Published.Load),
		counter("scrapy_crawler_retries_total", "Requests queued again after no response or a 504.", c.Retried.Load),
		counter("scrapy_crawler_parse_errors_total", "Pages the spider could not fully parse (published all the same).", c.ParseErrors.Load),
		counter("scrapy_crawler_pops_total", "Requests popped from the domain queues.", func() int64 { return sched.Stats().Popped }),
		counter("scrapy_crawler_throttle_denials_total", "Pop attempts a domain's throttle refused (window full or moderated).",
			func() int64 { return sched.Stats().Denied }),
		counter("scrapy_crawler_leases_reaped_total", "Expired leases of dead crawlers this crawler put back in their queues.",
			func() int64 { return sched.Stats().Reaped }),
		gauge("scrapy_crawler_leases_held", "Requests leased to this crawler (popped and not yet acknowledged).", sched.InFlight),
		gauge("scrapy_crawler_domain_queues", "Domain queues this crawler knows of.", sched.Domains),
		gauge("scrapy_crawler_results_held_bytes", "Bytes of encoded results waiting for Kafka's acknowledgement "+
			"(at most 3 × KAFKA_PRODUCER_MAX_REQUEST_SIZE; pages wait for room beyond).",
			func() int { bytes, _ := e.pub.Held(); return bytes }),
		gauge("scrapy_crawler_followups_held_bytes", "Bytes (estimated) of follow-up requests held by requests waiting for their acknowledgement "+
			"(at most FOLLOWUPS_HELD_BYTES; pages wait for room beyond).",
			func() int { bytes, _ := e.followups.State(); return bytes }),
		counter("scrapy_crawler_followups_waits_total", "Times a page's follow-ups waited for room in FOLLOWUPS_HELD_BYTES (requests waiting for Redis hold that much).",
			e.followups.Waits),
	}
	e.pub.OnError = func(error) { m.publishErrors.Inc() }
	return m
}

// Collectors are the crawler's metrics, for the admin endpoint
// (admin.Instrumented).
func (e *Engine) Collectors() []prometheus.Collector {
	m := e.metrics
	cs := append([]prometheus.Collector{m, m.fetchDuration, m.responseBytes, m.inFlight, m.acknowledging, m.publishDuration, m.publishErrors}, m.funcs...)
	if e.pool != nil {
		cs = append(cs, e.pool.Metrics().Collectors()...)
	}
	if w := e.sched.Wait(); w != nil {
		cs = append(cs, w.Collector())
	}
	return cs
}

// Describe and Collect make the per-code and per-reason counts a collector.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.responsesDesc
	ch <- m.droppedDesc
}

// Collect reports the counts that are not zero.
func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	for code := range m.codes {
		if n := m.codes[code].Load(); n > 0 {
			ch <- prometheus.MustNewConstMetric(m.responsesDesc, prometheus.CounterValue, float64(n), class(code), strconv.Itoa(code))
		}
	}
	for c := range m.unknown {
		if n := m.unknown[c].Load(); n > 0 {
			ch <- prometheus.MustNewConstMetric(m.responsesDesc, prometheus.CounterValue, float64(n), strconv.Itoa(c)+"xx", "other")
		}
	}
	m.dropMu.RLock()
	for reason, n := range m.dropped {
		ch <- prometheus.MustNewConstMetric(m.droppedDesc, prometheus.CounterValue, float64(n.Load()), reason)
	}
	m.dropMu.RUnlock()
	if n := m.e.sched.Stats().Undecodable; n > 0 {
		ch <- prometheus.MustNewConstMetric(m.droppedDesc, prometheus.CounterValue, float64(n), "undecodable")
	}
}

func class(code int) string { return strconv.Itoa(code/100) + "xx" }

// response counts a response by its status code. Codes net/http has no
// text for are counted as "other" in their class, so a site cannot make up
// new series.
func (m *metrics) response(code int) {
	if code >= 100 && code < len(m.codes) && http.StatusText(code) != "" {
		m.codes[code].Add(1)
		return
	}
	m.unknown[min(max(code/100, 0), 9)].Add(1)
}

// fetch fetches req with f and counts the response, its size and the time
// it took.
func (m *metrics) fetch(ctx context.Context, f *fetch.Fetcher, req fetch.Request) (*fetch.Result, error) {
	start := time.Now()
	res, err := f.Fetch(ctx, req)
	m.fetched(start, res, err)
	return res, err
}

// fetched counts a fetch that started at start.
func (m *metrics) fetched(start time.Time, res *fetch.Result, err error) {
	m.fetchDuration.Observe(time.Since(start).Seconds())
	if err == nil {
		m.response(res.Status)
		m.responseBytes.Add(float64(len(res.Body)))
	}
}

// published times a publication that started at start, when it succeeded.
func (m *metrics) published(start time.Time, err error) {
	if err == nil {
		m.publishDuration.Observe(time.Since(start).Seconds())
	}
}

// drop counts a request given up or refused after its pop, for the
// crawl ledger's reason (a bounded set).
func (m *metrics) drop(r ledger.Reason) {
	reason := string(r)
	m.dropMu.RLock()
	n := m.dropped[reason]
	m.dropMu.RUnlock()
	if n == nil {
		m.dropMu.Lock()
		if n = m.dropped[reason]; n == nil {
			n = new(atomic.Int64)
			m.dropped[reason] = n
		}
		m.dropMu.Unlock()
	}
	n.Add(1)
}
