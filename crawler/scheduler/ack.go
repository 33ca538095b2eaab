package scheduler

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisscripts"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/throttle"
)

// ackBatcher acknowledges leases by group commit: a caller finding no ack
// in flight waits ackLinger for others to queue up behind it, then sends
// every queued ack together, one round trip per batch, and again, after
// another ackLinger, while more queued up meanwhile. A lone caller waits
// ackLinger and one round trip; a busy crawler sends one round trip per
// ackLinger instead of one per few pages (each script run costs Redis more
// than the writes in it): at 5,000 pages/s, one per 25 pages.
//
// On a Redis Cluster a batch costs its masters one run of the finish
// script per lease set (per domain), whatever the acknowledgements in it,
// so there a set's acknowledgements wait for more of the same set: they go
// once clusterAckSet of them are waiting or the oldest has waited
// Config.ClusterAckLinger (SCHEDULER_CLUSTER_ACK_LINGER_MS), with every
// other set ready at that turn (ripe). Stopping (hurry) sends every ack at
// the next turn.
//
// Each acknowledgement carries what became of its request (a ledger.Tally)
// and its page's follow-up requests: one run of the finish script
// (redisscripts.Finish) ends the batch's leases, queues their follow-ups
// and counts all of it in the crawls' ledgers, so the ledger's done moves
// in the same step as the lease it counts and the page's follow-ups are
// queued exactly when its lease ends. A lease found reaped at that step
// (its request queued again, to be counted and followed when it is done
// again) is reported lost, and neither its counts nor its follow-ups are
// written.
type ackBatcher struct {
	rdb    redis.UniversalClient
	cfg    Config
	now    func() time.Time
	linger time.Duration // ackLinger
	// lost is told the requests whose leases were reaped before their ack.
	lost func(ids []string)
	// enqueued turns a page's result into what became of its follow-ups.
	enqueued func(f *followUps, res redisscripts.PageResult) (Enqueued, error)

	// perSlot: a Redis Cluster master could not run finish_node.lua
	// (Redis before 7), so runs go one per slot (runByNode).
	perSlot atomic.Bool
	// hurry: the crawler is stopping; acknowledgements wait for no more
	// of their set (ripe).
	hurry atomic.Bool

	mu      sync.Mutex
	pending []ackRequest
	sending bool
}

type ackRequest struct {
	id string
	// leases is the lease set holding id: of domain, the request's.
	leases *throttle.Leases
	domain string
	tally  *ledger.Tally
	follow *followUps     // nil: none
	again  bool           // an earlier acknowledgement of it failed
	done   chan ackResult // answered by send
	// then, when set, is told the answer once send has answered done
	// (ackThen).
	then   func(Enqueued, error)
	queued time.Time // when it joined pending
}

type ackResult struct {
	enqueued Enqueued
	err      error
}

// maxAckBatch bounds one acknowledgement round trip.
const maxAckBatch = 500

// ackLinger is how long the first ack of a batch waits for others. An ack
// only ends a lease whose page is published already, so it holds up
// nothing but the ledger's done count (and a crawl's completion) and its
// page's follow-ups by this much; the lease is renewed meanwhile.
const ackLinger = 5 * time.Millisecond

// clusterAckSet is how many acknowledgements of one lease set make a
// batch of it on a Redis Cluster without waiting for
// Config.ClusterAckLinger: a domain crawled fast needs no longer wait.
const clusterAckSet = 16

// ack acknowledges req's lease (req.done is made here) and waits for its
// batch's answer: it sends the batches itself when no one is sending.
func (b *ackBatcher) ack(ctx context.Context, req ackRequest) (Enqueued, error) {
	req.done = make(chan ackResult, 1)
	if b.queue(req) {
		b.sendAll(ctx)
	}
	r := <-req.done
	return r.enqueued, r.err
}

// ackThen acknowledges req's lease without waiting: then (unless nil) is
// told its batch's answer, called by the goroutine that sent the batch,
// which must not wait for anything. When no one is sending, a goroutine
// starts to send the batches. A caller that waited for its answer on a
// channel, as ack's do, took two wake-ups per page (its hand-off to the
// goroutine that waits, and the answer).
func (b *ackBatcher) ackThen(ctx context.Context, req ackRequest, then func(Enqueued, error)) {
	req.done = make(chan ackResult, 1)
	req.then = then
	if b.queue(req) {
		go b.sendAll(ctx)
	}
}

// queue adds req to pending and reports whether the caller is to send
// the batches (sendAll): none is being sent.
func (b *ackBatcher) queue(req ackRequest) bool {
	req.queued = b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pending = append(b.pending, req)
	if b.sending {
		return false
	}
	b.sending = true
	return true
}

// sendAll sends batches until none is pending, each after a linger, and
// tells the callers of ackThen their answers.
func (b *ackBatcher) sendAll(ctx context.Context) {
	for {
		// Every send waits for others: a busy crawler sends one round
		// trip per linger, however short its round trips are.
		if b.linger > 0 {
			time.Sleep(b.linger)
		}
		b.mu.Lock()
		batch := b.ripe(b.now())
		if len(batch) == 0 && len(b.pending) > 0 {
			b.mu.Unlock() // none ready yet: wait for them
			continue
		}
		if len(batch) == 0 {
			b.sending = false
			b.pending = nil
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		b.send(ctx, batch) // answers every one of batch's done
		for _, r := range batch {
			if r.then != nil {
				res := <-r.done
				r.then(res.enqueued, res.err)
			}
		}
	}
}

// setLinger is how long a lease set's acknowledgements wait for more of
// the same set now: the configured linger (Config.setLinger), none when
// stopping.
func (b *ackBatcher) setLinger() time.Duration {
	if b.hurry.Load() {
		return 0
	}
	return b.cfg.setLinger()
}

// setLinger is how long a lease set's acknowledgements may wait for more
// of the same set: ClusterAckLinger on a Redis Cluster, none with one
// Redis (one run takes every set's).
func (c Config) setLinger() time.Duration {
	if !c.Layout.IsCluster() {
		return 0
	}
	return c.ClusterAckLinger
}

// ripe takes from pending (b.mu held) the acknowledgements to send now,
// at most maxAckBatch: every one, or with a set linger (setLinger) those
// of the lease sets with clusterAckSet waiting or whose oldest has waited
// the linger; the others stay pending in their order.
func (b *ackBatcher) ripe(now time.Time) []ackRequest {
	wait := b.setLinger()
	if wait <= 0 {
		batch := b.pending[:min(len(b.pending), maxAckBatch)]
		b.pending = b.pending[len(batch):]
		return batch
	}
	type set struct {
		n      int
		oldest time.Time
	}
	sets := map[*throttle.Leases]*set{}
	for _, r := range b.pending {
		if st, ok := sets[r.leases]; ok {
			st.n++
		} else {
			sets[r.leases] = &set{n: 1, oldest: r.queued} // pending is in arrival order
		}
	}
	var batch, rest []ackRequest
	for _, r := range b.pending {
		st := sets[r.leases]
		if len(batch) < maxAckBatch && (st.n >= clusterAckSet || now.Sub(st.oldest) >= wait) {
			batch = append(batch, r)
		} else {
			rest = append(rest, r)
		}
	}
	b.pending = rest
	return batch
}

// hurryAcks makes the acknowledgements waiting for more of their lease set,
// and every one after them, go at the next turn: the crawler is stopping.
func (b *ackBatcher) hurryAcks() { b.hurry.Store(true) }

// send acknowledges one batch, and tells each waiting caller its result:
// on a Redis Cluster split by slot (sendCluster), with one Redis in one
// run of the finish script.
func (b *ackBatcher) send(ctx context.Context, batch []ackRequest) {
	if b.cfg.Layout.IsCluster() {
		b.sendCluster(ctx, batch)
		return
	}
	owners, records := batch[0].leases.Keys() // with one Redis, every ack's
	f := newFinish(b.cfg, owners, records, b.now())
	var ledgers ledger.Ledgers // the batch's pages are mostly of one crawl
	for _, r := range batch {
		a := redisscripts.FinishAck{LeaseID: r.id, Owner: throttle.OwnerOf(r.id), Counts: r.tally.Counts(&ledgers), Again: r.again}
		if r.follow != nil && !r.follow.empty() {
			a.Page = &r.follow.page
		}
		f.Acks = append(f.Acks, a)
	}
	res, err := f.Run(b.cfg.Wait.Context(ctx), b.rdb)
	if err != nil {
		for _, r := range batch {
			r.done <- ackResult{err: err}
		}
		return
	}
	b.answer(batch, f, res)
}

// answer tells each caller of batch, acknowledged by f, what f's run res
// did: its lease ended now, before, or was lost, and what became of its
// page's follow-ups.
func (b *ackBatcher) answer(batch []ackRequest, f *redisscripts.Finish, res redisscripts.FinishResult) {
	var lost []string
	for i, r := range batch {
		var out ackResult
		switch res.Acks[i].State {
		case redisscripts.AckLost:
			lost = append(lost, r.id)
		case redisscripts.AckFinished:
			if f.Acks[i].Page != nil {
				out.enqueued, out.err = b.enqueued(r.follow, res.Acks[i].Page)
			}
		case redisscripts.AckFinishedBefore:
			// An earlier send of this acknowledgement reached Redis
			// but its answer did not reach us: nothing to do again.
		default:
			out.err = errors.New("acknowledge a lease: unexpected answer")
		}
		if r.follow != nil && f.Acks[i].Page == nil {
			out.enqueued = r.follow.out
		}
		r.done <- out
	}
	if len(lost) > 0 {
		b.lost(lost)
	}
}

// FinishThen is Finish without waiting for the acknowledgement: then is
// told what Finish would return, once the acknowledgement's batch is
// answered (after the item's time in flight ended, when it succeeded),
// by the goroutine that sent the batch. then must not wait for anything:
// a retry goes from another goroutine. A crawler's workers hand their
// pages' acknowledgements over this way, and wait for none.
func (s *Scheduler) FinishThen(ctx context.Context, it *Item, tally *ledger.Tally, reqs []*crawlrequest.Request, refused map[ledger.Reason]int,
	then func(Enqueued, error)) {
	s.acks.ackThen(context.WithoutCancel(ctx), s.ackOf(it, tally, reqs, refused), func(out Enqueued, err error) {
		if err == nil {
			s.finish(it)
		}
		then(out, err)
	})
}

// ackOf is the acknowledgement of it with tally and its page's follow-up
// requests (Finish), the item marked as ending and its slots given to
// the next items.
func (s *Scheduler) ackOf(it *Item, tally *ledger.Tally, reqs []*crawlrequest.Request, refused map[ledger.Reason]int) ackRequest {
	var follow *followUps
	if len(reqs) > 0 || len(refused) > 0 {
		follow = s.followUps(it.Request, it.Domain, reqs, refused)
	}
	s.finishing(it)
	s.endSlots(it)
	s.mu.Lock()
	again := it.acked
	it.acked = true
	s.mu.Unlock()
	return ackRequest{id: it.leaseID, leases: it.leases, domain: it.Domain, tally: tally, follow: follow, again: again}
}

// AckLinger is how long an acknowledgement may wait for others of its
// lease set beyond a batch's ackLinger: Config.ClusterAckLinger on a
// Redis Cluster, 0 with one Redis. The engine sizes by it how many
// acknowledgements may be under way at once.
func (s *Scheduler) AckLinger() time.Duration { return s.cfg.setLinger() }

// HurryAcks sends the acknowledgements waiting for others of their lease
// set at the next turn, and every later one without that wait: call it
// when the crawler stops, so that they go within its grace period.
func (s *Scheduler) HurryAcks() { s.acks.hurryAcks() }
