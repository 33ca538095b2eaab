package rediskeys

// The re-crawl schedule's keys (Go; the original has none). Every one
// starts with "recrawl:" and ends in a suffix of its own (":schedule",
// ":due"), never ":queue" or ":blacklist", as the ledger's keys do, so no
// pattern the original's components scan matches them.

// RecrawlKey is one crawl's schedule, a hash (see scutils/recrawl):
// "recrawl:<spiderid>:<appid>:<crawlid>:schedule".
func RecrawlKey(spiderID, appID, crawlID string) string {
	return "recrawl:" + spiderID + ":" + appID + ":" + crawlID + ":schedule"
}

// RecrawlDueKey is the sorted set of schedules with a run to come
// (members: the crawls' ledger index entries, ["<spiderid>","<appid>",
// "<crawlid>"]; score: when the next run is due, epoch seconds). Redis
// Monitors start the runs due.
const RecrawlDueKey = "recrawl:due"

// LedgerRunsKey keeps the ledgers of a scheduled crawl's past runs, a hash
// of run number to that run's ledger: "ledger:<spiderid>:<appid>:<crawlid>:runs".
func LedgerRunsKey(spiderID, appID, crawlID string) string {
	return "ledger:" + spiderID + ":" + appID + ":" + crawlID + ":runs"
}

// In Redis Cluster mode the schedules, the due set and the set of runs
// being started share the hash tag {ledger} with the crawls' completion
// markers (Layout.Completed), so that claiming run n (it is due, run n-1's
// crawl-complete is out, no other monitor claimed it) and holding the
// crawl's completion while the run starts are one atomic step in one
// slot. Schedules are few (one per scheduled crawl, looked at every
// RECRAWL_INTERVAL), so one slot holds them all.

// Recrawl is a crawl's schedule hash in l: RecrawlKey in Single,
// "cluster:{ledger}:recrawl:<spiderid>:<appid>:<crawlid>:schedule" in
// Cluster.
func (l Layout) Recrawl(spiderID, appID, crawlID string) string {
	if l.cluster {
		return "cluster:{ledger}:" + RecrawlKey(spiderID, appID, crawlID)
	}
	return RecrawlKey(spiderID, appID, crawlID)
}

// RecrawlDue is the sorted set of schedules with a run to come in l:
// RecrawlDueKey in Single, "cluster:{ledger}:recrawl-due" in Cluster.
func (l Layout) RecrawlDue() string {
	if l.cluster {
		return "cluster:{ledger}:recrawl-due"
	}
	return RecrawlDueKey
}

// RecrawlStarting is, in Cluster, the sorted set of the scheduled crawls
// whose run was claimed but has not yet started in every domain (members:
// the crawls' ledger index entries; score: when claimed):
// "cluster:{ledger}:recrawl-starting". A Redis Monitor finishes every
// start it finds there.
func (l Layout) RecrawlStarting() string { return "cluster:{ledger}:recrawl-starting" }

// LedgerRuns is, in Cluster, the hash of past runs' ledger shares of a
// scheduled crawl in domain (field: the run number; value: the share as
// the one-Redis LedgerRunsKey keeps a ledger; field "reset": the last run
// started in the domain): "cluster:{<domain>}:ledger-runs:<spiderid>:<appid>:<crawlid>".
// A past run's ledger is the sum of its entries over the crawl's domains.
// In Single, LedgerRunsKey (one per crawl).
func (l Layout) LedgerRuns(spiderID, appID, crawlID, domain string) string {
	if l.cluster {
		return clusterKey(domain, "ledger-runs", spiderID, appID, crawlID)
	}
	return LedgerRunsKey(spiderID, appID, crawlID)
}

// LedgerRunsPattern is the SCAN MATCH pattern, in Cluster, of a crawl's
// LedgerRuns hashes in every domain, to be scanned on every master.
func (l Layout) LedgerRunsPattern(spiderID, appID, crawlID string) string {
	return "cluster:{*}:ledger-runs:" + GlobEscape(spiderID+":"+appID+":"+crawlID)
}
