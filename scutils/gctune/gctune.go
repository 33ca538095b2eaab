// Package gctune sets a service's Go garbage collector from a bound on its
// memory that the service knows from its own settings.
//
// Go's default (GOGC=100) collects each time the heap has doubled since the
// last collection. A process whose live heap is small but which allocates
// fast, like a crawler (a few megabytes live, over a hundred megabytes a
// second allocated), then collects many times a second: measured on
// BenchmarkCrawlCost, that is about 7% of the crawler's CPU per page.
// Apply lets the heap grow to five times the live heap (GOGC=400) and sets
// a soft memory limit at the service's bound: while the heap is small,
// collections are rare; near the bound, the runtime collects as often as
// it must to stay under it, so the peak under hostile input is no higher
// than the bound the service documents.
//
// The standard environment variables win: a process started with GOGC or
// GOMEMLIMIT set keeps what the Go runtime read from them, and Apply only
// sets the other one.
package gctune

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
)

// DefaultPercent is the GC percent Apply sets when GOGC is not set: a
// collection when the heap has grown by 400% since the last one.
const DefaultPercent = 400

// The environment variables that override Apply.
const (
	EnvPercent = "GOGC"
	EnvLimit   = "GOMEMLIMIT"
)

// State is the garbage collector's setting after Apply, for the start-up
// log line.
type State struct {
	// Percent is the GC percent in force (-1: collection off, GOGC=off).
	Percent int64
	// Limit is the soft memory limit in bytes (math.MaxInt64: none).
	Limit int64
	// PercentFromEnv and LimitFromEnv report that GOGC and GOMEMLIMIT were
	// set, so Apply left that part as the runtime read it.
	PercentFromEnv, LimitFromEnv bool
}

// Apply sets the GC percent to percent unless GOGC is set, and the soft
// memory limit to limit bytes unless GOMEMLIMIT is set or limit is not
// positive. It returns what is in force afterwards.
func Apply(percent int, limit int64) State {
	st := State{PercentFromEnv: os.Getenv(EnvPercent) != "", LimitFromEnv: os.Getenv(EnvLimit) != ""}
	if !st.PercentFromEnv {
		debug.SetGCPercent(percent)
	}
	if !st.LimitFromEnv && limit > 0 {
		debug.SetMemoryLimit(limit)
	}
	st.Percent, st.Limit = Current()
	return st
}

// Current reads the GC percent (-1: off) and the soft memory limit in
// bytes in force (runtime/metrics /gc/gogc:percent and
// /gc/gomemlimit:bytes).
func Current() (percent, limit int64) {
	samples := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}}
	metrics.Read(samples)
	// Both are uint64 metrics: off (-1) reads as its two's complement.
	return int64(samples[0].Value.Uint64()), int64(samples[1].Value.Uint64())
}
