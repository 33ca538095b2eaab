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
	return openStepped(ctx, rdb, key, "counter", opts, func(c *Counter, o options) { c.startAt = o.startAt })
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

// The counters of items: each a stepped key fed items with one Redis command
// and counted with another.
type (
	// UniqueCounter counts distinct items exactly, in a Redis set, per step
	// when rolling: Increment adds an item (SADD), Value counts the items
	// (SCARD). Storage grows with the number of items.
	UniqueCounter struct{ itemCounter[string] }

	// HyperLogLogCounter estimates the number of distinct items (standard
	// error 0.81%, at most 12 KB per key), per step when rolling: Increment
	// adds an item (PFADD), Value estimates how many there are (PFCOUNT).
	HyperLogLogCounter struct{ itemCounter[string] }

	// BitmapCounter sets bits by index and counts the bits set, per step when
	// rolling: e.g. which user ids were seen today. Increment sets the bit at
	// an index (0 to 2^32-1) to 1 (SETBIT), Value counts the bits set to 1
	// (BITCOUNT).
	BitmapCounter struct{ itemCounter[int64] }
)

// NewUniqueCounter returns a UniqueCounter on rdb, with the same defaults
// as NewCounter.
func NewUniqueCounter(ctx context.Context, rdb redis.Cmdable, key string, opts ...Option) (*UniqueCounter, error) {
	return openStepped(ctx, rdb, key, "unique counter", opts, func(c *UniqueCounter, _ options) { c.cmds = setCommands })
}

// NewHyperLogLogCounter returns a HyperLogLogCounter on rdb, with the same
// defaults as NewCounter. Scrapy Cluster's lifetime counters are
// HyperLogLogCounters without rolling, fed one unique value per event.
func NewHyperLogLogCounter(ctx context.Context, rdb redis.Cmdable, key string, opts ...Option) (*HyperLogLogCounter, error) {
	return openStepped(ctx, rdb, key, "hyperloglog counter", opts, func(c *HyperLogLogCounter, _ options) { c.cmds = hyperLogLogCommands })
}

// NewBitmapCounter returns a BitmapCounter on rdb, with the same defaults as
// NewCounter.
func NewBitmapCounter(ctx context.Context, rdb redis.Cmdable, key string, opts ...Option) (*BitmapCounter, error) {
	return openStepped(ctx, rdb, key, "bitmap counter", opts, func(c *BitmapCounter, _ options) { c.cmds = bitmapCommands })
}

// The commands of UniqueCounter, HyperLogLogCounter and BitmapCounter.
var (
	setCommands = itemCommands[string]{
		add: func(ctx context.Context, rdb redis.Cmdable, key, item string) error {
			return rdb.SAdd(ctx, key, item).Err()
		},
		count:  func(ctx context.Context, rdb redis.Cmdable, key string) *redis.IntCmd { return rdb.SCard(ctx, key) },
		adding: "add item to unique counter %[2]s", counting: "read unique counter %s",
	}
	hyperLogLogCommands = itemCommands[string]{
		add: func(ctx context.Context, rdb redis.Cmdable, key, item string) error {
			return rdb.PFAdd(ctx, key, item).Err()
		},
		count:  func(ctx context.Context, rdb redis.Cmdable, key string) *redis.IntCmd { return rdb.PFCount(ctx, key) },
		adding: "add item to hyperloglog %[2]s", counting: "read hyperloglog %s",
	}
	bitmapCommands = itemCommands[int64]{
		add: func(ctx context.Context, rdb redis.Cmdable, key string, index int64) error {
			return rdb.SetBit(ctx, key, index, 1).Err()
		},
		count: func(ctx context.Context, rdb redis.Cmdable, key string) *redis.IntCmd {
			return rdb.BitCount(ctx, key, nil)
		},
		adding: "set bit %[1]d of %[2]s", counting: "count bits of %s",
	}
)

// openStepped builds a step-based counter (what names it in errors): its
// options, its stepped core, the rest of its fields (init) and the
// background purge of its old step keys.
func openStepped[C any, P interface {
	*C
	core() *stepped
}](ctx context.Context, rdb redis.Cmdable, key, what string, opts []Option, init func(P, options)) (P, error) {
	o, err := buildOptions(opts)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", what, key, err)
	}
	c := P(new(C))
	*c.core() = newStepped(rdb, key, o)
	init(c, o)
	c.core().launchPurge(ctx, o)
	return c, nil
}

// itemCounter is a step-based counter fed items of type I: one Redis command
// adds an item to the current key, another counts what the key holds.
type itemCounter[I any] struct {
	stepped
	cmds itemCommands[I]
}

// itemCommands are an itemCounter's two commands and the formats of their
// errors (adding gets the item and the key, counting the key).
type itemCommands[I any] struct {
	add              func(ctx context.Context, rdb redis.Cmdable, key string, item I) error
	count            func(ctx context.Context, rdb redis.Cmdable, key string) *redis.IntCmd
	adding, counting string
}

// Increment counts item in the current step.
func (c *itemCounter[I]) Increment(ctx context.Context, item I) error {
	key := c.Key()
	if err := c.cmds.add(ctx, c.rdb, key, item); err != nil {
		return fmt.Errorf(c.cmds.adding+": %[3]w", item, key, err)
	}
	return nil
}

// Value returns the count of the current step.
func (c *itemCounter[I]) Value(ctx context.Context) (int64, error) {
	key := c.Key()
	n, err := c.cmds.count(ctx, c.rdb, key).Result()
	if err != nil {
		return 0, fmt.Errorf(c.cmds.counting+": %w", key, err)
	}
	return n, nil
}
