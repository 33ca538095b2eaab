package stats

import (
	"errors"
	"time"
)

// Defaults, as in the original's StatsCollector.get_* helpers.
const (
	// DefaultWindow is the window length in seconds when WithWindow is not given.
	DefaultWindow = Seconds1Hour
	// DefaultKeepMax is how many step keys a rolling step-based counter keeps.
	DefaultKeepMax = 12
	// DefaultCycleTime is how often a counter's background upkeep runs.
	DefaultCycleTime = 5 * time.Second
)

// Option configures a counter. Options a counter has no use for are ignored
// (WithStartAt only matters to Counter, WithKeepMax only to rolling
// step-based counters, and so on).
type Option func(*options)

type options struct {
	window   int
	start    time.Time
	hasStart bool
	roll     bool
	keepMax  int
	cycle    time.Duration
	clock    func() time.Time
	startAt  int64
	onError  func(error)
}

func buildOptions(opts []Option) (options, error) {
	o := options{
		window:  DefaultWindow,
		roll:    true,
		keepMax: DefaultKeepMax,
		cycle:   DefaultCycleTime,
		clock:   time.Now,
	}
	for _, opt := range opts {
		opt(&o)
	}
	if o.window <= 0 {
		return o, errors.New("window must be at least one second")
	}
	if o.clock == nil {
		o.clock = time.Now
	}
	return o, nil
}

// WithWindow sets the window length in seconds (default DefaultWindow, one
// hour): how far back a sliding window counts, or how long each step of a
// step-based counter lasts.
func WithWindow(seconds int) Option {
	return func(o *options) { o.window = seconds }
}

// WithStartTime sets when the first step of a step-based counter begins
// (whole seconds). By default steps are aligned to the Unix epoch, so a
// one-hour window runs from hh:00:00 to hh:59:59 UTC.
func WithStartTime(t time.Time) Option {
	return func(o *options) { o.start, o.hasStart = t, true }
}

// WithRoll sets whether a step-based counter moves on to a new,
// date-stamped key (<key>:YYYY-MM-DD_HH:MM:SS) when its window passes
// (default true). Without rolling the counter uses the plain key; a
// TimeWindow then counts only hits within its first window.
func WithRoll(roll bool) Option {
	return func(o *options) { o.roll = roll }
}

// WithKeepMax sets how many date-stamped keys a rolling step-based counter
// keeps, the current one included (default DefaultKeepMax, 12); older ones are
// deleted by the upkeep. Zero or less keeps them all.
func WithKeepMax(n int) Option {
	return func(o *options) { o.keepMax = n }
}

// WithCycleTime sets how often the background upkeep runs (default
// DefaultCycleTime, 5s). Zero or less starts no goroutine: call Maintain
// yourself.
func WithCycleTime(d time.Duration) Option {
	return func(o *options) { o.cycle = d }
}

// WithClock sets the source of the current time (default time.Now).
func WithClock(now func() time.Time) Option {
	return func(o *options) { o.clock = now }
}

// WithStartAt sets the value a Counter starts from in each new key (default 0).
func WithStartAt(n int64) Option {
	return func(o *options) { o.startAt = n }
}

// WithErrorHandler sets a function that receives errors of the background
// upkeep, for logging (default: none; the upkeep simply tries again next
// cycle). It is called from the upkeep goroutine.
func WithErrorHandler(f func(error)) Option {
	return func(o *options) { o.onError = f }
}
