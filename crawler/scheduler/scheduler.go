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
//     with the pop (throttle.Leases at leases:<spiderid>) and renewed while
//     in flight. Done acknowledges it once its result is in Kafka; Retry
//     swaps it for its retry; Release returns it on shutdown. Every crawler
//     reaps expired leases back to their queues, so a crawler killed with
//     SIGKILL loses nothing: its requests are crawled again within
//     LEASE_TIMEOUT + LEASE_REAP_INTERVAL.
//   - The duplicate filter, the crawl blacklist and the page limits are
//     applied to a page's follow-up requests in one atomic Redis step.
package scheduler

import (
	"container/heap"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/fingerprint"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/domainconfig"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/lifecycle"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisqueue"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/throttle"
)

// Item is a popped request, leased to this crawler until Done, Retry or Release.
type Item struct {
	Request *crawlrequest.Request
	// Domain and Queue are where it was popped from.
	Domain, Queue string
	leaseID       string
	dom           *domain
}

// LeaseID identifies the item's lease (for logs).
func (it *Item) LeaseID() string { return it.leaseID }

// Scheduler serves one spider type. Next must be called from one goroutine;
// the other methods are safe for concurrent use.
type Scheduler struct {
	cfg    Config
	rdb    *redis.Client
	log    *logfactory.Logger
	leases *throttle.Leases
	acks   *ackBatcher
	now    func() time.Time

	mu       sync.Mutex
	domains  map[string]*domain // by queue key
	ready    domainHeap
	config   domainconfig.Document
	ip       string
	inflight map[string]*Item // by lease id
	popped   []*Item          // popped by a batch, not yet handed out (in inflight too)
	wake     chan struct{}
	slots    chan struct{}
	stats    Stats
}

// Stats are the scheduler's counters since start.
type Stats struct {
	Popped, Denied, Empty, Undecodable, Reaped int64
}

// domain is one known domain queue.
type domain struct {
	key, name string
	q         *throttle.Queue[string]
	next      time.Time
	lastPop   time.Time
	backoff   time.Duration
	inflight  int
	blocked   bool // blacklisted, or a throttle of 0 hits
	index     int
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

// never is a time no domain is due at (blocked or at its in-flight cap).
var never = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// New returns a scheduler. Run must be running for discovery, lease upkeep
// and IP refresh.
func New(rdb *redis.Client, cfg Config, log *logfactory.Logger) (*Scheduler, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	leases, err := throttle.NewLeases(rdb, rediskeys.LeaseKey(cfg.SpiderID), cfg.LeaseTTL)
	if err != nil {
		return nil, err
	}
	return &Scheduler{
		cfg: cfg, rdb: rdb, log: log, leases: leases, acks: &ackBatcher{leases: leases}, now: time.Now,
		domains: map[string]*domain{}, inflight: map[string]*Item{}, ip: "127.0.0.1",
		wake: make(chan struct{}, 1), slots: make(chan struct{}, cfg.Concurrency),
	}, nil
}

// Leases returns the scheduler's leases (for tests and tools).
func (s *Scheduler) Leases() *throttle.Leases { return s.leases }

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
	s.scan(ctx)
	var wg sync.WaitGroup
	announce := func(ctx context.Context) { s.announceLoop(ctx, sub) }
	for _, loop := range []func(context.Context){announce, s.scanLoop, s.renewLoop, s.reapLoop, s.ipLoop} {
		wg.Add(1)
		go func() { defer wg.Done(); loop(ctx) }()
	}
	wg.Wait()
}

// Next returns the next request to crawl: it waits for a free slot
// (CONCURRENT_REQUESTS), then pops from the domain due first whose
// throttle allows it. It blocks until a request is available or ctx ends.
func (s *Scheduler) Next(ctx context.Context) (*Item, error) {
	select {
	case s.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	item, err := s.next(ctx)
	if err != nil {
		<-s.slots
	}
	return item, err
}

func (s *Scheduler) next(ctx context.Context) (*Item, error) {
	s.mu.Lock()
	if len(s.popped) > 0 {
		it := s.popped[0]
		s.popped = s.popped[1:]
		s.mu.Unlock()
		return it, nil
	}
	s.mu.Unlock()
	errDelay := 100 * time.Millisecond
	for {
		s.mu.Lock()
		now := s.now()
		var d *domain
		var wait time.Duration = time.Hour
		if len(s.ready) > 0 {
			top := s.ready[0]
			if !top.next.After(now) {
				d = top
			} else if !top.next.Equal(never) {
				wait = top.next.Sub(now)
			}
		}
		s.mu.Unlock()
		if d == nil {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			case <-s.wake:
			case <-t.C:
			}
			t.Stop()
			continue
		}
		item, err := s.attempt(ctx, d)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			s.log.Error("Failed to pop from Redis", logfactory.Extra{"queue": d.key, "error": err.Error()})
			s.reschedule(d, s.now().Add(errDelay))
			if !lifecycle.Sleep(ctx, errDelay) {
				return nil, ctx.Err()
			}
			errDelay = min(errDelay*2, 5*time.Second)
			continue
		}
		errDelay = 100 * time.Millisecond
		if item != nil {
			return item, nil
		}
	}
}

// attempt tries one throttled, leased pop from d. When the throttle and
// the free request slots allow, it pops several items in the same step;
// the first is returned and the others wait in s.ready to be handed out by
// the next calls (they are leased and renewed meanwhile).
func (s *Scheduler) attempt(ctx context.Context, d *domain) (*Item, error) {
	s.mu.Lock()
	q, blocked := d.q, d.blocked
	// Our own slot is held; the others free now can take the extra items.
	want := 1 + min(cap(s.slots)-len(s.slots)-len(s.popped), s.cfg.PerDomain-d.inflight-1, maxBatchPop-1)
	s.mu.Unlock()
	if blocked || q == nil { // blocked since it was picked
		return nil, nil
	}
	lease := s.leases.New()
	res, err := q.AttemptN(ctx, lease, max(want, 1))
	if err != nil {
		return nil, err
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	switch res.Status {
	case throttle.DeniedByWindow, throttle.DeniedByModeration:
		s.stats.Denied++
		s.setNext(d, now.Add(max(res.Wait, time.Millisecond)))
		return nil, nil
	case throttle.Empty:
		s.stats.Empty++
		if now.Sub(d.lastPop) > s.cfg.QueueTimeout {
			s.forget(d)
			return nil, nil
		}
		d.backoff = min(max(2*d.backoff, 250*time.Millisecond), s.cfg.QueueRefresh)
		s.setNext(d, now.Add(d.backoff))
		return nil, nil
	}
	d.lastPop, d.backoff = now, 0
	var items []*Item
	add := func(raw, leaseID string) {
		s.stats.Popped++
		req, derr := crawlrequest.Decode([]byte(raw))
		if derr != nil {
			// Not a request anyone can crawl: drop it, with a log line.
			s.stats.Undecodable++
			extra := logfactory.Extra{"queue": d.key, "error": derr.Error(), "member": preview(raw)}
			if e, ok := derr.(*crawlrequest.DecodeError); ok && e.Named {
				extra["appid"], extra["crawlid"] = e.AppID, e.CrawlID
			}
			s.log.Error("Dropped an undecodable request", extra)
			go func() { _ = s.leases.Ack(context.WithoutCancel(ctx), leaseID) }()
			return
		}
		item := &Item{Request: req, Domain: d.name, Queue: d.key, leaseID: leaseID, dom: d}
		s.inflight[leaseID] = item
		d.inflight++
		items = append(items, item)
	}
	add(res.Raw, lease.ID)
	for _, more := range res.More {
		add(more.Raw, more.LeaseID)
	}
	if d.inflight >= s.cfg.PerDomain {
		s.setNext(d, never)
	} else {
		s.setNext(d, now)
	}
	if len(items) == 0 {
		return nil, nil
	}
	s.popped = append(s.popped, items[1:]...)
	return items[0], nil
}

// maxBatchPop bounds the items one pop takes from a domain.
const maxBatchPop = 32

func (s *Scheduler) setNext(d *domain, t time.Time) {
	if d.blocked {
		t = never
	}
	d.next = t
	if d.index >= 0 {
		heap.Fix(&s.ready, d.index)
	}
}

func (s *Scheduler) reschedule(d *domain, t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setNext(d, t)
}

func (s *Scheduler) forget(d *domain) {
	if d.inflight > 0 {
		return
	}
	delete(s.domains, d.key)
	if d.index >= 0 {
		heap.Remove(&s.ready, d.index)
	}
	s.log.Debug("Expired domain queue", logfactory.Extra{"queue": d.key})
}

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

// SetDomainConfig applies a new domain configuration (blacklist and
// per-domain throttles) to every known domain at once.
func (s *Scheduler) SetDomainConfig(doc domainconfig.Document) {
	s.mu.Lock()
	s.config = doc.Clone()
	for _, d := range s.domains {
		s.configure(d)
	}
	s.mu.Unlock()
	s.signal()
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
			s.signalLocked()
		}
		return
	}
	d := &domain{key: key, name: name, lastPop: s.now(), index: -1}
	s.domains[key] = d
	s.configure(d)
	heap.Push(&s.ready, d)
	s.setNext(d, s.now())
	s.signalLocked()
}

func (s *Scheduler) signalLocked() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// domainOf is the domain part of one of this spider's queue keys.
func (s *Scheduler) domainOf(key string) (string, bool) {
	spider, domain, ok := rediskeys.ParseQueueKey(key)
	return domain, ok && spider == s.cfg.SpiderID
}

// configure (re)builds d's throttle from the domain config and the IP.
func (s *Scheduler) configure(d *domain) {
	hits, window := s.cfg.Hits, s.cfg.Window
	if c, ok := s.config.Domains[d.name]; ok {
		hits, window = c.ScaledHits(), time.Duration(c.Window)*time.Second
	}
	d.blocked = s.config.Blacklisted(d.name) || hits < 1 || window <= 0
	if !d.blocked {
		prefix := rediskeys.ThrottleKey(s.cfg.SpiderID, s.ip, d.name, s.cfg.ByType, s.cfg.ByIP)
		q := redisqueue.NewPriority[string](s.rdb, d.key)
		tq, err := throttle.New(s.rdb, q, throttle.Config{
			Window: window, Limit: hits, Moderate: s.cfg.Moderated, Elastic: true,
			WindowName: prefix, ModName: prefix,
		})
		if err != nil {
			s.log.Error("Bad throttle for domain; not crawling it", logfactory.Extra{"domain": d.name, "error": err.Error()})
			d.blocked = true
		} else {
			d.q = tq
		}
	}
	switch {
	case d.blocked:
		s.setNext(d, never)
	case d.next.Equal(never) && d.inflight < s.cfg.PerDomain:
		s.setNext(d, s.now())
	}
}

// Throttle returns the throttle settings in force for a domain (for tests
// and logs): hits per window, and whether the domain is blocked.
func (s *Scheduler) Throttle(domainName string) (hits int, window time.Duration, blocked bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.domains[rediskeys.QueueKey(s.cfg.SpiderID, domainName)]
	if !ok {
		return 0, 0, false
	}
	if d.blocked {
		return 0, 0, true
	}
	c := d.q.Config()
	return c.Limit, c.Window, false
}

// scan adds every queue of the spider found in Redis.
func (s *Scheduler) scan(ctx context.Context) {
	pattern := rediskeys.QueuePattern(s.cfg.SpiderID)
	var cursor uint64
	for {
		keys, next, err := s.rdb.Scan(ctx, cursor, pattern, 1000).Result()
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warning("Failed to scan for domain queues", logfactory.Extra{"error": err.Error()})
			}
			return
		}
		for _, k := range keys {
			s.addDomain(k)
		}
		if next == 0 {
			return
		}
		cursor = next
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
	s.signalLocked()
}

// Enqueued says what became of each follow-up request.
type Enqueued struct {
	Queued, Duplicate, PageLimit, Expired, Blacklisted, Invalid int
}

//go:embed enqueue.lua
var enqueueSource string

var enqueueScript = redis.NewScript(enqueueSource)

// Enqueue queues the follow-up requests of parent's page (all of parent's
// crawl): skipping expired crawls and, without SCHEDULER_BACKLOG_BLACKLIST,
// blacklisted domains, then in one atomic step the crawl blacklist, the
// duplicate filter (parent's own URL is marked seen too), domain_max_pages
// and GLOBAL_PAGE_PER_DOMAIN_LIMIT. A queue created by it is announced.
func (s *Scheduler) Enqueue(ctx context.Context, parent *crawlrequest.Request, reqs []*crawlrequest.Request) (Enqueued, error) {
	var out Enqueued
	if parent.Expired(s.now()) {
		out.Expired = len(reqs)
		return out, nil
	}
	s.mu.Lock()
	blacklist := s.config.Blacklist
	s.mu.Unlock()
	keys := []string{rediskeys.BlacklistKey(s.cfg.SpiderID), rediskeys.DupeFilterKey(s.cfg.SpiderID, parent.CrawlID)}
	args := []any{
		parent.AppID + "||" + parent.CrawlID, seconds(s.cfg.DupeTimeout), seconds(s.cfg.DomainMaxPageTimeout),
		s.cfg.GlobalPageLimit, seconds(s.cfg.GlobalPageTimeout), fingerprint.Of(parent.URL),
	}
	var channels []any
	for _, r := range reqs {
		dom, err := rediskeys.DomainOfURL(r.URL)
		if err != nil {
			out.Invalid++
			continue
		}
		if !s.cfg.BacklogBlacklist && contains(blacklist, dom) {
			out.Blacklisted++
			continue
		}
		member, err := r.Encode()
		if err != nil {
			out.Invalid++
			continue
		}
		keys = append(keys, rediskeys.QueueKey(r.SpiderID, dom),
			rediskeys.DomainMaxPageKey(s.cfg.SpiderID, dom, r.CrawlID), rediskeys.GlobalPageCountKey(s.cfg.SpiderID, dom, r.CrawlID))
		args = append(args, fingerprint.Of(r.URL), string(member), r.Score(), r.DomainMaxPages)
		channels = append(channels, rediskeys.QueueChannel(r.SpiderID))
	}
	args = append(args, channels...)
	codes, err := enqueueScript.Run(ctx, s.rdb, keys, args...).Int64Slice()
	if err != nil {
		return out, fmt.Errorf("queue follow-up requests: %w", err)
	}
	if len(codes) == 1 && codes[0] == -1 {
		out.Blacklisted += len(channels)
		return out, nil
	}
	for i, c := range codes {
		switch c {
		case 0:
			out.Queued++
			if key := keys[2+3*i]; key[:len(s.cfg.SpiderID)+1] == s.cfg.SpiderID+":" {
				s.addDomain(key)
			}
		case 1:
			out.Duplicate++
		default:
			out.PageLimit++
		}
	}
	return out, nil
}

// Clear removes the spider's queues, leases and filters (SCHEDULER_PERSIST false).
func (s *Scheduler) Clear(ctx context.Context) error {
	var errs []error
	for _, pattern := range []string{rediskeys.QueuePattern(s.cfg.SpiderID), rediskeys.GlobEscape(s.cfg.SpiderID) + ":dupefilter:*",
		rediskeys.GlobEscape(s.cfg.SpiderID) + ":domain_max_page_filter:*", rediskeys.GlobEscape(s.cfg.SpiderID) + ":global_page_count_filter:*"} {
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

func seconds(d time.Duration) string { return strconv.FormatInt(int64(math.Ceil(d.Seconds())), 10) }

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func preview(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}
