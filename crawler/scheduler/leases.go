package scheduler

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/lifecycle"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
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
// When it fails the item stays in flight: call Done again, or Release
// returns it.
func (s *Scheduler) Done(ctx context.Context, it *Item, tally *ledger.Tally) error {
	s.finishing(it)
	err := s.acks.ack(context.WithoutCancel(ctx), it.leaseID, tally)
	if err == nil {
		s.finish(it)
	}
	return err
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
	queue := rediskeys.QueueKey(retry.SpiderID, it.Domain)
	now := s.now()
	held, err := s.leases.RequeueWith(context.WithoutCancel(ctx), func(pipe redis.Pipeliner) {
		tally.Write(ctx, pipe, now, s.cfg.ledgerTTL())
	}, it.leaseID, queue, string(member), retry.Score())
	if err != nil {
		return err // still in flight: retry the call, or Release returns it
	}
	if !held {
		s.leasesLost([]string{it.leaseID}, nil)
	}
	s.finish(it)
	return nil
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
func (s *Scheduler) leasesLost(ids []string, undoErr error) {
	s.mu.Lock()
	s.stats.Lost += int64(len(ids))
	s.mu.Unlock()
	if len(ids) > 0 {
		s.log.Warning("Leases expired before their requests were done; the requests went back to their queues and may be crawled twice",
			logfactory.Extra{"expired": len(ids), "lease_ttl": s.cfg.LeaseTTL.String()})
	}
	if undoErr != nil {
		s.log.Error("Failed to take back the ledger counts of requests whose leases expired; their crawls count them twice",
			logfactory.Extra{"error": undoErr.Error(), "requests": len(ids)})
	}
}

// Release returns every request still in flight to its queue (shutdown)
// and reports how many.
func (s *Scheduler) Release(ctx context.Context) (int, error) {
	s.mu.Lock()
	ids := make([]string, 0, len(s.inflight))
	for id := range s.inflight {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	return s.leases.Release(ctx, ids...)
}

// renewLoop keeps this crawler's leases alive.
func (s *Scheduler) renewLoop(ctx context.Context) {
	for lifecycle.Sleep(ctx, s.cfg.LeaseTTL/4) {
		s.mu.Lock()
		ids := make([]string, 0, len(s.inflight))
		for id := range s.inflight {
			ids = append(ids, id)
		}
		s.mu.Unlock()
		missing, err := s.leases.Renew(ctx, ids...)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warning("Failed to renew leases", logfactory.Extra{"error": err.Error(), "leases": len(ids)})
			}
			continue
		}
		// A lease acknowledged while the renewal ran is missing too; only
		// one still in flight and not being acknowledged expired.
		s.mu.Lock()
		expired := 0
		for _, id := range missing {
			if it := s.inflight[id]; it != nil && !it.ending {
				expired++
			}
		}
		s.mu.Unlock()
		if expired > 0 {
			// Rare: Redis unreachable, or this process stalled, for longer
			// than LEASE_TIMEOUT; Done counts them as lost.
			s.log.Warning("Some leases expired and went back to their queues; their pages may be crawled twice",
				logfactory.Extra{"expired": expired})
		}
	}
}

// reapLoop returns expired leases (of crawlers that died) to their queues.
func (s *Scheduler) reapLoop(ctx context.Context) {
	for lifecycle.Sleep(ctx, s.cfg.ReapInterval) {
		total := 0
		for {
			n, err := s.leases.Reap(ctx, 500)
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
