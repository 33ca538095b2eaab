package engine_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

// gather registers the engine's metrics on a registry of their own and
// returns the value of each series, by "name{label=value,...}".
func gather(t *testing.T, e *env) map[string]float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	if err := reg.Register(collectors(e)); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				if l.GetName() != "spider" {
					labels = append(labels, l.GetName()+"="+l.GetValue())
				}
			}
			key := f.GetName() + "{" + strings.Join(labels, ",") + "}"
			switch {
			case m.GetCounter() != nil:
				out[key] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				out[key] = m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				out[key+"_count"] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

// collectors is the engine's metrics as one collector.
func collectors(e *env) prometheus.Collector {
	return multi(e.eng.Collectors())
}

type multi []prometheus.Collector

func (m multi) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m {
		c.Describe(ch)
	}
}

func (m multi) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m {
		c.Collect(ch)
	}
}

func TestMetricsCountResponsesRetriesAndDropsAsTheyHappen(t *testing.T) {
	e := newEnv(t, map[string]string{"DOWNLOAD_TIMEOUT": "0.3", "RETRY_TIMES": "2"})
	for _, path := range []string{"/status/404", "/status/500", "/status/299", "/hang", "/status/504"} {
		e.seed(t, crawl(e.site.URL(path), "metrics", 0))
	}
	e.pages(t, 3, 30*time.Second)
	e.drained(t, "link")
	e.noMorePages(t)
	var got map[string]float64
	// The last request is acknowledged just after its page is out.
	harness.WaitFor(t, "no request in flight", 10*time.Second, func() bool {
		got = gather(t, e)
		return got["scrapy_crawler_requests_in_flight{}"] == 0 && got["scrapy_crawler_requests_acknowledging{}"] == 0 &&
			got["scrapy_crawler_leases_held{}"] == 0
	})
	for series, want := range map[string]float64{
		`scrapy_crawler_responses_total{class=4xx,code=404}`:    1,
		`scrapy_crawler_responses_total{class=5xx,code=500}`:    1,
		`scrapy_crawler_responses_total{class=5xx,code=504}`:    3,
		`scrapy_crawler_responses_total{class=2xx,code=other}`:  1,
		`scrapy_crawler_requests_dropped_total{reason=timeout}`: 1,
		`scrapy_crawler_requests_dropped_total{reason=504}`:     1,
		`scrapy_crawler_retries_total{}`:                        4,
		`scrapy_crawler_pages_published_total{}`:                3,
		`scrapy_crawler_pops_total{}`:                           9,
		`scrapy_crawler_fetch_duration_seconds{}_count`:         9,
		`scrapy_crawler_kafka_publish_duration_seconds{}_count`: 3,
		`scrapy_crawler_kafka_publish_errors_total{}`:           0,
		`scrapy_crawler_parse_errors_total{}`:                   0,
		`scrapy_crawler_requests_in_flight{}`:                   0,
		`scrapy_crawler_requests_acknowledging{}`:               0,
		`scrapy_crawler_leases_held{}`:                          0,
	} {
		if got[series] != want {
			t.Errorf("%s = %v, want %v", series, got[series], want)
		}
	}
	for _, gauge := range []string{`scrapy_crawler_requests_in_flight{}`, `scrapy_crawler_requests_acknowledging{}`} {
		if _, ok := got[gauge]; !ok {
			t.Errorf("no %s", gauge)
		}
	}
	if got[`scrapy_crawler_response_bytes_total{}`] <= 0 {
		t.Errorf("no response bytes counted")
	}
	if n := testutil.CollectAndCount(collectors(e), "scrapy_crawler_responses_total"); n != 4 {
		t.Errorf("%d response series, want 4 (one per code seen)", n)
	}
}
