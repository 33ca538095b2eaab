package recrawl

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisscripts"
)

// Info is a crawl's schedule as the info answer shows it (its "recrawl").
type Info struct {
	Every int `json:"every"`
	Runs  int `json:"runs"`
	// RunsStarted counts the runs started, the one in progress included.
	RunsStarted int `json:"runs_started"`
	// NextRunAt is when the next run is due, epoch seconds as server_time;
	// nil when no run will follow.
	NextRunAt *int64 `json:"next_run_at"`
	Emit      string `json:"emit"`
	Adaptive  bool   `json:"adaptive"`
	// State is "active", or "ended" once a stop, an expire or a cancel
	// ended it (EndedBy "stop", "expire" or "cancel").
	State   string `json:"state"`
	EndedBy string `json:"ended_by,omitempty"`
}

// Read returns c's schedule, nil when it has none (or it expired).
func Read(ctx context.Context, rdb redis.Cmdable, c ledger.Crawl) (*Info, error) {
	h, err := rdb.HGetAll(ctx, ScheduleIn(layoutOf(rdb), c).Hash).Result()
	if err != nil {
		return nil, fmt.Errorf("read the schedule of crawl %s: %w", c.CrawlID, err)
	}
	if len(h) == 0 {
		return nil, nil
	}
	in := &Info{Emit: h["emit"], Adaptive: h["adaptive"] == "1", State: h["state"], EndedBy: h["ended_by"]}
	in.Every, _ = strconv.Atoi(h["every"])
	in.Runs, _ = strconv.Atoi(h["runs"])
	in.RunsStarted, _ = strconv.Atoi(h["runs_started"])
	if v, ok := h["next_run_at"]; ok {
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			at := int64(f)
			in.NextRunAt = &at
		}
	}
	return in, nil
}

// EndedKeep is how long a schedule ended by a stop, an expire or a cancel is kept
// for info answers.
const EndedKeep = 24 * time.Hour

// Cancel adds to pipe the end of c's schedule by a stop or an expire (by:
// "stop" or "expire"): no run starts after it; the ended schedule is kept
// ttl for info answers (recrawl_cancel.lua, sent whole).
func Cancel(ctx context.Context, pipe redis.Pipeliner, c ledger.Crawl, by string, ttl time.Duration) *redis.Cmd {
	return CancelIn(ctx, pipe, rediskeys.Single, c, by, ttl)
}

// CancelIn is Cancel in the key layout l (on a Redis Cluster the schedule
// and the due set are in one slot, the tag {ledger}'s).
func CancelIn(ctx context.Context, pipe redis.Pipeliner, l rediskeys.Layout, c ledger.Crawl, by string, ttl time.Duration) *redis.Cmd {
	return redisscripts.Eval(ctx, pipe, redisscripts.RecrawlCancel{Schedule: ScheduleIn(l, c), Member: c.Member(), By: by, TTL: ttl})
}

// EndedByCancel is the ended_by of a schedule cancelled alone
// (CancelSchedule): its run in progress went on to its end.
const EndedByCancel = "cancel"

// CancelSchedule ends c's schedule alone, for an operator (REST's POST
// /recrawl/cancel): no later run starts, while the run in progress goes on
// to its end and its crawl-complete; the ended schedule is kept EndedKeep
// for info answers. ended is false when c had no live schedule.
func CancelSchedule(ctx context.Context, rdb redis.Cmdable, c ledger.Crawl) (ended bool, err error) {
	pipe := rdb.Pipeline()
	cmd := CancelIn(ctx, pipe, layoutOf(rdb), c, EndedByCancel, EndedKeep)
	if _, err := pipe.Exec(ctx); err != nil {
		return false, fmt.Errorf("cancel the schedule of crawl %s: %w", c.CrawlID, err)
	}
	n, err := cmd.Int()
	if err != nil {
		return false, fmt.Errorf("cancel the schedule of crawl %s: %w", c.CrawlID, err)
	}
	return n == 1, nil
}
