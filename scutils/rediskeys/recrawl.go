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
