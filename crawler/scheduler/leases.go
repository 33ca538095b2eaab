package scheduler

import (
	"context"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/lifecycle"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// finish ends an item's time in flight.
func (s *Scheduler) finish(it *Item) {
	s.mu.Lock()
	if _, ok := s.inflight[it.leaseID]; ok {
		delete(s.inflight, it.leaseID)
		it.dom.inflight--
		if it.dom.next.Equal(never) && !it.dom.blocked {
			s.setNext(it.dom, s.now())
		}
	}
	s.mu.Unlock()
	<-s.slots
	s.signal()
}

// Done acknowledges a finished item (its result is in Kafka, or it was
// dropped for good). Concurrent calls share round trips. When it fails the
// item stays in flight: call Done again, or Release returns it.
func (s *Scheduler) Done(ctx context.Context, it *Item) error {
	err := s.acks.ack(context.WithoutCancel(ctx), it.leaseID)
	if err == nil {
		s.finish(it)
	}
	return err
}

// Retry queues retry (usually it.Request.Retry()) in place of the item, in
// one step.
func (s *Scheduler) Retry(ctx context.Context, it *Item, retry *crawlrequest.Request) error {
	member, err := retry.Encode()
	if err != nil {
		return err
	}
	queue := rediskeys.QueueKey(retry.SpiderID, it.Domain)
	if err := s.leases.Requeue(context.WithoutCancel(ctx), it.leaseID, queue, string(member), retry.Score()); err != nil {
		return err // still in flight: retry the call, or Release returns it
	}
	s.finish(it)
	return nil
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
		n, err := s.leases.Renew(ctx, ids...)
		switch {
		case err != nil && ctx.Err() == nil:
			s.log.Warning("Failed to renew leases", logfactory.Extra{"error": err.Error(), "leases": len(ids)})
		case err == nil && n < len(ids):
			// Rare: a lease expired (Redis unreachable too long) and was reaped.
			s.log.Warning("Some leases expired and went back to their queues; their pages may be crawled twice",
				logfactory.Extra{"expired": len(ids) - n})
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
