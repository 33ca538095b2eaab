package scheduler

import (
	"container/heap"
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/lifecycle"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisconn"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/throttle"
)

// domain is one known domain queue.
type domain struct {
	key, name string
	q         *throttle.Queue[string]
	next      time.Time
	lastPop   time.Time
	backoff   time.Duration
	fetching  int     // items being fetched (CONCURRENT_REQUESTS_PER_DOMAIN)
	ahead     []*Item // popped ahead of the fetches, leased, waiting for Next
	blocked   bool    // blacklisted, or a throttle of 0 hits
	// unsure is the lease of the last pop from the queue when that pop
	// failed: it may have popped and leased items whose answer was lost;
	// the next pop reuses it, and gets them (see throttle_pop.lua).
	unsure *throttle.Lease
	index  int
}

type domainHeap []*domain

func (h domainHeap) Len() int           { return len(h) }
func (h domainHeap) Less(i, j int) bool { return h[i].next.Before(h[j].next) }
func (h domainHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i]; h[i].index = i; h[j].index = j }
func (h *domainHeap) Push(x any)        { d := x.(*domain); d.index = len(*h); *h = append(*h, d) }
func (h *domainHeap) Pop() any {
	old := *h
	d := old[len(old)-1]
	*h = old[:len(old)-1]
	d.index = -1
	return d
}

// never is a time no domain is due at (blocked with nothing popped ahead,
// or at its cap of fetches).
var never = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

func (s *Scheduler) setNext(d *domain, t time.Time) {
	// Items popped before a block are handed out still, as items being
	// fetched are finished.
	if d.blocked && len(d.ahead) == 0 {
		t = never
	}
	d.next = t
	if d.index >= 0 {
		heap.Fix(&s.ready, d.index)
	}
}

func (s *Scheduler) forget(d *domain) {
	if d.fetching > 0 || len(d.ahead) > 0 {
		return
	}
	delete(s.domains, d.key)
	if d.index >= 0 {
		heap.Remove(&s.ready, d.index)
	}
	s.log.Debug("Expired domain queue", logfactory.Extra{"queue": d.key})
}

// addDomain registers a queue key (idempotent) and makes it due now.
func (s *Scheduler) addDomain(key string) {
	name, ok := s.domainOf(key)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if d, ok := s.domains[key]; ok {
		if d.backoff > 0 { // waiting because it was empty: not any more
			d.backoff = 0
			s.setNext(d, s.now())
			s.signal()
		}
		return
	}
	d := &domain{key: key, name: name, lastPop: s.now(), index: -1}
	s.domains[key] = d
	s.configure(d)
	heap.Push(&s.ready, d)
	s.setNext(d, s.now())
	s.signal()
}

// domainOf is the domain part of one of this spider's queue keys (in the
// key layout of the Redis mode): its domain queues, and its render queues
// when it renders.
func (s *Scheduler) domainOf(key string) (string, bool) {
	spider, domain, render, ok := s.cfg.Layout.ParseAnyQueue(key)
	return domain, ok && spider == s.cfg.SpiderID && (!render || s.cfg.Render)
}

// queuePatterns are the SCAN patterns of the queues this scheduler pops.
func (s *Scheduler) queuePatterns() []string {
	l := s.cfg.Layout
	if s.cfg.Render {
		return []string{l.QueuePattern(s.cfg.SpiderID), l.RenderQueuePattern(s.cfg.SpiderID)}
	}
	return []string{l.QueuePattern(s.cfg.SpiderID)}
}

// scan adds every queue of the spider found in Redis: on every master of
// a Redis Cluster (redisconn.ScanMasters).
func (s *Scheduler) scan(ctx context.Context) {
	for _, pattern := range s.queuePatterns() {
		err := redisconn.ScanMasters(ctx, s.rdb, pattern, 1000, func(keys []string) {
			for _, k := range keys {
				s.addDomain(k)
			}
		})
		if err != nil && ctx.Err() == nil {
			s.log.Warning("Failed to scan for domain queues", logfactory.Extra{"error": err.Error()})
		}
	}
}

func (s *Scheduler) scanLoop(ctx context.Context) {
	for lifecycle.Sleep(ctx, s.cfg.QueueRefresh) {
		s.scan(ctx)
	}
}

// announceLoop adds the queues announced on <spiderid>:queue-announce at
// once. The subscription reconnects by itself after a Redis outage;
// announcements sent meanwhile are caught by the periodic scan.
func (s *Scheduler) announceLoop(ctx context.Context, sub *redis.PubSub) {
	ch := sub.Channel(redis.WithChannelHealthCheckInterval(10 * time.Second))
	for {
		select {
		case <-ctx.Done():
			return
		case msg, ok := <-ch:
			if !ok {
				return
			}
			s.addDomain(msg.Payload)
		}
	}
}

// wakeAll makes every domain waiting on an empty-queue back-off due now.
func (s *Scheduler) wakeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for _, d := range s.domains {
		if d.backoff > 0 {
			d.backoff = 0
			s.setNext(d, now)
		}
	}
	s.signal()
}
