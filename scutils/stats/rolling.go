package stats

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// rollingSet records hits in sliding-window sorted sets (and optionally a
// lifetime HyperLogLog); RollingTimeWindow and WindowSet are both one.
type rollingSet struct {
	rdb         redis.Cmdable
	name        string // for errors
	keys        []string
	windows     []int // seconds, one per key
	lifetimeKey string
	clock       func() time.Time
}

// increment records one hit in every key in a single round trip.
func (r *rollingSet) increment(ctx context.Context) error {
	var err error
	switch {
	case len(r.keys) == 0 && r.lifetimeKey == "":
		return nil
	case len(r.keys) == 1 && r.lifetimeKey == "":
		score, member := newHit(r.clock())
		err = r.rdb.ZAdd(ctx, r.keys[0], redis.Z{Score: score, Member: member}).Err()
	default:
		pipe := r.rdb.Pipeline()
		r.queue(ctx, pipe, 1)
		_, err = pipe.Exec(ctx)
	}
	if err != nil {
		return fmt.Errorf("record hit in %s: %w", r.name, err)
	}
	return nil
}

// queue adds n hits to every key on pipe: one ZADD per window and one PFADD,
// whatever n is. The arguments are built once and shared by every window.
func (r *rollingSet) queue(ctx context.Context, pipe redis.Pipeliner, n int) {
	if n <= 0 {
		return
	}
	now := r.clock()
	zadd := make([]any, 2, 2+2*n) // "zadd", key, score, member, ...
	zadd[0] = "zadd"
	var pfadd []any
	if r.lifetimeKey != "" {
		pfadd = make([]any, 2, 2+n)
		pfadd[0], pfadd[1] = "pfadd", r.lifetimeKey
	}
	var score any // one value for every hit (an any made once, not per hit)
	for range n {
		s, hit := newHit(now)
		if score == nil {
			score = formatScore(s)
		}
		var member any = hit
		zadd = append(zadd, score, member)
		if pfadd != nil {
			pfadd = append(pfadd, member)
		}
	}
	for _, k := range r.keys {
		args := zadd
		if len(r.keys) > 1 {
			args = slices.Clone(zadd)
		}
		args[1] = k
		pipe.Do(ctx, args...)
	}
	if pfadd != nil {
		pipe.Do(ctx, pfadd...)
	}
}

// count returns the hits of the last window seconds in key: those the
// upkeep would keep (score > now-window), whether or not it has run.
func (r *rollingSet) count(ctx context.Context, key string, window int) (int64, error) {
	since := unixSeconds(r.clock()) - float64(window)
	n, err := r.rdb.ZCount(ctx, key, "("+formatScore(since), "+inf").Result()
	if err != nil {
		return 0, fmt.Errorf("count hits in %s: %w", key, err)
	}
	return n, nil
}

// trim removes the hits older than each key's window, as the original's
// expire does (score <= now-window), all in one round trip.
func (r *rollingSet) trim(ctx context.Context) error {
	if len(r.keys) == 0 {
		return nil
	}
	now := unixSeconds(r.clock())
	pipe := r.rdb.Pipeline()
	for i, k := range r.keys {
		pipe.ZRemRangeByScore(ctx, k, "-inf", formatScore(now-float64(r.windows[i])))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("expire old hits in %s: %w", r.name, err)
	}
	return nil
}

// allKeys returns the window keys, then the lifetime key if any.
func (r *rollingSet) allKeys() []string {
	keys := slices.Clone(r.keys)
	if r.lifetimeKey != "" {
		keys = append(keys, r.lifetimeKey)
	}
	return keys
}

// deleteKeys deletes every key of the set.
func (r *rollingSet) deleteKeys(ctx context.Context) error {
	pipe := r.rdb.Pipeline()
	for _, k := range r.allKeys() {
		pipe.Del(ctx, k)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("delete stats keys of %s: %w", r.name, err)
	}
	return nil
}

// RollingTimeWindow counts the hits of the last window seconds in a sorted
// set at key: "how many requests in the last hour?".
type RollingTimeWindow struct {
	upkeep
	set rollingSet
}

// NewRollingTimeWindow returns a RollingTimeWindow on rdb. Defaults: a
// one-hour window, old hits trimmed every 5s (so that readers using ZCARD,
// like the Python Redis Monitor, see the right count). The upkeep stops when
// ctx is done or on Stop/Close.
func NewRollingTimeWindow(ctx context.Context, rdb redis.Cmdable, key string, opts ...Option) (*RollingTimeWindow, error) {
	o, err := buildOptions(opts)
	if err != nil {
		return nil, fmt.Errorf("rolling time window %s: %w", key, err)
	}
	c := &RollingTimeWindow{set: rollingSet{
		rdb: rdb, name: key, keys: []string{key}, windows: []int{o.window}, clock: o.clock,
	}}
	c.launch(ctx, o.cycle, c.Maintain, o.onError)
	return c, nil
}

// Increment records one hit now.
func (c *RollingTimeWindow) Increment(ctx context.Context) error {
	return c.set.increment(ctx)
}

// Value returns the number of hits within the last window seconds.
func (c *RollingTimeWindow) Value(ctx context.Context) (int64, error) {
	return c.set.count(ctx, c.set.keys[0], c.set.windows[0])
}

// Key returns the counter's Redis key.
func (c *RollingTimeWindow) Key() string { return c.set.keys[0] }

// DeleteKey deletes the counter's key from Redis.
func (c *RollingTimeWindow) DeleteKey(ctx context.Context) error {
	return c.set.deleteKeys(ctx)
}

// Maintain runs one round of the upkeep now: it removes the hits older than
// the window. The background goroutine calls it every cycle.
func (c *RollingTimeWindow) Maintain(ctx context.Context) error {
	return c.set.trim(ctx)
}

// WindowSet counts one kind of event over several sliding windows and,
// optionally, over its lifetime, as every Scrapy Cluster component does for
// its stats: sorted sets at <base>:<seconds> (e.g.
// stats:kafka-monitor:total:900) and a HyperLogLog at <base>:lifetime. One
// Increment writes them all in one pipelined round trip.
type WindowSet struct {
	upkeep
	set rollingSet
}

// NewWindowSet returns a WindowSet on rdb for base, with the given windows in
// seconds (duplicates are ignored; see WindowsByName for STATS_TIMES) and,
// if lifetime is true, a lifetime counter. Old hits are trimmed from every
// window in one round trip every cycle (WithCycleTime, default 5s) until ctx
// is done or Stop/Close is called. Of the options only WithCycleTime,
// WithClock and WithErrorHandler apply.
func NewWindowSet(ctx context.Context, rdb redis.Cmdable, base string, windows []int, lifetime bool, opts ...Option) (*WindowSet, error) {
	o, err := buildOptions(opts)
	if err != nil {
		return nil, fmt.Errorf("window set %s: %w", base, err)
	}
	s := &WindowSet{set: rollingSet{rdb: rdb, name: base, clock: o.clock}}
	for _, w := range windows {
		if w <= 0 {
			return nil, fmt.Errorf("window set %s: window %d: must be at least one second", base, w)
		}
		if slices.Contains(s.set.windows, w) {
			continue
		}
		s.set.windows = append(s.set.windows, w)
		s.set.keys = append(s.set.keys, base+":"+strconv.Itoa(w))
	}
	if lifetime {
		s.set.lifetimeKey = base + ":lifetime"
	}
	if len(s.set.keys) > 0 {
		s.launch(ctx, o.cycle, s.Maintain, o.onError)
	}
	return s, nil
}

// Increment records one event in every window and, with a lifetime counter,
// adds a value unique to the event to the HyperLogLog: one round trip.
func (s *WindowSet) Increment(ctx context.Context) error {
	return s.set.increment(ctx)
}

// AddTo queues n events on pipe, for callers that write a batch of work and
// its stats in one round trip; pipe.Exec sends them.
func (s *WindowSet) AddTo(ctx context.Context, pipe redis.Pipeliner, n int) {
	s.set.queue(ctx, pipe, n)
}

// Value returns the number of events within the last window seconds; window
// must be one of the set's windows.
func (s *WindowSet) Value(ctx context.Context, window int) (int64, error) {
	i := slices.Index(s.set.windows, window)
	if i < 0 {
		return 0, fmt.Errorf("count hits in %s: no %d second window (have %v)", s.set.name, window, s.set.windows)
	}
	return s.set.count(ctx, s.set.keys[i], window)
}

// LifetimeValue returns the estimated number of events ever counted (PFCOUNT
// of <base>:lifetime); it is an error when the set has no lifetime counter.
func (s *WindowSet) LifetimeValue(ctx context.Context) (int64, error) {
	if s.set.lifetimeKey == "" {
		return 0, fmt.Errorf("count lifetime hits of %s: no lifetime counter", s.set.name)
	}
	n, err := s.set.rdb.PFCount(ctx, s.set.lifetimeKey).Result()
	if err != nil {
		return 0, fmt.Errorf("count lifetime hits in %s: %w", s.set.lifetimeKey, err)
	}
	return n, nil
}

// Windows returns the set's window lengths in seconds.
func (s *WindowSet) Windows() []int { return slices.Clone(s.set.windows) }

// Keys returns every Redis key the set writes: one per window, then the
// lifetime key if any.
func (s *WindowSet) Keys() []string { return s.set.allKeys() }

// DeleteKeys deletes every key of the set from Redis.
func (s *WindowSet) DeleteKeys(ctx context.Context) error {
	return s.set.deleteKeys(ctx)
}

// Maintain runs one round of the upkeep now: it removes the hits older than
// each window, in one round trip. The background goroutine calls it every
// cycle.
func (s *WindowSet) Maintain(ctx context.Context) error {
	return s.set.trim(ctx)
}
