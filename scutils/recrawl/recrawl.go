// Package recrawl keeps crawls fresh: a crawl request with a `recrawl`
// object is a standing job of the cluster, crawled again and again on a
// schedule (issue 25).
//
// The Kafka Monitor makes the schedule when it queues the crawl's first
// seed (Feed): run 1 starts then, as any crawl does. The schedule lives in
// Redis (keys under "recrawl:", see rediskeys): a hash per crawl holding
// every, runs, emit, adaptive, expires, runs_started, run_started_at,
// next_run_at, state ("active" or "ended"), ended_by, and the crawl's seeds
// ("seed:<url>": the seed's queue, a newline and its queue member), and
// the sorted set recrawl:due of the schedules with a run to come, by due
// time. The Redis Monitors start the runs (Starter): each looks every
// RECRAWL_INTERVAL for runs due and starts each with one script that
// checks, in the same atomic step, that the run is due, that no monitor
// started it already (runs_started is n-1) and that run n-1 completed
// (its crawl-complete is out), so each run starts exactly once however
// many monitors run, and never while the one before it goes on. A run
// keeps the previous run's ledger in ledger:<spiderid>:<appid>:<crawlid>:runs,
// starts the crawl's ledger afresh, drops the crawl's duplicate filter (a
// fresh generation: every page is reachable again) and queues the seeds
// with "run": n. Follow-ups carry run and recrawl on (they are extra
// fields of the crawl request, which the crawlers copy to every follow-up
// and the original's crawlers ignore), so every result says its run.
//
// A stop or an expire ends the schedule (Cancel) with the run in
// progress; a schedule whose expires passes ends when its next run is due.
package recrawl

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisscripts"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// The crawl request's fields: FieldRecrawl as fed (the schedule), FieldRun
// added by the cluster to every request of a scheduled crawl and to its
// results.
const (
	FieldRecrawl = "recrawl"
	FieldRun     = "run"
)

// The values of emit.
const (
	EmitAll     = "all"
	EmitChanged = "changed"
)

// Settings of the Redis Monitor's starts of runs.
var (
	Interval = settings.Seconds("RECRAWL_INTERVAL", 0.5,
		"seconds between a Redis Monitor's looks for re-crawl runs due (`recrawl`)").Ours().Positive()
	RunsKept = settings.Int("RECRAWL_RUNS_KEPT", 100,
		"past runs of a scheduled crawl whose ledger is kept (`runs` in GET /crawls/<crawlid>)").Ours().AtLeast(1)
)

// Settings are the re-crawl settings, for the Redis Monitor's settings.Group.
func Settings() settings.Group { return settings.Declare(Interval, RunsKept) }

// Spec is a crawl request's recrawl object.
type Spec struct {
	// Every is the seconds between the starts of two runs (at least 1).
	Every int `json:"every"`
	// Runs is how many runs in all, the first included; 0: no end.
	Runs int `json:"runs"`
	// Emit is EmitAll or EmitChanged.
	Emit string `json:"emit"`
	// Adaptive re-checks pages that did not change less often.
	Adaptive bool `json:"adaptive"`
}

// FromFed reads the recrawl object of a fed request (as wirejson.Decode
// reads it, checked by the crawl schema); ok is false when it has none.
func FromFed(req map[string]any) (s Spec, ok bool, err error) {
	v, has := req[FieldRecrawl]
	if !has || v == nil {
		return Spec{}, false, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return Spec{}, false, fmt.Errorf("recrawl: %w", err)
	}
	if s, err = parse(b); err != nil {
		return Spec{}, false, err
	}
	return s, true, nil
}

// parse reads a recrawl object, its defaults filled in.
func parse(raw []byte) (Spec, error) {
	s := Spec{Emit: EmitAll}
	if err := json.Unmarshal(raw, &s); err != nil {
		return Spec{}, fmt.Errorf("recrawl: %w", err)
	}
	switch {
	case s.Every < 1:
		return Spec{}, fmt.Errorf("recrawl: every must be at least 1 second, got %d", s.Every)
	case s.Runs < 0:
		return Spec{}, fmt.Errorf("recrawl: runs must not be negative, got %d", s.Runs)
	case s.Emit != EmitAll && s.Emit != EmitChanged:
		return Spec{}, fmt.Errorf("recrawl: emit must be %q or %q, got %q", EmitAll, EmitChanged, s.Emit)
	}
	return s, nil
}

// Of reads the schedule and run a queued request carries; ok is false for
// a request of a crawl without a schedule (or a bad one).
func Of(r *crawlrequest.Request) (s Spec, run int, ok bool) {
	raw, has := r.Extra(FieldRecrawl)
	if !has {
		return Spec{}, 0, false
	}
	s, err := parse(raw)
	if err != nil {
		return Spec{}, 0, false
	}
	if v, has := r.Extra(FieldRun); has {
		run, _ = strconv.Atoi(string(v))
	}
	return s, max(run, 1), true
}

// ScheduleOf is c's schedule as the scripts name it, with one Redis.
func ScheduleOf(c ledger.Crawl) redisscripts.Schedule { return ScheduleIn(rediskeys.Single, c) }

// ScheduleIn is c's schedule in the key layout l (in Cluster, under the
// tag {ledger}: rediskeys.Layout.Recrawl).
func ScheduleIn(l rediskeys.Layout, c ledger.Crawl) redisscripts.Schedule {
	return redisscripts.Schedule{Hash: l.Recrawl(c.SpiderID, c.AppID, c.CrawlID), Due: l.RecrawlDue()}
}

// layoutOf is the key layout of a client: Cluster for a Redis Cluster
// client (REDIS_CLUSTER_NODES), else Single.
func layoutOf(rdb redis.Cmdable) rediskeys.Layout {
	if _, ok := rdb.(*redis.ClusterClient); ok {
		return rediskeys.Cluster
	}
	return rediskeys.Single
}
