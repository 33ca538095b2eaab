package scheduler

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/lifecycle"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisscripts"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/throttle"
)

// finish ends an item's time in flight, and frees the slots it holds.
func (s *Scheduler) finish(it *Item) {
	s.mu.Lock()
	delete(s.inflight, it.leaseID)
	fetching, processing := s.endFetch(it), it.processing
	it.processing = false
	s.mu.Unlock()
	if fetching {
		<-s.slots
	}
	if processing {
		<-s.processing
	}
	s.signal()
}

// Done acknowledges a finished item (its result is in Kafka, or it was
// dropped for good) with what became of it, counted in its crawl's ledger
// in the same step (tally: usually Published, Dropped or RefusedPopped,
// and Fetched; nil counts nothing). Concurrent calls share round trips.
// The item's slots go to the next items at once (its processing slot, or
// its request slot and its domain's when it was dropped before its fetch
// ended): the acknowledgement waits for its batch (ackLinger) holding
// nothing but the lease. When it fails the item stays in flight: call
// Done again, or Release returns it.
func (s *Scheduler) Done(ctx context.Context, it *Item, tally *ledger.Tally) error {
	_, err := s.Finish(ctx, it, tally, nil, nil)
	return err
}

// Finish is Done for a crawled page with its follow-up requests (see
// Enqueue for what is checked and counted, refused included): they are
// queued in the same step as the item's lease ends, so a page is followed
// once however often it is crawled (a crawler that dies before this step
// leaves the request to be crawled, and followed, again). Follow-ups of an
// item whose lease was reaped meanwhile are not queued: the crawl of its
// request again will queue them.
func (s *Scheduler) Finish(ctx context.Context, it *Item, tally *ledger.Tally, reqs []*crawlrequest.Request, refused map[ledger.Reason]int) (Enqueued, error) {
	out, err := s.acks.ack(context.WithoutCancel(ctx), s.ackOf(it, tally, reqs, refused))
	if err == nil {
		s.finish(it)
	}
	return out, err
}

// Retry queues retry (usually it.Request.Retry()) in place of the item, in
// one step, with tally (usually Retried and Fetched) counted in the same
// step. When the item's lease was reaped meanwhile (the item is queued
// again already), retry is not queued.
func (s *Scheduler) Retry(ctx context.Context, it *Item, retry *crawlrequest.Request, tally *ledger.Tally) error {
	member, err := retry.Encode()
	if err != nil {
		return err
	}
	s.finishing(it)
	queue := s.cfg.Layout.QueueFor(retry.SpiderID, it.Domain, retry.Rendered())
	now := s.now()
	held, err := it.leases.RequeueWith(context.WithoutCancel(ctx), func(pipe redis.Pipeliner) {
		tally.WriteIn(ctx, pipe, s.cfg.Layout, it.Domain, now, s.cfg.ledgerTTL())
	}, it.leaseID, queue, string(member), retry.Score())
	if err != nil {
		return err // still in flight: retry the call, or Release returns it
	}
	if !held {
		s.leasesLost([]string{it.leaseID})
	}
	s.finish(it)
	return nil
}

// Reroute puts the item's request back, unchanged and uncounted, in the
// queue it belongs to (rediskeys.Layout.QueueFor): a render request found in a
// domain queue (queued by a component that does not know rendering) goes
// to its render queue, for a rendering crawler.
func (s *Scheduler) Reroute(ctx context.Context, it *Item) error {
	return s.Retry(ctx, it, it.Request, &ledger.Tally{})
}

// endSlots gives the slots the item holds, its request slot and its
// domain's (an item dropped before its fetch ended) or its processing
// slot, to the next items.
func (s *Scheduler) endSlots(it *Item) {
	s.mu.Lock()
	fetching, processing := s.endFetch(it), it.processing
	it.processing = false
	s.mu.Unlock()
	if fetching {
		<-s.slots
	}
	if processing {
		<-s.processing
	}
	if fetching || processing {
		s.signal()
	}
}

// finishing marks an item whose lease is about to end, so that the renewal
// running meanwhile does not take it for a lease that expired.
func (s *Scheduler) finishing(it *Item) {
	s.mu.Lock()
	it.ending = true
	s.mu.Unlock()
}

// leasesLost reports leases that were reaped before their item was done:
// the items were queued again and may be crawled twice.
func (s *Scheduler) leasesLost(ids []string) {
	s.mu.Lock()
	s.stats.Lost += int64(len(ids))
	s.mu.Unlock()
	if len(ids) > 0 {
		s.log.Warning("Leases expired before their requests were done; the requests went back to their queues and may be crawled twice",
			logfactory.Extra{"expired": len(ids), "lease_ttl": s.cfg.LeaseTTL.String()})
	}
}

// Release returns every request still in flight to its queue (shutdown)
// and reports how many.
func (s *Scheduler) Release(ctx context.Context) (int, error) {
	s.mu.Lock()
	bySet := map[*throttle.Leases][]string{}
	for id, it := range s.inflight {
		bySet[it.leases] = append(bySet[it.leases], id)
	}
	s.mu.Unlock()
	total := 0
	var errs []error
	for leases, ids := range bySet {
		n, err := leases.Release(ctx, ids...)
		total += n
		if err != nil {
			errs = append(errs, err)
		}
	}
	return total, errors.Join(errs...)
}

// Lease upkeep. A lease expires when LEASE_TIMEOUT passes between two of
// its renewals as Redis runs them, so what counts is how late a renewal
// reaches Redis, not how often it is sent:
//   - renewals go through a client of their own (upkeepClient): in the
//     shared pool they waited for a connection behind the pops, enqueues and
//     acknowledgements of CONCURRENT_REQUESTS requests, under load for longer
//     than the lease itself;
//   - a renewal starts every LEASE_TIMEOUT/renewsPerTTL whether or not the
//     one before has answered, so a slow answer (Redis busy with another
//     client's script, this process short of CPU) delays the next renewal by
//     nothing: a lease survives any Redis delay shorter than LEASE_TIMEOUT
//     minus that interval.
const (
	renewsPerTTL = 8
	// maxRenewals bounds the renewals waiting for Redis at once (and the
	// upkeep client's connections): when that many are waiting, Redis
	// itself is behind, and another one queued behind them renews nothing
	// sooner.
	maxRenewals = 2
)

// renewLoop keeps this crawler's leases alive through upkeep until ctx
// ends.
func (s *Scheduler) renewLoop(ctx context.Context, upkeep redis.UniversalClient) {
	var renewals sync.WaitGroup
	defer renewals.Wait()
	waiting := make(chan struct{}, maxRenewals)
	t := time.NewTicker(s.cfg.LeaseTTL / renewsPerTTL)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		select {
		case waiting <- struct{}{}:
			renewals.Go(func() {
				defer func() { <-waiting }()
				s.renew(ctx, upkeep)
			})
		default: // maxRenewals are waiting for Redis already
		}
	}
}

// upkeepClient returns a Redis client for lease renewals alone, configured
// as the scheduler's own, with maxRenewals connections, open and ready
// unless Redis did not answer within upkeepWarmUp. A connection's
// handshake takes a few round trips, each as slow as Redis is busy: the
// first renewals, had they opened their connections, came too late.
//
// On a Redis Cluster the upkeep client is a cluster client of the same
// seeds with maxRenewals connections to each master (clusterUpkeep).
func (s *Scheduler) upkeepClient(ctx context.Context) redis.UniversalClient {
	if c, ok := s.rdb.(*redis.ClusterClient); ok {
		return s.clusterUpkeep(ctx, c)
	}
	opt := *s.rdb.(*redis.Client).Options()
	opt.PoolSize, opt.MaxActiveConns, opt.MinIdleConns, opt.MaxIdleConns = maxRenewals, maxRenewals, 0, maxRenewals
	// Not s.rdb's maintenance notification config: go-redis changes it
	// while a connection opens (a data race with NewClient's copy of it),
	// and in its default mode while each of upkeep's connections opens at
	// once. Renewals need none (a renewal that fails is retried on a new
	// connection); s.rdb's push notification processor stays its own.
	opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	opt.PushNotificationProcessor = nil
	upkeep := redis.NewClient(&opt)
	wctx, cancel := context.WithTimeout(ctx, upkeepWarmUp)
	defer cancel()
	conns := make([]*redis.Conn, maxRenewals)
	var wg sync.WaitGroup
	for i := range conns {
		conns[i] = upkeep.Conn() // each holds its own connection until closed
		wg.Go(func() { _ = conns[i].Ping(wctx).Err() })
	}
	wg.Wait()
	err := redisscripts.Load(wctx, conns[0], redisscripts.LeaseOwner{})
	for _, c := range conns {
		_ = c.Close() // back to upkeep's pool, open
	}
	if err != nil && ctx.Err() == nil {
		s.log.Warning("Could not prepare the lease renewals' connections yet; renewals will open them", logfactory.Extra{"error": err.Error()})
	}
	return upkeep
}

// upkeepWarmUp bounds the time upkeepClient waits for Redis.
const upkeepWarmUp = 5 * time.Second

// renew renews the leases of every request in flight once, through upkeep:
// one write per lease set, the deadline of this crawler's lease owner
// (with one Redis one set; on a Redis Cluster one per domain, renewLeases).
// On a Redis Cluster the sets' writes go in one pipeline: one round trip
// to each master, the masters at once, rather than one per domain, one
// after the other (each a wake-up of its master, whatever it carries).
func (s *Scheduler) renew(ctx context.Context, upkeep redis.UniversalClient) {
	sets := s.leasesToRenew()
	if s.leases != nil {
		for _, leases := range sets {
			s.renewSet(ctx, upkeep, leases)
		}
		return
	}
	runs := make([]redisscripts.LeaseOwner, 0, len(sets))
	of := make([]*throttle.Leases, 0, len(sets))
	for _, leases := range sets {
		if run, ok := leases.Renewal(); ok { // else nothing leased under its owner yet
			runs, of = append(runs, run), append(of, leases)
		}
	}
	if len(runs) == 0 {
		return
	}
	began := time.Now()
	cmds := redisscripts.RunPipelined(ctx, upkeep, runs)
	took := time.Since(began)
	var failed []error
	for i, cmd := range cmds {
		n, err := cmd.Int()
		if err != nil {
			failed = append(failed, err)
			continue
		}
		s.renewed(of[i], runs[i].Owner, of[i].Renewed(runs[i], n), took)
	}
	if len(failed) > 0 && ctx.Err() == nil {
		s.log.Warning("Failed to renew leases", logfactory.Extra{"error": failed[0].Error(), "lease_sets": len(failed)})
	}
}

// renewSet renews one lease set's owner.
func (s *Scheduler) renewSet(ctx context.Context, upkeep redis.Scripter, leases *throttle.Leases) {
	owner := leases.Owner()
	began := time.Now()
	held, err := leases.RenewOn(ctx, upkeep)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warning("Failed to renew leases", logfactory.Extra{"error": err.Error()})
		}
		return
	}
	s.renewed(leases, owner, held, time.Since(began))
}

// renewed takes the renewal of owner, leases' owner, which took took: held
// is false when the owner had been reaped, its leases lost.
func (s *Scheduler) renewed(leases *throttle.Leases, owner string, held bool, took time.Duration) {
	if took > s.cfg.LeaseTTL/2 {
		s.slowRenewal(took)
	}
	if held {
		return
	}
	// Rare: Redis unreachable, or this process stalled, for longer than
	// LEASE_TIMEOUT: the owner was reaped with all its leases. Done counts
	// them as lost; the pops from now on lease under a new owner. Those
	// acknowledged meanwhile are not counted here.
	s.mu.Lock()
	expired := 0
	for id, it := range s.inflight {
		if it.leases == leases && strings.HasPrefix(id, owner+":") && !it.ending && !it.lapsed {
			it.lapsed = true
			expired++
		}
	}
	s.mu.Unlock()
	if expired > 0 {
		s.log.Warning("Some leases expired and went back to their queues; their pages may be crawled twice",
			logfactory.Extra{"expired": expired})
	}
}

// slowRenewal warns, at most once a minute, that a renewal took more than
// half the lease: a little slower and leases expire.
func (s *Scheduler) slowRenewal(took time.Duration) {
	s.mu.Lock()
	now := s.now()
	warn := now.Sub(s.slowWarned) >= time.Minute
	if warn {
		s.slowWarned = now
	}
	s.mu.Unlock()
	if warn {
		s.log.Warning("Renewing leases took more than half of LEASE_TIMEOUT: Redis is overloaded or this crawler is short of CPU; raise LEASE_TIMEOUT if this persists",
			logfactory.Extra{"took": took.String(), "lease_ttl": s.cfg.LeaseTTL.String()})
	}
}

// reapLoop returns expired leases (of crawlers that died) to their queues.
func (s *Scheduler) reapLoop(ctx context.Context) {
	for lifecycle.Sleep(ctx, s.cfg.ReapInterval) {
		total := 0
		for {
			n, err := s.reap(ctx, 500)
			if err != nil {
				if ctx.Err() == nil {
					s.log.Warning("Failed to reap expired leases", logfactory.Extra{"error": err.Error()})
				}
				break
			}
			total += n
			if n < 500 {
				break
			}
		}
		if total > 0 {
			s.mu.Lock()
			s.stats.Reaped += int64(total)
			s.mu.Unlock()
			s.log.Info("Returned requests of a stopped crawler to their queues", logfactory.Extra{"requests": total})
			s.wakeAll()
			s.scan(ctx)
		}
	}
}
