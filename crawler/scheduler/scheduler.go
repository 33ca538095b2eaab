// Package scheduler is the crawler's distributed scheduler (the original's
// DistributedScheduler): it finds its spider type's domain queues
// (<spiderid>:<domain>:queue) in Redis, pops requests from them under each
// domain's cluster-wide throttle, and queues the requests spiders find.
//
// Beyond the original:
//   - New domains are found at once: the Kafka Monitor and crawlers announce
//     a queue on <spiderid>:queue-announce when they create it, and the
//     scheduler subscribes; it also rescans every SCHEDULER_QUEUE_REFRESH.
//   - A denied domain never costs a spin: the throttle says how long the
//     denial lasts, and the scheduler tries the domain again only then,
//     serving the other domains meanwhile; empty domains are retried with a
//     growing back-off (and at once when announced).
//   - Crash safety: a popped request is leased to this crawler atomically
//     with the pop (throttle.Leases at leases:<spiderid>:items, the
//     crawler's deadline at leases:<spiderid>:owners) and renewed while
//     in flight. Done acknowledges it once its result is in Kafka; Retry
//     swaps it for its retry; Release returns it on shutdown. Every crawler
//     reaps expired leases back to their queues, so a crawler killed with
//     SIGKILL loses nothing: its requests are crawled again within
//     LEASE_TIMEOUT + LEASE_REAP_INTERVAL.
//   - The duplicate filter, the crawl blacklist and the page limits are
//     applied to a page's follow-up requests in one atomic Redis step, the
//     one that ends the page's lease (Finish).
//
// The files, by concern:
//
//	scheduler.go     Scheduler, New, Run (the background loops), Clear, counters
//	domains.go       the known domain queues: found by scans and announcements,
//	                 kept in a heap by the time each is due, forgotten when idle
//	pop.go           Next: the throttled, leased pop from the domain due first,
//	                 popping ahead, with every other domain due then in the
//	                 same round trip; Fetched: a fetched item's slots go to the
//	                 next requests; Processed: its processing slot too
//	leases.go        Done, Finish, Retry, Release; lease renewal and reaping
//	ack.go           acknowledgements grouped into shared round trips
//	enqueue.go       Enqueue; a page's follow-up requests checked and encoded
//	finish.go        the finish script's runs (redisscripts.Finish): leases
//	                 ended and follow-ups queued through the blacklist, the
//	                 duplicate filter and the page limits, counted in the
//	                 ledgers
//	domainconfig.go  SetDomainConfig, Throttle: the blacklist and per-domain
//	                 throttles applied to each domain
//	ip.go            the public IP in the throttle keys
//	settings.go      the settings and Config
package scheduler

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/domainconfig"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisconn"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/throttle"
)

// Item is a popped request, leased to this crawler until Done, Retry or Release.
type Item struct {
	Request *crawlrequest.Request
	// Domain and Queue are where it was popped from.
	Domain, Queue string
	leaseID       string
	dom           *domain
	leases        *throttle.Leases // the lease set holding leaseID
	crawl         ledger.Crawl
	ending        bool // Done or Retry under way (guarded by Scheduler.mu)
	lapsed        bool // a renewal found its lease expired (guarded by Scheduler.mu)
	acked         bool // an acknowledgement was sent (guarded by Scheduler.mu)
	// fetching: the item holds a request slot (from the hand-out by Next
	// until Fetched has a processing slot for it); downloading: its
	// domain's slot (from the hand-out until Fetched is called);
	// processing: a processing slot (from Fetched to Processed, once its
	// results are handed to the producer, or to Done, Finish or Retry
	// when it ends before). Guarded by Scheduler.mu.
	fetching, downloading, processing bool
}

// LeaseID identifies the item's lease (for logs).
func (it *Item) LeaseID() string { return it.leaseID }

// Crawl is the crawl whose ledger counts the item.
func (it *Item) Crawl() ledger.Crawl { return it.crawl }

// Scheduler serves one spider type. Next must be called from one goroutine;
// the other methods are safe for concurrent use.
type Scheduler struct {
	cfg    Config
	rdb    redis.UniversalClient
	log    *logfactory.Logger
	leases *throttle.Leases // one Redis: the spider's one lease set; nil on a Redis Cluster
	acks   *ackBatcher
	now    func() time.Time

	mu       sync.Mutex
	domains  map[string]*domain // by queue key
	ready    domainHeap
	config   domainconfig.Document
	ip       string
	inflight map[string]*Item // leased to this crawler, by lease id
	// leaseSets are, on a Redis Cluster, the lease sets of the domains
	// this crawler pops from, by domain (cluster.go).
	leaseSets map[string]*leaseSet
	ahead     int // of them, popped ahead and not handed out yet (in their domains' ahead)
	wake      chan struct{}
	// slots are the requests being fetched (CONCURRENT_REQUESTS), from
	// Next to Fetched; processing the fetched ones being parsed and
	// encoded, as many again, from Fetched to Processed (or their end).
	slots, processing chan struct{}
	stats             Stats
	// slowWarned is when a slow lease renewal was last logged.
	slowWarned time.Time
}

// Stats are the scheduler's counters since start. Lost counts this
// crawler's leases found reaped when their requests were done (they went
// back to their queues and may be crawled twice).
type Stats struct {
	Popped, Denied, Empty, Undecodable, Reaped, Lost int64
}

// New returns a scheduler. Run must be running for discovery, lease upkeep
// and IP refresh.
func New(rdb redis.UniversalClient, cfg Config, log *logfactory.Logger) (*Scheduler, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := cfg.validateMode(rdb); err != nil {
		return nil, err
	}
	s := &Scheduler{
		cfg: cfg, rdb: rdb, log: log, now: time.Now,
		domains: map[string]*domain{}, inflight: map[string]*Item{}, leaseSets: map[string]*leaseSet{}, ip: "127.0.0.1",
		wake: make(chan struct{}, 1), slots: make(chan struct{}, cfg.Concurrency), processing: make(chan struct{}, cfg.Concurrency),
	}
	if !cfg.Layout.IsCluster() {
		leases, err := throttle.NewLeases(rdb, rediskeys.LeaseKey(cfg.SpiderID), cfg.LeaseTTL)
		if err != nil {
			return nil, err
		}
		s.leases = leases
	}
	s.acks = &ackBatcher{rdb: rdb, cfg: cfg, now: time.Now, linger: ackLinger, lost: s.leasesLost, enqueued: s.enqueued}
	return s, nil
}

// Leases returns the scheduler's leases (for tests and tools): with one
// Redis the spider's one lease set; on a Redis Cluster nil, each domain
// having its own (LeasesOf).
func (s *Scheduler) Leases() *throttle.Leases { return s.leases }

// Wait is the Waiter of the scheduler's writes (Config.Wait), for its
// metric; nil when they do not wait for replicas.
func (s *Scheduler) Wait() *redisconn.Waiter { return s.cfg.Wait }

// Stats returns the counters.
func (s *Scheduler) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Domains returns the number of domain queues in memory.
func (s *Scheduler) Domains() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.domains)
}

// InFlight returns the number of requests leased to this crawler.
func (s *Scheduler) InFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.inflight)
}

// signal wakes a waiting Next. It never blocks, so it may be called with
// s.mu held.
func (s *Scheduler) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Run does the background work until ctx ends: discovery (a scan every
// SCHEDULER_QUEUE_REFRESH and the announce channel), lease renewal and
// reaping, and the public IP refresh. Call it before Next.
func (s *Scheduler) Run(ctx context.Context) {
	if s.cfg.ByIP {
		s.refreshIP(ctx)
	}
	// Subscribe before the first scan, so a queue created in between is
	// not missed until the next scan.
	sub := s.rdb.Subscribe(ctx, rediskeys.QueueChannel(s.cfg.SpiderID))
	defer sub.Close()
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	if _, err := sub.Receive(rctx); err != nil && ctx.Err() == nil {
		s.log.Warning("Could not subscribe to queue announcements yet; relying on scans", logfactory.Extra{"error": err.Error()})
	}
	cancel()
	// Ready before the scan finds anything to lease.
	upkeep := s.upkeepClient(ctx)
	defer upkeep.Close()
	s.scan(ctx)
	var wg sync.WaitGroup
	announce := func(ctx context.Context) { s.announceLoop(ctx, sub) }
	renew := func(ctx context.Context) { s.renewLoop(ctx, upkeep) }
	for _, loop := range []func(context.Context){announce, s.scanLoop, renew, s.reapLoop, s.ipLoop} {
		wg.Add(1)
		go func() { defer wg.Done(); loop(ctx) }()
	}
	wg.Wait()
}

// Clear removes the spider's queues, leases and filters (SCHEDULER_PERSIST false).
func (s *Scheduler) Clear(ctx context.Context) error {
	if s.cfg.Layout.IsCluster() {
		return s.clearCluster(ctx)
	}
	var errs []error
	patterns := append([]string{rediskeys.QueuePattern(s.cfg.SpiderID), rediskeys.RenderQueuePattern(s.cfg.SpiderID),
		rediskeys.GlobEscape(s.cfg.SpiderID) + ":dupefilter:*",
		rediskeys.GlobEscape(s.cfg.SpiderID) + ":domain_max_page_filter:*", rediskeys.GlobEscape(s.cfg.SpiderID) + ":global_page_count_filter:*"},
		rediskeys.BloomFilterPatterns(s.cfg.SpiderID)...)
	for _, pattern := range patterns {
		iter := s.rdb.Scan(ctx, 0, pattern, 1000).Iterator()
		for iter.Next(ctx) {
			if err := s.rdb.Del(ctx, iter.Val()).Err(); err != nil {
				errs = append(errs, err)
			}
		}
		if err := iter.Err(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
