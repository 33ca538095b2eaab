package redisscripts

import (
	"strconv"
	"time"
)

// Schedule names a crawl's re-crawl schedule as the scripts write it: its
// hash (recrawl:<spiderid>:<appid>:<crawlid>:schedule) and the set of
// schedules due (recrawl:due), in which the crawl's entry is its ledger's
// index member (Ledger.Member).
type Schedule struct {
	Hash, Due string
}

// RecrawlFeed is recrawl_feed.lua's keys and arguments: a seed of a
// scheduled crawl, queued in run 1 and kept for the runs to come; the
// schedule is made when the crawl has no live one.
type RecrawlFeed struct {
	Schedule Schedule
	Ledger   Ledger
	// Every is the time between two runs' starts (whole seconds); Runs the
	// runs in all (0: no end); Emit "all" or "changed"; Expires the epoch
	// second the schedule ends (0: never).
	Every    time.Duration
	Runs     int
	Emit     string
	Adaptive bool
	Expires  int64
	// SeedField and SeedKept are the seed as the schedule keeps it (its
	// field "seed:<url>", its queue and member); Queue, Score and Member
	// its queue member for run 1.
	SeedField, SeedKept string
	Queue               string
	Score               float64
	Member              string
	// Stamp is now (ledger.Stamp); TTL the ledger's (LEDGER_TTL).
	Stamp string
	TTL   time.Duration
}

// Script is recrawl_feed.lua.
func (RecrawlFeed) Script() *Script { return recrawlFeed }

func (a RecrawlFeed) encode() ([]string, []any) {
	adaptive := 0
	if a.Adaptive {
		adaptive = 1
	}
	keys := append([]string{a.Schedule.Hash, a.Schedule.Due, a.Queue}, a.Ledger.newWorkKeys()...)
	return keys, []any{a.Ledger.Member, a.Stamp, ttlSeconds(a.TTL), ttlSeconds(a.Every), a.Runs, a.Emit, adaptive,
		a.Expires, a.SeedField, a.SeedKept, a.Score, a.Member}
}

// RunSeed is a seed queued by RecrawlStart: Member at Score in Queue.
type RunSeed struct {
	Queue  string
	Score  float64
	Member string
}

// RecrawlStart is recrawl_start.lua's keys and arguments: run N of a
// scheduled crawl starts with Seeds, unless another monitor started it, it
// is not due, or run N-1 has not completed.
type RecrawlStart struct {
	Schedule Schedule
	Ledger   Ledger
	// Runs is the crawl's hash of past runs' ledgers; Kept how many of
	// them it keeps.
	Runs string
	Kept int
	// Drop are the keys a run starts without: the duplicate filter and the
	// seeds' domains' page-limit counters.
	Drop []string
	// Channel announces the seeds' queues to crawlers.
	Channel string
	N       int
	Seeds   []RunSeed
	// Stamp is now (ledger.Stamp); TTL the ledger's (LEDGER_TTL).
	Stamp string
	TTL   time.Duration
}

// Script is recrawl_start.lua.
func (RecrawlStart) Script() *Script { return recrawlStart }

func (a RecrawlStart) encode() ([]string, []any) {
	keys := append([]string{a.Schedule.Hash, a.Schedule.Due}, a.Ledger.newWorkKeys()...)
	keys = append(keys, a.Runs)
	keys, seeds, nq := runSeedArgs(keys, a.Seeds)
	keys = append(keys, a.Drop...)
	args := []any{a.Ledger.Member, a.Stamp, a.N, ttlSeconds(a.TTL), a.Channel, a.Kept, nq}
	return keys, append(args, seeds...)
}

// runSeedArgs appends to keys the queues of seeds, each once, and returns
// the seeds as recrawl_run_seeds reads them (per seed its queue's number,
// 1..nq, its score and member) with nq.
func runSeedArgs(keys []string, seeds []RunSeed) ([]string, []any, int) {
	queues := map[string]int{}
	var args []any
	for _, s := range seeds {
		q, ok := queues[s.Queue]
		if !ok {
			q = len(queues) + 1
			queues[s.Queue] = q
			keys = append(keys, s.Queue)
		}
		args = append(args, q, strconv.FormatFloat(s.Score, 'f', -1, 64), s.Member)
	}
	return keys, args, len(queues)
}

func itoa(n int) string { return strconv.Itoa(n) }

// RecrawlCancel is recrawl_cancel.lua's keys and arguments: the crawl's
// schedule ends, By a stop or an expire, and is kept TTL for info answers.
type RecrawlCancel struct {
	Schedule Schedule
	Member   string
	By       string
	TTL      time.Duration
}

// Script is recrawl_cancel.lua.
func (RecrawlCancel) Script() *Script { return recrawlCancel }

func (a RecrawlCancel) encode() ([]string, []any) {
	return []string{a.Schedule.Hash, a.Schedule.Due}, []any{a.Member, a.By, ttlSeconds(a.TTL)}
}
