package monitor

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/kafkaclient"
)

// metrics are the Kafka Monitor's Prometheus metrics (docs/metrics.md).
type metrics struct {
	stored        map[string]prometheus.Counter // by plugin name
	failed        prometheus.Counter
	requests      *prometheus.CounterVec
	writeDuration prometheus.Histogram
	writeErrors   prometheus.Counter
	lag           *lagCollector
}

func newMetrics(m *Monitor) *metrics {
	mt := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "scrapy_kafka_monitor_requests_total",
			Help: "Requests consumed, by the plugin that stored them (plugin=\"none\" for the failed) and outcome: stored or failed " +
				"(too large, not JSON, no schema matched, rejected by the plugin).",
		}, []string{"plugin", "outcome"}),
		writeDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "scrapy_kafka_monitor_redis_write_duration_seconds",
			Help:    "Time to store one worker's share of a batch in Redis (one pipelined round trip), failed attempts included.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}),
		writeErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "scrapy_kafka_monitor_redis_write_errors_total",
			Help: "Attempts to store requests in Redis that failed (retried with back-off).",
		}),
		stored: map[string]prometheus.Counter{},
		lag: &lagCollector{
			client: m.kafka.NewClient(), topic: m.topic, group: m.group,
			timeout: min(m.kafka.ConnTimeout, 5*time.Second), // well within a scrape's timeout
			desc: prometheus.NewDesc("scrapy_kafka_monitor_consumer_lag",
				"Messages of the incoming topic the consumer group has not committed yet (the same for every monitor of the group).",
				nil, nil),
		},
	}
	for _, p := range m.plugins {
		mt.stored[p.Plugin.Name()] = mt.requests.WithLabelValues(p.Plugin.Name(), "stored")
	}
	mt.failed = mt.requests.WithLabelValues("none", "failed")
	return mt
}

// Collectors are the Kafka Monitor's metrics, for the admin endpoint
// (admin.Instrumented).
func (m *Monitor) Collectors() []prometheus.Collector {
	cs := []prometheus.Collector{m.metrics.requests, m.metrics.writeDuration, m.metrics.writeErrors, m.metrics.lag}
	if m.wait != nil {
		cs = append(cs, m.wait.Collector())
	}
	return cs
}

// count counts a stored batch's requests (not those skipped as stored
// before, which have no plugin).
func (mt *metrics) count(reqs []request) {
	for i := range reqs {
		switch {
		case reqs[i].failed:
			mt.failed.Inc()
		case reqs[i].plugin != nil:
			mt.stored[reqs[i].plugin.Plugin.Name()].Inc()
		}
	}
}

// write times one attempt to store requests and counts its failure (not a
// plugin's Batch refusing its requests: Redis did not fail).
func (mt *metrics) write(attempt func() error) error {
	start := time.Now()
	err := attempt()
	mt.writeDuration.Observe(time.Since(start).Seconds())
	if err != nil && !errors.Is(err, errFlushRejected) {
		mt.writeErrors.Inc()
	}
	return err
}

// lagCollector asks Kafka for the group's lag when scraped; while Kafka
// does not answer it reports nothing.
type lagCollector struct {
	client       *kafka.Client
	topic, group string
	timeout      time.Duration
	desc         *prometheus.Desc
}

func (l *lagCollector) Describe(ch chan<- *prometheus.Desc) { ch <- l.desc }

func (l *lagCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
	defer cancel()
	lag, err := kafkaclient.ConsumerLag(ctx, l.client, l.topic, l.group)
	if err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(l.desc, prometheus.GaugeValue, float64(lag))
}
