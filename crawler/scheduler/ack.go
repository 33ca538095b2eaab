package scheduler

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

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
	follow *followUps // nil: none
	again  bool       // an earlier acknowledgement of it failed
	done   chan ackResult
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

// ack acknowledges req's lease (req.done is made here) and waits for its
// batch's answer.
func (b *ackBatcher) ack(ctx context.Context, req ackRequest) (Enqueued, error) {
	req.done = make(chan ackResult, 1)
	b.mu.Lock()
	b.pending = append(b.pending, req)
	if b.sending {
		b.mu.Unlock()
		r := <-req.done
		return r.enqueued, r.err
	}
	b.sending = true
	b.mu.Unlock()
	for {
		// Every send waits for others: a busy crawler sends one round
		// trip per linger, however short its round trips are.
		if b.linger > 0 {
			time.Sleep(b.linger)
		}
		b.mu.Lock()
		batch := b.pending[:min(len(b.pending), maxAckBatch)]
		b.pending = b.pending[len(batch):]
		if len(batch) == 0 {
			b.sending = false
			b.pending = nil
			b.mu.Unlock()
			r := <-req.done
			return r.enqueued, r.err
		}
		b.mu.Unlock()
		b.send(ctx, batch)
	}
}

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
