package stats

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// stepKeyFormat is the date stamp of a step key, the original's
// '%Y-%m-%d_%H:%M:%S' of the step's start in UTC. It sorts as time does.
const stepKeyFormat = "2006-01-02_15:04:05"

// steps maps a time to the step it falls in and to that step's key.
type steps struct {
	key    string // base key
	window int64  // seconds
	origin int64  // start of the first step, Unix seconds
	roll   bool
}

func newSteps(key string, o options) steps {
	s := steps{key: key, window: int64(o.window), roll: o.roll}
	if o.hasStart {
		s.origin = o.start.Unix()
	} else {
		s.origin = floorDiv(o.clock().Unix(), s.window) * s.window
	}
	return s
}

// start returns the Unix second the step containing now begins. Without
// rolling there is only the first step. The step is computed from the clock
// on every call, so a counter is on the right key even before its upkeep
// has noticed that a window passed.
func (s steps) start(now time.Time) int64 {
	if !s.roll {
		return s.origin
	}
	return s.origin + floorDiv(now.Unix()-s.origin, s.window)*s.window
}

// keyAt is the key of the step beginning at start.
func (s steps) keyAt(start int64) string {
	if !s.roll {
		return s.key
	}
	return s.key + ":" + time.Unix(start, 0).UTC().Format(stepKeyFormat)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// isStepKey reports whether key is one of base's date-stamped step keys.
func isStepKey(base, key string) bool {
	stamp, ok := strings.CutPrefix(key, base+":")
	if !ok || len(stamp) != len(stepKeyFormat) {
		return false
	}
	_, err := time.Parse(stepKeyFormat, stamp)
	return err == nil
}

// purger deletes the step keys beyond keepMax, newest kept. It scans only
// when the step has changed since its last successful run, as only then can
// a new key have appeared.
type purger struct {
	rdb     redis.Cmdable
	steps   steps
	keepMax int

	mu       sync.Mutex
	done     bool
	doneStep int64
}

func (p *purger) purge(ctx context.Context, now time.Time) error {
	start := p.steps.start(now)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done && p.doneStep == start {
		return nil
	}
	var keys []string
	iter := p.rdb.Scan(ctx, 0, rediskeys.GlobEscape(p.steps.key)+":*", 1000).Iterator()
	for iter.Next(ctx) {
		if k := iter.Val(); isStepKey(p.steps.key, k) {
			keys = append(keys, k)
		}
	}
	if err := iter.Err(); err != nil {
		return fmt.Errorf("scan step keys of %s: %w", p.steps.key, err)
	}
	slices.Sort(keys)
	keys = slices.Compact(keys) // SCAN may return a key twice
	slices.Reverse(keys)
	// The current key takes one of the keepMax places whether or not it
	// exists yet (this runs once per step), and keys of later steps are
	// never deleted: now may be stale by the time SCAN runs, and another
	// writer's clock may be ahead.
	current := p.steps.keyAt(start)
	var old []string
	kept := 1
	for _, k := range keys {
		if k >= current {
			continue
		}
		if kept < p.keepMax {
			kept++
			continue
		}
		old = append(old, k)
	}
	if len(old) > 0 {
		// One DEL per key: a multi-key DEL fails across Redis Cluster slots.
		pipe := p.rdb.Pipeline()
		for _, k := range old {
			pipe.Del(ctx, k)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return fmt.Errorf("delete %d old step keys of %s: %w", len(old), p.steps.key, err)
		}
	}
	p.done, p.doneStep = true, start
	return nil
}

// stepped is what the step-based counters share: the key for the current
// step, deleting it, and the upkeep that purges old step keys.
type stepped struct {
	upkeep
	rdb    redis.Cmdable
	steps  steps
	clock  func() time.Time
	purger *purger // nil when nothing is purged
}

func newStepped(rdb redis.Cmdable, key string, o options) stepped {
	s := stepped{rdb: rdb, steps: newSteps(key, o), clock: o.clock}
	if s.steps.roll && o.keepMax > 0 {
		s.purger = &purger{rdb: rdb, steps: s.steps, keepMax: o.keepMax}
	}
	return s
}

// Key returns the Redis key the counter writes now: the base key, or with
// rolling the base key stamped with the current step's start,
// e.g. "counter:2016-01-31_19:00:00".
func (s *stepped) Key() string {
	return s.steps.keyAt(s.steps.start(s.clock()))
}

// DeleteKey deletes the counter's current key (Key) from Redis.
func (s *stepped) DeleteKey(ctx context.Context) error {
	key := s.Key()
	if err := s.rdb.Del(ctx, key).Err(); err != nil {
		return fmt.Errorf("delete stats key %s: %w", key, err)
	}
	return nil
}

// Maintain runs one round of the upkeep now: with rolling and a KeepMax, it
// deletes the oldest step keys beyond KeepMax. The background goroutine calls
// it every cycle.
func (s *stepped) Maintain(ctx context.Context) error {
	if s.purger == nil {
		return nil
	}
	return s.purger.purge(ctx, s.clock())
}

// core gives openStepped the stepped core of any counter embedding it.
func (s *stepped) core() *stepped { return s }

// launchPurge starts the background purge when there is something to purge.
func (s *stepped) launchPurge(ctx context.Context, o options) {
	if s.purger != nil {
		s.launch(ctx, o.cycle, s.Maintain, o.onError)
	}
}
