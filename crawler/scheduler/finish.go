package scheduler

import (
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisscripts"
)

// newFinish is a run of the finish script (redisscripts.Finish, finish.lua)
// at now with nothing in it yet: acknowledgements (ackBatcher) and pages
// (Enqueue) are added to it. One run ends leases and queues follow-up
// requests through the blacklist, the duplicate filter and the page
// limits, counted in the crawls' ledgers, in one atomic step.
//
// owners and records are the keys of the lease set whose leases the run
// ends (throttle.Leases.Keys): on a Redis Cluster in the slot of every
// other key of the run.
func newFinish(cfg Config, owners, records string, now time.Time) *redisscripts.Finish {
	f := &redisscripts.Finish{LeaseOwners: owners, LeaseRecords: records, Stamp: ledger.Stamp(now),
		LedgerTTL: cfg.ledgerTTL(), DupeFilterTTL: cfg.DupeTimeout, DomainMaxPageTTL: cfg.DomainMaxPageTimeout,
		GlobalPageTTL: cfg.GlobalPageTimeout, GlobalPageLimit: cfg.GlobalPageLimit}
	if cfg.DupeMode == DupeBloom {
		f.BloomRate, f.BloomCapacity = cfg.BloomRate, cfg.bloomCapacity()
	}
	return f
}
