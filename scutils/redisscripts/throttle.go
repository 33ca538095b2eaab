package redisscripts

import "github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"

// Pop is throttle_pop.lua's keys and arguments: one throttled pop of up
// to Max items from Queue, leased under LeaseID when it is not "". A pop
// of the Redis Cluster layout's keys is the script's lean pop (the same
// decisions with fewer commands; rediskeys.IsClusterKey).
type Pop struct {
	// Queue is popped with Command: ZPOPMIN, RPOP or LPOP.
	Queue, Command string
	// Window is the rolling window of hits (a sorted set), Moderation the
	// time of the last moderated pop.
	Window, Moderation string
	// WindowSeconds and ModerationSeconds (0: not moderated) are decimal
	// seconds; Expiry is the window's and moderation key's expiry in whole
	// seconds. As text: a throttle formats them once.
	WindowSeconds, ModerationSeconds, Expiry string
	// Limit is the pops allowed per window.
	Limit int
	// Elastic lets this pop break moderation to catch up while the window
	// holds more than ElasticBuffer fewer hits than Limit.
	Elastic       bool
	ElasticBuffer int
	// HitID is the hit's unique member in the window.
	HitID string
	// LeaseID, when not "", leases the popped items to Owner (the lease
	// id's first part) in the leases' Owners and Records.
	LeaseID, Owner  string
	Owners, Records string
	// Max is the most items to pop (priority queues, unmoderated
	// throttles only).
	Max int
}

// Script is throttle_pop.lua.
func (Pop) Script() *Script { return throttlePop }

func (a Pop) encode() ([]string, []any) {
	keys := []string{a.Queue, a.Window, a.Moderation, a.Owners, a.Records}
	leased := "1"
	if a.LeaseID == "" {
		// Unused, but Redis Cluster needs every key declared.
		keys[3], keys[4], leased = a.Queue, a.Queue, "0"
	}
	elastic := "0"
	if a.Elastic {
		elastic = "1"
	}
	lean := "0"
	if rediskeys.IsClusterKey(a.Window) { // ours alone: the original's keys get the original's pop
		lean = "1"
	}
	return keys, []any{a.WindowSeconds, a.Limit, a.ModerationSeconds, elastic, a.ElasticBuffer, a.Command,
		a.HitID, leased, a.LeaseID, max(a.Max, 1), a.Owner, a.Expiry, lean}
}
