package redisscripts

import "time"

var (
	recrawlClusterFeed    = mustScript("recrawl_cluster_feed")
	recrawlClusterSeed    = mustScript("recrawl_cluster_seed")
	recrawlClusterClaim   = mustScript("recrawl_cluster_claim")
	recrawlClusterDomain  = mustScript("recrawl_cluster_domain")
	recrawlClusterStarted = mustScript("recrawl_cluster_started")
)

// RecrawlClusterFeed is recrawl_cluster_feed.lua's keys and arguments (Redis
// Cluster mode): a seed of a scheduled crawl kept in the crawl's schedule,
// made when the crawl has none, in the slot of the crawl's completion
// Marker. The seed is queued by RecrawlClusterSeed when the script answers 1.
type RecrawlClusterFeed struct {
	Schedule Schedule
	Marker   string
	Member   string
	// Every, Runs, Emit, Adaptive and Expires are RecrawlFeed's.
	Every    time.Duration
	Runs     int
	Emit     string
	Adaptive bool
	Expires  int64
	// SeedField and SeedKept are the seed as the schedule keeps it.
	SeedField, SeedKept string
	Stamp               string
	TTL                 time.Duration
}

// Script is recrawl_cluster_feed.lua.
func (RecrawlClusterFeed) Script() *Script { return recrawlClusterFeed }

func (a RecrawlClusterFeed) encode() ([]string, []any) {
	adaptive := 0
	if a.Adaptive {
		adaptive = 1
	}
	return []string{a.Schedule.Hash, a.Schedule.Due, a.Marker}, []any{a.Member, a.Stamp, ttlSeconds(a.TTL),
		ttlSeconds(a.Every), a.Runs, a.Emit, adaptive, a.Expires, a.SeedField, a.SeedKept}
}

// RecrawlClusterSeed is recrawl_cluster_seed.lua's keys and arguments: a
// seed of a scheduled crawl queued in run 1 (Member at Score in Queue) and
// counted in Ledger, the crawl's share of the seed's domain.
type RecrawlClusterSeed struct {
	Queue  string
	Score  float64
	Member string
	Ledger Ledger
	Stamp  string
	TTL    time.Duration
}

// Script is recrawl_cluster_seed.lua.
func (RecrawlClusterSeed) Script() *Script { return recrawlClusterSeed }

func (a RecrawlClusterSeed) encode() ([]string, []any) {
	keys := append([]string{a.Queue}, a.Ledger.newWorkKeys()...)
	return keys, []any{a.Ledger.Member, a.Stamp, ttlSeconds(a.TTL), a.Score, a.Member}
}

// RecrawlClusterClaim is recrawl_cluster_claim.lua's keys and arguments:
// the claim of run N of a scheduled crawl, once, when run N-1's
// completion Marker says done at least Margin ago; the marker then holds
// completers off the crawl with Hold until RecrawlClusterStarted.
type RecrawlClusterClaim struct {
	Schedule Schedule
	Marker   string
	// Starting is the set of runs claimed and not yet started everywhere.
	Starting string
	Member   string
	N        int
	// Hold is the marker's value while the run starts,
	// "recrawl-start-<n>|<deadline>" (RecrawlHoldPrefix).
	Hold   string
	Margin time.Duration
	// Domains are the run's domains, one a line in the schedule.
	Domains []string
	Stamp   string
	TTL     time.Duration
}

// RecrawlHoldPrefix is the start of the completion marker's value while
// run n of a scheduled crawl starts on a Redis Cluster.
func RecrawlHoldPrefix(n int) string { return "recrawl-start-" + itoa(n) + "|" }

// Script is recrawl_cluster_claim.lua.
func (RecrawlClusterClaim) Script() *Script { return recrawlClusterClaim }

func (a RecrawlClusterClaim) encode() ([]string, []any) {
	domains := ""
	for i, d := range a.Domains {
		if i > 0 {
			domains += "\n"
		}
		domains += d
	}
	return []string{a.Schedule.Hash, a.Schedule.Due, a.Marker, a.Starting},
		[]any{a.Member, a.Stamp, a.N, ttlSeconds(a.TTL), a.Hold, a.Margin.Seconds(), domains}
}

// RecrawlClusterDomain is recrawl_cluster_domain.lua's keys and arguments:
// run N of a scheduled crawl starts in one domain (Ledger: the crawl's
// share there; Runs: the domain's runs hash), once.
type RecrawlClusterDomain struct {
	Ledger Ledger
	Runs   string
	Kept   int
	// Drop are the domain's keys a run starts without: the crawl's
	// duplicate filter and page-limit counters of the domain.
	Drop    []string
	Channel string
	N       int
	Seeds   []RunSeed
	Stamp   string
	TTL     time.Duration
}

// Script is recrawl_cluster_domain.lua.
func (RecrawlClusterDomain) Script() *Script { return recrawlClusterDomain }

func (a RecrawlClusterDomain) encode() ([]string, []any) {
	keys := append(a.Ledger.newWorkKeys(), a.Runs)
	keys, seeds, nq := runSeedArgs(keys, a.Seeds)
	keys = append(keys, a.Drop...)
	args := []any{a.Ledger.Member, a.Stamp, a.N, ttlSeconds(a.TTL), a.Channel, a.Kept, nq}
	return keys, append(args, seeds...)
}

// RecrawlClusterStarted is recrawl_cluster_started.lua's keys and
// arguments: run N has started in every domain.
type RecrawlClusterStarted struct {
	Schedule Schedule
	Marker   string
	Starting string
	Member   string
	N        int
	TTL      time.Duration
}

// Script is recrawl_cluster_started.lua.
func (RecrawlClusterStarted) Script() *Script { return recrawlClusterStarted }

func (a RecrawlClusterStarted) encode() ([]string, []any) {
	return []string{a.Schedule.Hash, a.Marker, a.Starting}, []any{a.Member, a.N, RecrawlHoldPrefix(a.N), ttlSeconds(a.TTL)}
}
