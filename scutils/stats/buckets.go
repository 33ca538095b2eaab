package stats

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// BucketsPerWindow is how many time buckets a BucketSet counts a window in:
// a window of W seconds in buckets of BucketSeconds(W), W/180 rounded up (5
// seconds for 15 minutes, 20 for an hour, 8 minutes for a day, 56 for a
// week).
const BucketsPerWindow = 180

// BucketSeconds is the length in seconds of the buckets a window of window
// seconds is counted in.
func BucketSeconds(window int) int64 {
	return max(1, (int64(window)+BucketsPerWindow-1)/BucketsPerWindow)
}

// lifetimeField is the BucketSet field that counts every event.
const lifetimeField = "lifetime"

// BucketSet counts one kind of event over several sliding windows and over
// its lifetime, as WindowSet does, in one hash at key whose memory does not
// grow with the events: a field per window and time bucket,
// "<window>:<bucket>" (the bucket's start in Unix seconds over
// BucketSeconds(window)), holding the events of that bucket, and a field
// "lifetime" holding every event. Counting n events is a few HINCRBYs
// whatever n is, where a WindowSet adds n members to every window's sorted
// set. A window's count is the sum of its buckets that end after the
// window's start, so it may hold events up to one bucket older than the
// window (a 180th of it); the lifetime count is exact (WindowSet's is a
// HyperLogLog's estimate).
//
// The crawlers count their responses in BucketSets on a Redis Cluster
// (rediskeys.Layout.CrawlerResponses), where no Python component reads
// them; Reader reads both kinds. Every write refreshes the key's expiry
// to the longest window and one of its buckets, so a host that no longer
// counts is forgotten after that. The upkeep (every cycle) deletes the
// buckets that have left their window.
type BucketSet struct {
	upkeep
	rdb     redis.Cmdable
	key     string
	windows []int
	clock   func() time.Time
	ttl     time.Duration // 0: no expiry (no window)

	mu   sync.Mutex
	kept map[int]int64 // by window, the oldest bucket the last trim kept; empty until the first trim
}

// NewBucketSet returns a BucketSet on rdb at key with the given windows in
// seconds (duplicates are ignored) and starts its upkeep every cycle
// (WithCycleTime, default 5s) until ctx is done or Stop/Close is called. Of
// the options only WithCycleTime, WithClock and WithErrorHandler apply.
func NewBucketSet(ctx context.Context, rdb redis.Cmdable, key string, windows []int, opts ...Option) (*BucketSet, error) {
	o, err := buildOptions(opts)
	if err != nil {
		return nil, fmt.Errorf("bucket set %s: %w", key, err)
	}
	s := &BucketSet{rdb: rdb, key: key, clock: o.clock, kept: map[int]int64{}}
	var longest int
	for _, w := range windows {
		if w <= 0 {
			return nil, fmt.Errorf("bucket set %s: window %d: must be at least one second", key, w)
		}
		if slices.Contains(s.windows, w) {
			continue
		}
		s.windows = append(s.windows, w)
		longest = max(longest, w)
	}
	if longest > 0 {
		s.ttl = time.Duration(int64(longest)+BucketSeconds(longest)) * time.Second
	}
	if len(s.windows) > 0 {
		s.launch(ctx, o.cycle, s.Maintain, o.onError)
	}
	return s, nil
}

// bucketField is the field of window's bucket b.
func bucketField(window int, b int64) string {
	return strconv.Itoa(window) + ":" + strconv.FormatInt(b, 10)
}

// parseBucketField splits a bucket field into its window and bucket.
func parseBucketField(f string) (window int, b int64, ok bool) {
	ws, bs, found := strings.Cut(f, ":")
	if !found {
		return 0, 0, false
	}
	w, err := strconv.Atoi(ws)
	if err != nil || w <= 0 {
		return 0, 0, false
	}
	b, err = strconv.ParseInt(bs, 10, 64)
	if err != nil {
		return 0, 0, false
	}
	return w, b, true
}

// oldestCounted is the oldest bucket of window that still counts at now
// (Unix seconds): the one holding now-window, which ends after it.
func oldestCounted(window int, now int64) int64 {
	return floorDiv(now-int64(window), BucketSeconds(window))
}

// AddTo queues n events on pipe: a HINCRBY of each window's current bucket
// and of the lifetime count, and the key's expiry. pipe.Exec sends them.
func (s *BucketSet) AddTo(ctx context.Context, pipe redis.Pipeliner, n int) {
	if n <= 0 {
		return
	}
	now := s.clock().Unix()
	for _, w := range s.windows {
		pipe.HIncrBy(ctx, s.key, bucketField(w, floorDiv(now, BucketSeconds(w))), int64(n))
	}
	pipe.HIncrBy(ctx, s.key, lifetimeField, int64(n))
	if s.ttl > 0 {
		pipe.Expire(ctx, s.key, s.ttl)
	}
}

// Increment counts one event now: one round trip.
func (s *BucketSet) Increment(ctx context.Context) error {
	pipe := s.rdb.Pipeline()
	s.AddTo(ctx, pipe, 1)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("count an event in %s: %w", s.key, err)
	}
	return nil
}

// CountBuckets is what a BucketSet's hash (its fields and values, as
// HGETALL returns them) counts at now: each window's events, by its length
// in seconds ("900", ...), and "lifetime". Windows without an event in them
// are left out; fields of another form are ignored.
func CountBuckets(fields map[string]string, now time.Time) Counts {
	out := Counts{}
	unix := now.Unix()
	for f, v := range fields {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			continue
		}
		if f == lifetimeField {
			out[lifetimeField] += n
			continue
		}
		w, b, ok := parseBucketField(f)
		if ok && b >= oldestCounted(w, unix) {
			out[strconv.Itoa(w)] += n
		}
	}
	return out
}

// Value returns the events within the last window seconds (to within one
// bucket); window must be one of the set's windows.
func (s *BucketSet) Value(ctx context.Context, window int) (int64, error) {
	if !slices.Contains(s.windows, window) {
		return 0, fmt.Errorf("count events in %s: no %d second window (have %v)", s.key, window, s.windows)
	}
	fields, err := s.rdb.HGetAll(ctx, s.key).Result()
	if err != nil {
		return 0, fmt.Errorf("count events in %s: %w", s.key, err)
	}
	return CountBuckets(fields, s.clock())[strconv.Itoa(window)], nil
}

// LifetimeValue returns every event ever counted in the set's hash.
func (s *BucketSet) LifetimeValue(ctx context.Context) (int64, error) {
	n, err := s.rdb.HGet(ctx, s.key, lifetimeField).Int64()
	if err == redis.Nil {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("count lifetime events in %s: %w", s.key, err)
	}
	return n, nil
}

// Windows returns the set's window lengths in seconds.
func (s *BucketSet) Windows() []int { return slices.Clone(s.windows) }

// Keys returns the one Redis key the set writes.
func (s *BucketSet) Keys() []string { return []string{s.key} }

// DeleteKeys deletes the set's key from Redis.
func (s *BucketSet) DeleteKeys(ctx context.Context) error {
	if err := s.rdb.Del(ctx, s.key).Err(); err != nil {
		return fmt.Errorf("delete stats key %s: %w", s.key, err)
	}
	return nil
}

// maxTrimFields bounds the buckets one trim deletes by name; a longer gap
// since the last trim (the first trim, a stalled process, a clock jump) is
// swept instead: every field read and those out of their window deleted.
const maxTrimFields = 2 * BucketsPerWindow

// Maintain runs one round of the upkeep now: it deletes the buckets that
// have left their window, in one round trip (two for a sweep: the first
// trim, or after a long gap). The background goroutine calls it every
// cycle.
func (s *BucketSet) Maintain(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock().Unix()
	oldest := make(map[int]int64, len(s.windows))
	var stale []string
	sweep := len(s.kept) == 0
	for _, w := range s.windows {
		oldest[w] = oldestCounted(w, now)
		from, ok := s.kept[w]
		switch {
		case !ok || oldest[w]-from > maxTrimFields:
			sweep = true
		case !sweep:
			for b := from; b < oldest[w]; b++ {
				stale = append(stale, bucketField(w, b))
			}
		}
	}
	if sweep {
		fields, err := s.rdb.HKeys(ctx, s.key).Result()
		if err != nil {
			return fmt.Errorf("read the buckets of %s: %w", s.key, err)
		}
		stale = stale[:0]
		for _, f := range fields {
			if w, b, ok := parseBucketField(f); ok && b < oldestCounted(w, now) {
				stale = append(stale, f)
			}
		}
	}
	if len(stale) > 0 {
		if err := s.rdb.HDel(ctx, s.key, stale...).Err(); err != nil {
			return fmt.Errorf("delete old buckets of %s: %w", s.key, err)
		}
	}
	s.kept = oldest
	return nil
}
