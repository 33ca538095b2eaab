package harness_test

import (
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

func TestQuantilesAreTheSortedLatencyAtQTimesTheLastIndex(t *testing.T) {
	latencies := []time.Duration{9 * time.Millisecond, 1 * time.Millisecond, 5 * time.Millisecond, 3 * time.Millisecond, 7 * time.Millisecond}
	ms := harness.Quantiles(latencies)
	for _, tc := range []struct {
		q    float64
		want float64
	}{{0, 1}, {0.5, 5}, {0.99, 7}, {1, 9}} {
		if got := ms(tc.q); got != tc.want {
			t.Errorf("quantile %v = %v ms, want %v", tc.q, got, tc.want)
		}
	}
}
