package scheduler

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/lifecycle"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/throttle"
)

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

// MostInHand is how many workers a crawler runs, one per item in its
// hands: those being fetched (CONCURRENT_REQUESTS), those fetched and
// being processed (as many again, see Fetched), and as many again whose
// processing slot is free (see Processed) while their worker hands their
// encoded results to the producer, waiting for room when what the
// producer holds is full. A worker does not wait for Kafka's answer: the
// items waiting for it hold no worker, no slot and no body.
func (s *Scheduler) MostInHand() int { return cap(s.slots) + 2*cap(s.processing) }

// Concurrency is CONCURRENT_REQUESTS.
func (s *Scheduler) Concurrency() int { return s.cfg.Concurrency }

func (s *Scheduler) next(ctx context.Context) (*Item, error) {
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
		if d != nil && len(d.ahead) > 0 {
			it := s.handOut(d, now)
			s.mu.Unlock()
			return it, nil
		}
		var due []duePop
		if d != nil {
			due = s.dueToPop(now)
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
		item, failed := s.attempt(ctx, due, errDelay)
		if item != nil {
			return item, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !failed {
			errDelay = 100 * time.Millisecond
			continue
		}
		if !lifecycle.Sleep(ctx, errDelay) {
			return nil, ctx.Err()
		}
		errDelay = min(errDelay*2, 5*time.Second)
	}
}

// dueToPop are the pops to make together, due first: from the heap's top
// (due, with nothing popped ahead) and every other domain due now with
// nothing popped ahead (not blocked, with a queue), at most maxBatchPop
// domains; s.mu is held. They share the items the top alone would pop
// (the one it hands out, and up to CONCURRENT_REQUESTS ahead in all),
// dealt one at a time in turn, each domain to at most what it would pop
// alone (want): a domain due alone pops as before, at once (none waits
// for company); twenty domains due with room for sixteen items pop one
// each from sixteen domains, in one round trip rather than sixteen. One
// domain taking every item of the room left the others to pop one item
// a round trip each as their turns came, due first.
func (s *Scheduler) dueToPop(now time.Time) []duePop {
	var due []*domain
	// The heap's due part: a node is due no earlier than its parent.
	stack := []int{0}
	for len(stack) > 0 && len(due) < 4*maxBatchPop {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if i >= len(s.ready) || s.ready[i].next.After(now) {
			continue
		}
		d := s.ready[i]
		if i == 0 || (len(d.ahead) == 0 && !d.blocked && d.q != nil) {
			due = append(due, d)
		}
		stack = append(stack, 2*i+2, 2*i+1)
	}
	// Due first; the top first among those due at its time.
	slices.SortStableFunc(due[1:], func(a, b *domain) int { return a.next.Compare(b.next) })
	left := 1 + max(0, s.cfg.Concurrency-s.ahead)
	pops := make([]duePop, 0, min(len(due), left, maxBatchPop))
	for _, d := range due[:cap(pops)] {
		pops = append(pops, duePop{d: d, most: s.want(d)})
	}
	for dealt := true; dealt && left > 0; {
		dealt = false
		for i := range pops {
			if left > 0 && pops[i].n < pops[i].most {
				pops[i].n++
				left--
				dealt = true
			}
		}
	}
	return pops
}

// duePop is a pop of up to n items from d, which alone would pop most.
type duePop struct {
	d       *domain
	n, most int
}

// want is how many items to pop from d: the one to hand out and up to
// CONCURRENT_REQUESTS ahead in all (and twice CONCURRENT_REQUESTS_PER_DOMAIN
// ahead of d's fetches); s.mu is held.
func (s *Scheduler) want(d *domain) int {
	return 1 + max(0, min(3*s.cfg.PerDomain-d.fetching-1, s.cfg.Concurrency-s.ahead, maxBatchPop-1))
}

// handOut starts the fetch of d's first item popped ahead; s.mu is held.
// d is due again at once unless its fetches are at their cap
// (CONCURRENT_REQUESTS_PER_DOMAIN).
func (s *Scheduler) handOut(d *domain, now time.Time) *Item {
	it := d.ahead[0]
	d.ahead[0] = nil
	d.ahead = d.ahead[1:]
	s.ahead--
	it.fetching, it.downloading = true, true
	d.fetching++
	if d.fetching >= s.cfg.PerDomain {
		s.setNext(d, never)
	} else {
		s.setNext(d, now)
	}
	return it
}

// Fetched tells the scheduler that the item's download is over: its request
// slot and its domain's go to the next requests while it is parsed,
// published and acknowledged (Done, Retry), as Scrapy's download slots do,
// so that a crawler keeps CONCURRENT_REQUESTS fetches going while its
// results wait for Kafka and Redis. At most CONCURRENT_REQUESTS fetched
// items are processed at once: Fetched waits for one of them to end, or
// for ctx to end (then it returns ctx's error and the item keeps its
// request slot). Its domain's slot goes at once: the item is no longer
// fetched from the domain, while its request slot, which bounds the bodies
// in memory with the processing slots, goes only when it has a processing
// slot. (A domain's slot held while its item waited for a processing slot
// left a single-domain crawl with fewer than CONCURRENT_REQUESTS_PER_DOMAIN
// fetches: in an execution trace of BenchmarkCrawlCost, 2 of its 8 on
// average.)
func (s *Scheduler) Fetched(ctx context.Context, it *Item) error {
	s.mu.Lock()
	over := !it.fetching || it.processing
	if !over && s.endDownload(it) {
		s.signal()
	}
	s.mu.Unlock()
	if over {
		return nil
	}
	select {
	case s.processing <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	s.mu.Lock()
	fetching := s.endFetch(it)
	it.processing = true
	s.mu.Unlock()
	if fetching {
		<-s.slots
		s.signal()
	}
	return nil
}

// Processed tells the scheduler that the item's processing is over (its
// page parsed, its results encoded and handed to the producer, which
// bounds what it holds): its processing slot goes to the next fetched
// item at once, while it waits for Kafka's acknowledgement and then its
// own (Done, Finish, Retry). Nothing happens for an item that holds no
// processing slot.
func (s *Scheduler) Processed(it *Item) {
	s.mu.Lock()
	processing := it.processing
	it.processing = false
	s.mu.Unlock()
	if processing {
		<-s.processing
	}
}

// endFetch ends the item's fetch, if it has not ended yet, and reports whether
// it did (the item's request slot is then to be given back); s.mu is held.
func (s *Scheduler) endFetch(it *Item) bool {
	s.endDownload(it)
	if !it.fetching {
		return false
	}
	it.fetching = false
	return true
}

// endDownload ends the item's fetch from its domain (its count in
// CONCURRENT_REQUESTS_PER_DOMAIN), if it has not ended yet, and reports
// whether that made the domain due; s.mu is held. A domain at its cap of
// fetches is due again.
func (s *Scheduler) endDownload(it *Item) bool {
	if !it.downloading {
		return false
	}
	it.downloading = false
	it.dom.fetching--
	if it.dom.next.Equal(never) && (!it.dom.blocked || len(it.dom.ahead) > 0) {
		s.setNext(it.dom, s.now())
		return true
	}
	return false
}

// attempt tries one throttled, leased pop from each domain of due (due
// first), whose items popped ahead are all handed out: one pipeline for
// them all, on a Redis Cluster one round trip per master, the masters at
// once. When the throttle allows, it pops more than the one it returns,
// in the same step: up to CONCURRENT_REQUESTS ahead in all (and twice
// CONCURRENT_REQUESTS_PER_DOMAIN ahead of a domain's fetches), kept in
// the domain's ahead, leased and renewed, for the next calls to hand out
// as its fetches end. One round trip then serves a dozen pages of a busy
// domain, or of several. (A moderated throttle pops one at a time: see
// throttle.Queue.AttemptN.) It hands out the first item of the first
// domain that popped one, and says whether a pop failed (each failed
// queue is logged and tried again after errDelay).
func (s *Scheduler) attempt(ctx context.Context, due []duePop, errDelay time.Duration) (item *Item, failed bool) {
	pops := make([]throttle.Pop[string], 0, len(due))
	doms := make([]*domain, 0, len(due))
	s.mu.Lock()
	for _, p := range due {
		d := p.d
		if d.blocked || d.q == nil { // blocked since it was picked
			continue
		}
		// A pop that failed may have popped and leased items all the
		// same (its answer lost with its connection): the next pop from
		// d reuses its lease, and the pop script answers those items
		// again.
		pops = append(pops, throttle.Pop[string]{Queue: d.q, Lease: d.unsure, N: p.n})
		d.unsure = nil
		doms = append(doms, d)
	}
	s.mu.Unlock()
	if len(pops) == 0 {
		return nil, false
	}
	leases := make([]*throttle.Leases, len(doms))
	for i, d := range doms {
		leases[i] = s.leasesOf(d.name)
		if pops[i].Lease == nil {
			pops[i].Lease = leases[i].New()
		}
	}
	res, errs := throttle.AttemptAll(s.cfg.Wait.Context(ctx), s.rdb, pops) // the leases wait for replicas (REDIS_WAIT_REPLICAS)
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, d := range doms {
		if errs[i] != nil {
			d.unsure = pops[i].Lease
			failed = true
			if ctx.Err() == nil {
				s.log.Error("Failed to pop from Redis", logfactory.Extra{"queue": d.key, "error": errs[i].Error()})
				s.setNext(d, now.Add(errDelay))
			}
			continue
		}
		s.popped(ctx, d, res[i], pops[i].Lease.ID, leases[i], now)
		if item == nil && len(d.ahead) > 0 {
			item = s.handOut(d, now)
		}
	}
	return item, failed
}

// popped keeps what a pop from d got in d.ahead; s.mu is held.
func (s *Scheduler) popped(ctx context.Context, d *domain, res throttle.Result, leaseID string, leases *throttle.Leases, now time.Time) {
	switch res.Status {
	case throttle.DeniedByWindow, throttle.DeniedByModeration:
		s.stats.Denied++
		s.setNext(d, now.Add(max(res.Wait, time.Millisecond)))
		return
	case throttle.Empty:
		s.stats.Empty++
		if now.Sub(d.lastPop) > s.cfg.QueueTimeout {
			s.forget(d)
			return
		}
		d.backoff = min(max(2*d.backoff, 250*time.Millisecond), s.cfg.QueueRefresh)
		s.setNext(d, now.Add(d.backoff))
		return
	}
	d.lastPop, d.backoff = now, 0
	add := func(raw, leaseID string) {
		s.stats.Popped++
		req, derr := crawlrequest.Decode([]byte(raw))
		if derr != nil {
			// Not a request anyone can crawl: drop it, with a log line.
			s.stats.Undecodable++
			extra := logfactory.Extra{"queue": d.key, "error": derr.Error(), "member": preview(raw)}
			var tally *ledger.Tally
			if e := (*crawlrequest.DecodeError)(nil); errors.As(derr, &e) && e.Named {
				extra["appid"], extra["crawlid"] = e.AppID, e.CrawlID
				// Its crawl counted it when it was queued: it is done now.
				tally = &ledger.Tally{}
				tally.Dropped(ledger.Crawl{SpiderID: s.cfg.SpiderID, AppID: e.AppID, CrawlID: e.CrawlID}, ledger.DroppedUncrawlable)
			}
			s.log.Error("Dropped an undecodable request", extra)
			s.acks.ackThen(context.WithoutCancel(ctx), ackRequest{id: leaseID, leases: leases, domain: d.name, tally: tally}, nil)
			return
		}
		item := &Item{Request: req, Domain: d.name, Queue: d.key, leaseID: leaseID, dom: d, leases: leases,
			crawl: ledger.Crawl{SpiderID: s.cfg.SpiderID, AppID: req.AppID, CrawlID: req.CrawlID}}
		s.inflight[leaseID] = item
		d.ahead = append(d.ahead, item)
		s.ahead++
	}
	add(res.Raw, leaseID)
	for _, more := range res.More {
		add(more.Raw, more.LeaseID)
	}
	if len(d.ahead) == 0 {
		s.setNext(d, now)
	}
}

// maxBatchPop bounds the items one pop takes from a domain, and the
// domains one round trip pops from.
const maxBatchPop = 32

func preview(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}
