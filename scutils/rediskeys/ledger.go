package rediskeys

// The crawl ledger's keys (Go; the original has none). Every one starts with
// "ledger:" and none ends in ":queue" or ":blacklist", so no pattern the
// original's components scan (*:*:queue, info:*, stop:*, stats:*, ...)
// matches them, whatever the spider, app and crawl ids hold.

// LedgerKey is one crawl's ledger, a hash of counters:
// "ledger:<spiderid>:<appid>:<crawlid>:counts".
func LedgerKey(spiderID, appID, crawlID string) string {
	return "ledger:" + spiderID + ":" + appID + ":" + crawlID + ":counts"
}

// LedgerActiveKey is the sorted set of crawls that may still have work
// (members: the crawls' index entries, score: their last new work in epoch
// seconds); Redis Monitors look there for finished crawls.
const LedgerActiveKey = "ledger:active"

// LedgerCrawlsKey is the sorted set of every crawl with a ledger (members:
// index entries, score: the crawl's start in epoch seconds), newest last.
const LedgerCrawlsKey = "ledger:crawls"

// LedgerAppCrawlsKey is LedgerCrawlsKey for one app's crawls:
// "ledger:app:<appid>:crawls".
func LedgerAppCrawlsKey(appID string) string { return "ledger:app:" + appID + ":crawls" }
