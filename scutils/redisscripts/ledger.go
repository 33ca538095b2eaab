package redisscripts

import "time"

// Ledger names a crawl's ledger as the scripts write it: the keys
// lib/ledger_new_work.lua writes, in its order, and the crawl's index
// member (ledger.Crawl.Ledger makes one).
type Ledger struct {
	// Hash is the crawl's counts, ledger:<spiderid>:<appid>:<crawlid>:counts.
	Hash string
	// Active, Crawls and AppCrawls are the index sorted sets ledger:active,
	// ledger:crawls and ledger:app:<appid>:crawls.
	Active, Crawls, AppCrawls string
	// Member is the crawl's entry in them, ["<spiderid>","<appid>","<crawlid>"].
	Member string
}

func (l Ledger) newWorkKeys() []string { return []string{l.Hash, l.Active, l.Crawls, l.AppCrawls} }

// SeedRequest is a seed request to queue: Member at Score in Queue,
// counted in Ledger.
type SeedRequest struct {
	Queue  string
	Score  float64
	Member string
	Ledger Ledger
}

// Seed is ledger_seed.lua's keys and arguments: one seed, queued and
// counted unless its queue held it already.
type Seed struct {
	Request SeedRequest
	// Stamp is now, ledger.Stamp; TTL the ledger's (LEDGER_TTL).
	Stamp string
	TTL   time.Duration
}

// Script is ledger_seed.lua.
func (Seed) Script() *Script { return ledgerSeed }

func (a Seed) encode() ([]string, []any) {
	r := a.Request
	return append([]string{r.Queue}, r.Ledger.newWorkKeys()...), []any{r.Score, r.Member, r.Ledger.Member, a.Stamp, ttlSeconds(a.TTL)}
}

// Seeds is ledger_seeds.lua's keys and arguments: many seeds, each queued
// and counted unless its queue held it already, the queue writes grouped
// in runs of one queue and one crawl, in the order of Requests (the order
// in which seeds of one priority come out of their queue).
type Seeds struct {
	Requests []SeedRequest
	// Stamp is now, ledger.Stamp; TTL the ledgers' (LEDGER_TTL).
	Stamp string
	TTL   time.Duration
}

// Script is ledger_seeds.lua.
func (Seeds) Script() *Script { return ledgerSeeds }

func (a Seeds) encode() ([]string, []any) {
	type group struct {
		queue, crawl int
		seeds        []*SeedRequest
	}
	queues := map[string]int{}
	crawls := map[Ledger]int{}
	var queueKeys []string
	var ledgers []Ledger
	var order []*group
	for i := range a.Requests {
		s := &a.Requests[i]
		q, ok := queues[s.Queue]
		if !ok {
			q = len(queueKeys) + 1
			queues[s.Queue] = q
			queueKeys = append(queueKeys, s.Queue)
		}
		c, ok := crawls[s.Ledger]
		if !ok {
			c = len(ledgers) + 1
			crawls[s.Ledger] = c
			ledgers = append(ledgers, s.Ledger)
		}
		if len(order) == 0 || order[len(order)-1].queue != q || order[len(order)-1].crawl != c {
			order = append(order, &group{queue: q, crawl: c})
		}
		g := order[len(order)-1]
		g.seeds = append(g.seeds, s)
	}
	keys := make([]string, 0, len(queueKeys)+4*len(ledgers))
	keys = append(keys, queueKeys...)
	args := make([]any, 0, 4+len(ledgers)+3*len(order)+2*len(a.Requests))
	args = append(args, a.Stamp, ttlSeconds(a.TTL), len(queueKeys), len(ledgers))
	for _, l := range ledgers {
		keys = append(keys, l.newWorkKeys()...)
		args = append(args, l.Member)
	}
	for _, g := range order {
		args = append(args, g.queue, g.crawl, len(g.seeds))
		for _, s := range g.seeds {
			args = append(args, s.Score, s.Member)
		}
	}
	return keys, args
}

// Purge is ledger_purge.lua's keys and arguments: members of one crawl
// removed from Queue and counted in Field ("purged:stop" or
// "purged:expire") where the crawl has a ledger. At most a thousand
// members (Lua's unpack takes a few thousand values at most).
type Purge struct {
	Queue   string
	Ledger  Ledger
	Field   string
	Stamp   string // now, ledger.Stamp
	Members []string
}

// Script is ledger_purge.lua.
func (Purge) Script() *Script { return ledgerPurge }

func (a Purge) encode() ([]string, []any) {
	args := make([]any, 0, len(a.Members)+2)
	args = append(args, a.Field, a.Stamp)
	for _, m := range a.Members {
		args = append(args, m)
	}
	return []string{a.Queue, a.Ledger.Hash}, args
}

// End is ledger_end.lua's keys and arguments: By ("stop" or "expire")
// ended the crawl, and Holder holds completers off it until Until.
type End struct {
	Ledger Ledger
	By     string
	// Holder names the one ending it; Now and Until are epoch seconds
	// (ledger.Stamp).
	Holder, Now, Until string
	// Unheld records By alone, no hold: a crawl's share on a Redis
	// Cluster, whose completion marker holds the completers off
	// (ledger.EndCluster).
	Unheld bool
}

// Script is ledger_end.lua.
func (End) Script() *Script { return ledgerEnd }

func (a End) encode() ([]string, []any) {
	hold := a.Holder + "|" + a.Until
	if a.Unheld {
		hold = ""
	}
	return []string{a.Ledger.Hash}, []any{a.By, a.Now, hold, a.Holder}
}

// Release is ledger_release.lua's keys and arguments: Holder's hold of End
// ends.
type Release struct {
	Ledger Ledger
	Holder string
}

// Script is ledger_release.lua.
func (Release) Script() *Script { return ledgerRelease }

func (a Release) encode() ([]string, []any) { return []string{a.Ledger.Hash}, []any{a.Holder} }

// Claim is ledger_claim.lua's keys and arguments: a Redis Monitor claims a
// finished crawl at Now (epoch seconds) with Claim ("<owner>|<deadline>"),
// when its last new work came no later than QuietSince (epoch seconds) or
// a stop or an expire ended it.
type Claim struct {
	Ledger                 Ledger
	Now, Claim, QuietSince string
}

// Script is ledger_claim.lua.
func (Claim) Script() *Script { return ledgerClaim }

func (a Claim) encode() ([]string, []any) {
	return []string{a.Ledger.Hash, a.Ledger.Active}, []any{a.Ledger.Member, a.Now, a.Claim, a.QuietSince}
}

// Complete is ledger_complete.lua's keys and arguments: the crawl claimed
// with Claim is completed at Stamp, its ledger kept TTL (LEDGER_TTL).
type Complete struct {
	Ledger       Ledger
	Claim, Stamp string
	TTL          time.Duration
}

// Script is ledger_complete.lua.
func (Complete) Script() *Script { return ledgerComplete }

func (a Complete) encode() ([]string, []any) {
	return []string{a.Ledger.Hash, a.Ledger.Active}, []any{a.Ledger.Member, a.Claim, a.Stamp, ttlSeconds(a.TTL)}
}

// Mark is ledger_mark.lua's keys and arguments: a crawl's completion
// claimed (Done false) or marked done (Done true) in Redis Cluster mode,
// once across every shard.
type Mark struct {
	// Marker is the crawl's completion marker (rediskeys.Layout.Completed).
	Marker string
	Done   bool
	// Claim is "<owner>|<deadline>"; Now epoch seconds (ledger.Stamp).
	Claim, Now string
	// TTL is the marker's (LEDGER_TTL).
	TTL time.Duration
}

// Script is ledger_mark.lua.
func (Mark) Script() *Script { return ledgerMark }

// Deactivate is ledger_deactivate.lua's keys and arguments: a completed
// run's crawl out of one domain's active set in Redis Cluster mode, its
// share marked completed, unless the share is of a later run by now.
type Deactivate struct {
	// Share is the crawl's ledger share of the domain, Active the domain's
	// active set, Member the crawl's index member.
	Share, Active, Member string
	// Run is the run completed (0: a crawl without a schedule).
	Run int64
	// Completed is the completed stamp (ledger.Stamp); "" marks nothing.
	Completed string
	// TTL is the share's (LEDGER_TTL).
	TTL time.Duration
}

// Script is ledger_deactivate.lua.
func (Deactivate) Script() *Script { return ledgerDeactivate }

func (a Deactivate) encode() ([]string, []any) {
	return []string{a.Share, a.Active}, []any{a.Member, a.Run, a.Completed, ttlSeconds(a.TTL)}
}

func (a Mark) encode() ([]string, []any) {
	op := "claim"
	if a.Done {
		op = "done"
	}
	return []string{a.Marker}, []any{op, a.Claim, a.Now, ttlSeconds(a.TTL)}
}
