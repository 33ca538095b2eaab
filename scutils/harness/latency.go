package harness

import (
	"slices"
	"time"
)

// Quantiles sorts latencies (in place) and returns their q quantile (0 to
// 1) in milliseconds: the latency at index q*(n-1), so 0 is the least and 1
// the greatest. Benchmarks report it with b.ReportMetric; latencies must not
// be empty.
func Quantiles(latencies []time.Duration) func(q float64) float64 {
	slices.Sort(latencies)
	return func(q float64) float64 {
		return float64(latencies[int(q*float64(len(latencies)-1))]) / float64(time.Millisecond)
	}
}
