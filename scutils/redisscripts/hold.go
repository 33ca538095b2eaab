package redisscripts

import "time"

var ledgerHold = mustScript("ledger_hold")

// Hold is ledger_hold.lua's keys and arguments: in Redis Cluster mode,
// Holder holds completers off a crawl a stop or an expire ends (Release
// false) until Until, on the crawl's completion marker, or ends its hold
// (Release true).
type Hold struct {
	// Marker is the crawl's completion marker (rediskeys.Layout.Completed).
	Marker  string
	Release bool
	// Holder names the one ending the crawl; Now and Until are epoch
	// seconds (ledger.Stamp).
	Holder, Now, Until string
	// TTL is how long the hold's marker lives (at least the hold).
	TTL time.Duration
}

// Script is ledger_hold.lua.
func (Hold) Script() *Script { return ledgerHold }

func (a Hold) encode() ([]string, []any) {
	op := "hold"
	if a.Release {
		op = "release"
	}
	return []string{a.Marker}, []any{op, a.Holder, a.Holder + "|" + a.Until, a.Now, ttlSeconds(a.TTL)}
}
