package monitor

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the Redis Monitor's Prometheus metrics (docs/metrics.md).
type metrics struct {
	requests      *prometheus.CounterVec // plugin, outcome
	lockWaits     *prometheus.CounterVec // plugin
	publishErrors prometheus.Counter
}

// outcomes of a request, the requests_total label.
const (
	outcomeHandled  = "handled"  // the plugin did its work; the key is deleted
	outcomeFailed   = "failed"   // an attempt failed; retried up to RETRY_FAILURES_MAX
	outcomeDropped  = "dropped"  // given up after its retries; the key is deleted
	outcomeDeferred = "deferred" // a service it needs is away; left for a later cycle
)

func newMetrics(m *Monitor) *metrics {
	mt := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "scrapy_redis_monitor_requests_total",
			Help: "Requests (info:*, stop:*, ... keys) by plugin and outcome: handled, failed (an attempt; retried), " +
				"dropped (given up after its retries) or deferred (a service it needs is away).",
		}, []string{"plugin", "outcome"}),
		lockWaits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "scrapy_redis_monitor_lock_waits_total",
			Help: "Requests left for another cycle because another Redis Monitor held their lock.",
		}, []string{"plugin"}),
		publishErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "scrapy_redis_monitor_kafka_publish_errors_total",
			Help: "Attempts to publish an answer that Kafka failed (retried while Kafka is away, or refused for good).",
		}),
	}
	// Every plugin's series exist from the start, at zero.
	for _, p := range m.plugins {
		for _, o := range []string{outcomeHandled, outcomeFailed, outcomeDropped, outcomeDeferred} {
			mt.requests.WithLabelValues(p.Plugin.Name(), o)
		}
		mt.lockWaits.WithLabelValues(p.Plugin.Name())
	}
	m.publisher.OnError = func(error) { mt.publishErrors.Inc() }
	return mt
}

// Collectors are the Redis Monitor's metrics, for the admin endpoint
// (admin.Instrumented).
func (m *Monitor) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.metrics.requests, m.metrics.lockWaits, m.metrics.publishErrors, m.demand}
}

// outcome counts a request of plugin.
func (mt *metrics) outcome(plugin, outcome string) {
	mt.requests.WithLabelValues(plugin, outcome).Inc()
}

// lockTried counts a lock another monitor held (ok false without error).
func (mt *metrics) lockTried(plugin string, ok bool, err error) {
	if !ok && err == nil {
		mt.lockWaits.WithLabelValues(plugin).Inc()
	}
}
