package stats

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// History is the crawlers' responses per step over a span of time, from
// their response-code counters (stats:crawler:<host>:<spiderid>:<code>:<window>),
// summed over every host, spider and code.
type History struct {
	// Start is the beginning of the first step; the last ends at the
	// Reader's Now.
	Start time.Time
	// Step is the length of each step.
	Step time.Duration
	// Counts are the responses counted in each step, oldest first.
	Counts []int64
	// Covered is how far back the counters reach: the span, or less when
	// no crawler keeps a window that long (STATS_TIMES); the steps before
	// Now-Covered read 0. It is 0 when no counter was found.
	Covered time.Duration
}

// Total is the sum of Counts.
func (h *History) Total() int64 {
	var n int64
	for _, c := range h.Counts {
		n += c
	}
	return n
}

// CrawlerHistory reads how many responses the crawlers counted in each step
// of the span ending at Now (span/step steps, rounded up). A window
// counter holds one hit per response scored by its time, so each step is a
// ZCOUNT of its time range; of the windows a host keeps for a spider and
// code, the shortest one at least as long as span is read (else the
// longest). Every count is read in one pipelined round trip after the
// SCAN of the crawler keys.
func (r Reader) CrawlerHistory(ctx context.Context, span, step time.Duration) (*History, error) {
	if span <= 0 || step <= 0 {
		return nil, fmt.Errorf("crawler history: span %s and step %s must be positive", span, step)
	}
	steps := int((span + step - 1) / step)
	h := &History{Start: r.Now.Add(-time.Duration(steps) * step), Step: step, Counts: make([]int64, steps)}
	keys := windowKeys{want: int64(span / time.Second), best: map[string]int64{}}
	for _, p := range r.crawlerPatterns(crawlerPattern) {
		if err := r.scan(ctx, p, &keys); err != nil {
			return nil, err
		}
	}
	if len(keys.best) == 0 && len(keys.hashes) == 0 {
		return h, nil
	}
	pipe := r.Redis.Pipeline()
	hashes := make([]*redis.MapStringStringCmd, len(keys.hashes))
	for i, k := range keys.hashes {
		hashes[i] = pipe.HGetAll(ctx, k)
	}
	cmds := make([]*redis.IntCmd, 0, len(keys.best)*steps)
	var covered int64
	for base, window := range keys.best {
		covered = max(covered, min(window, keys.want))
		key := base + ":" + strconv.FormatInt(window, 10)
		for i := range steps {
			from := h.Start.Add(time.Duration(i) * step)
			cmds = append(cmds, pipe.ZCount(ctx, key, score(from), "("+score(from.Add(step))))
		}
	}
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		// A key of another type fails alone; anything else fails the read.
		if !redis.HasErrorPrefix(err, "WRONGTYPE") {
			return nil, fmt.Errorf("read the crawlers' response counters: %w", err)
		}
	}
	for i, cmd := range cmds {
		if n, err := cmd.Result(); err == nil {
			h.Counts[i%steps] += n
		}
	}
	for _, cmd := range hashes {
		if fields, err := cmd.Result(); err == nil {
			covered = max(covered, h.addBuckets(fields, keys.want, r.Now))
		}
	}
	h.Covered = time.Duration(covered) * time.Second
	return h, nil
}

// addBuckets counts a BucketSet's hash (a crawler's response counts on a
// cluster) in h's steps: of its windows the one windowKeys would pick,
// each bucket still in that window in the step its start falls in (a
// bucket that starts before h.Start is left out). It returns how far back that window reaches, at
// most want seconds.
func (h *History) addBuckets(fields map[string]string, want int64, now time.Time) int64 {
	var window int64
	for f := range fields {
		if w, _, ok := parseBucketField(f); ok && betterWindow(window, int64(w), want) {
			window = int64(w)
		}
	}
	if window == 0 {
		return 0
	}
	size := BucketSeconds(int(window))
	stepSeconds := h.Step.Seconds()
	for f, v := range fields {
		w, b, ok := parseBucketField(f)
		n, err := strconv.ParseInt(v, 10, 64)
		if !ok || int64(w) != window || err != nil || n <= 0 || b < oldestCounted(w, now.Unix()) {
			continue
		}
		start := time.Unix(b*size, 0)
		if start.Before(h.Start) || !start.Before(now) {
			continue
		}
		if i := int(start.Sub(h.Start).Seconds() / stepSeconds); i < len(h.Counts) {
			h.Counts[i] += n
		}
	}
	return min(window, want)
}

func score(t time.Time) string { return strconv.FormatFloat(float64(t.UnixNano())/1e9, 'f', -1, 64) }

// windowKeys picks, for every crawler response-code counter
// (stats:crawler:<host>:<spiderid>:<code>), the window to read: the
// shortest at least want seconds long, else the longest. It keeps the keys
// of the crawlers' BucketSets (on a cluster) aside, each read whole.
type windowKeys struct {
	want   int64
	best   map[string]int64 // counter base key -> window
	hashes []string         // BucketSet keys
}

func (w *windowKeys) take(parts []string) bool {
	if len(parts) != 6 {
		return false
	}
	if parts[5] == everyWindow {
		w.hashes = append(w.hashes, rediskeys.Cluster.CrawlerResponses(parts[2], parts[3], parts[4]))
		return false
	}
	window, err := strconv.ParseInt(parts[5], 10, 64)
	if err != nil || window <= 0 {
		return false // lifetime
	}
	base := strings.Join(parts[:5], ":")
	if betterWindow(w.best[base], window, w.want) {
		w.best[base] = window
	}
	return false
}

// betterWindow reports whether window is a better one to read than old (0:
// none yet) for a span of want seconds: the shortest at least want
// seconds long, else the longest.
func betterWindow(old, window, want int64) bool {
	switch {
	case old == 0:
		return true
	case old < want && window > old:
		return true // longer, still too short or now enough
	case window >= want && window < old:
		return true // long enough and shorter
	}
	return false
}

func (w *windowKeys) add([]string, int64) {}
