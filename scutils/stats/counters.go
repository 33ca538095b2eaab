package stats

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// TimeWindow counts hits within fixed, aligned time steps (9:00-10:00,
// 10:00-11:00, ...) in a sorted set per step at <key>:<step start>. With
// WithRoll(false) it counts only within its first window, in the plain key,
// and ignores later hits.
type TimeWindow struct {
	stepped
}

// NewTimeWindow returns a TimeWindow on rdb. Defaults: a one-hour window,
// rolling, the newest 12 step keys kept, upkeep every 5s. The upkeep stops
// when ctx is done or on Stop/Close.
func NewTimeWindow(ctx context.Context, rdb redis.Cmdable, key string, opts ...Option) (*TimeWindow, error) {
	o, err := buildOptions(opts)
	if err != nil {
		return nil, fmt.Errorf("time window %s: %w", key, err)
	}
	c := &TimeWindow{stepped: newStepped(rdb, key, o)}
	c.launch(ctx, o.cycle, c.Maintain, o.onError)
	return c, nil
}

// Increment records one hit in the current step. Without rolling, a hit
// outside the counter's only window is ignored, as in the original.
func (c *TimeWindow) Increment(ctx context.Context) error {
	now := c.clock()
	start := c.steps.start(now)
	end := start + c.steps.window
	if sec := now.Unix(); sec < start || sec >= end {
		return nil
	}
	score, member := newHit(now)
	// Keep a hit in the last instant of the step inside it despite rounding.
	score = min(score, math.Nextafter(float64(end), 0))
	key := c.steps.keyAt(start)
	if err := c.rdb.ZAdd(ctx, key, redis.Z{Score: score, Member: member}).Err(); err != nil {
		return fmt.Errorf("record hit in %s: %w", key, err)
	}
	return nil
}

// Value returns the number of hits in the current step.
func (c *TimeWindow) Value(ctx context.Context) (int64, error) {
	start := c.steps.start(c.clock())
	key := c.steps.keyAt(start)
	n, err := c.rdb.ZCount(ctx, key, formatScore(float64(start)), "("+formatScore(float64(start+c.steps.window))).Result()
	if err != nil {
		return 0, fmt.Errorf("count hits in %s: %w", key, err)
	}
	return n, nil
}

// Maintain runs one round of the upkeep now: it removes hits outside the
// current step from the current key (so readers using ZCARD agree with
// Value) and, with rolling and a KeepMax, deletes the oldest step keys beyond
// KeepMax. The background goroutine calls it every cycle.
func (c *TimeWindow) Maintain(ctx context.Context) error {
	now := c.clock()
	start := c.steps.start(now)
	key := c.steps.keyAt(start)
	pipe := c.rdb.Pipeline()
	pipe.ZRemRangeByScore(ctx, key, "-inf", "("+formatScore(float64(start)))
	pipe.ZRemRangeByScore(ctx, key, formatScore(float64(start+c.steps.window)), "+inf")
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("expire hits outside the window in %s: %w", key, err)
	}
	return c.stepped.Maintain(ctx)
}

// Counter is an integer counter (a Redis string incremented with INCR),
// per step when rolling.
type Counter struct {
	stepped
	startAt int64
}

// NewCounter returns a Counter on rdb. Defaults: a one-hour window, rolling,
// the newest 12 step keys kept, starting at 0 (WithStartAt). The upkeep
// (deleting old step keys) stops when ctx is done or on Stop/Close.
func NewCounter(ctx context.Context, rdb redis.Cmdable, key string, opts ...Option) (*Counter, error) {
	o, err := buildOptions(opts)
	if err != nil {
		return nil, fmt.Errorf("counter %s: %w", key, err)
	}
	c := &Counter{stepped: newStepped(rdb, key, o), startAt: o.startAt}
	c.launchPurge(ctx, o)
	return c, nil
}

// Increment adds one to the counter. A key that does not exist yet is
// created with the start value first.
func (c *Counter) Increment(ctx context.Context) error {
	key := c.Key()
	var err error
	if c.startAt == 0 {
		err = c.rdb.Incr(ctx, key).Err()
	} else {
		_, err = c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.SetNX(ctx, key, c.startAt, 0)
			p.Incr(ctx, key)
			return nil
		})
	}
	if err != nil {
		return fmt.Errorf("increment counter %s: %w", key, err)
	}
	return nil
}

// Value returns the counter's current value, the start value when nothing
// was counted yet.
func (c *Counter) Value(ctx context.Context) (int64, error) {
	key := c.Key()
	s, err := c.rdb.Get(ctx, key).Result()
	if errors.Is(err, redis.Nil) {
		return c.startAt, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read counter %s: %w", key, err)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("read counter %s: %w", key, err)
	}
	return n, nil
}

// UniqueCounter counts distinct items exactly, in a Redis set, per step when
// rolling. Storage grows with the number of items.
type UniqueCounter struct {
	stepped
}

// NewUniqueCounter returns a UniqueCounter on rdb, with the same defaults
// as NewCounter.
func NewUniqueCounter(ctx context.Context, rdb redis.Cmdable, key string, opts ...Option) (*UniqueCounter, error) {
	o, err := buildOptions(opts)
	if err != nil {
		return nil, fmt.Errorf("unique counter %s: %w", key, err)
	}
	c := &UniqueCounter{stepped: newStepped(rdb, key, o)}
	c.launchPurge(ctx, o)
	return c, nil
}

// Increment counts item if it was not counted yet (SADD).
func (c *UniqueCounter) Increment(ctx context.Context, item string) error {
	key := c.Key()
	if err := c.rdb.SAdd(ctx, key, item).Err(); err != nil {
		return fmt.Errorf("add item to unique counter %s: %w", key, err)
	}
	return nil
}

// Value returns the number of distinct items counted (SCARD).
func (c *UniqueCounter) Value(ctx context.Context) (int64, error) {
	key := c.Key()
	n, err := c.rdb.SCard(ctx, key).Result()
	if err != nil {
		return 0, fmt.Errorf("read unique counter %s: %w", key, err)
	}
	return n, nil
}

// HyperLogLogCounter estimates the number of distinct items (PFADD/PFCOUNT,
// standard error 0.81%, at most 12 KB per key), per step when rolling.
type HyperLogLogCounter struct {
	stepped
}

// NewHyperLogLogCounter returns a HyperLogLogCounter on rdb, with the same
// defaults as NewCounter. Scrapy Cluster's lifetime counters are
// HyperLogLogCounters without rolling, fed one unique value per event.
func NewHyperLogLogCounter(ctx context.Context, rdb redis.Cmdable, key string, opts ...Option) (*HyperLogLogCounter, error) {
	o, err := buildOptions(opts)
	if err != nil {
		return nil, fmt.Errorf("hyperloglog counter %s: %w", key, err)
	}
	c := &HyperLogLogCounter{stepped: newStepped(rdb, key, o)}
	c.launchPurge(ctx, o)
	return c, nil
}

// Increment counts item if it was not counted yet (PFADD).
func (c *HyperLogLogCounter) Increment(ctx context.Context, item string) error {
	key := c.Key()
	if err := c.rdb.PFAdd(ctx, key, item).Err(); err != nil {
		return fmt.Errorf("add item to hyperloglog %s: %w", key, err)
	}
	return nil
}

// Value returns the estimated number of distinct items (PFCOUNT).
func (c *HyperLogLogCounter) Value(ctx context.Context) (int64, error) {
	key := c.Key()
	n, err := c.rdb.PFCount(ctx, key).Result()
	if err != nil {
		return 0, fmt.Errorf("read hyperloglog %s: %w", key, err)
	}
	return n, nil
}

// BitmapCounter sets bits by index (SETBIT) and counts the bits set
// (BITCOUNT), per step when rolling: e.g. which user ids were seen today.
type BitmapCounter struct {
	stepped
}

// NewBitmapCounter returns a BitmapCounter on rdb, with the same defaults as
// NewCounter.
func NewBitmapCounter(ctx context.Context, rdb redis.Cmdable, key string, opts ...Option) (*BitmapCounter, error) {
	o, err := buildOptions(opts)
	if err != nil {
		return nil, fmt.Errorf("bitmap counter %s: %w", key, err)
	}
	c := &BitmapCounter{stepped: newStepped(rdb, key, o)}
	c.launchPurge(ctx, o)
	return c, nil
}

// Increment sets the bit at index (0 to 2^32-1) to 1.
func (c *BitmapCounter) Increment(ctx context.Context, index int64) error {
	key := c.Key()
	if err := c.rdb.SetBit(ctx, key, index, 1).Err(); err != nil {
		return fmt.Errorf("set bit %d of %s: %w", index, key, err)
	}
	return nil
}

// Value returns the number of bits set to 1 (BITCOUNT).
func (c *BitmapCounter) Value(ctx context.Context) (int64, error) {
	key := c.Key()
	n, err := c.rdb.BitCount(ctx, key, nil).Result()
	if err != nil {
		return 0, fmt.Errorf("count bits of %s: %w", key, err)
	}
	return n, nil
}
