package scheduler

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/throttle"
)

// ackBatcher acknowledges leases by group commit: a caller finding no ack
// in flight waits ackLinger for others to queue up behind it, then sends
// every queued ack together, one round trip per batch, and again while more
// queued up meanwhile. A lone caller waits ackLinger and one round trip;
// a busy crawler sends one round trip per ackLinger instead of one per
// few pages (each round trip costs Redis more than the writes in it).
//
// Each acknowledgement carries what became of its request (a ledger.Tally):
// the batch's tallies are merged and written in the same MULTI as the
// leases end, so the crawl ledger's done moves in the same step as the
// lease it counts. A lease found reaped at that step (its request queued
// again, to be counted when it is done again) has its tally taken back.
type ackBatcher struct {
	leases *throttle.Leases
	rdb    redis.Cmdable
	ttl    time.Duration // of the ledgers
	now    func() time.Time
	linger time.Duration // ackLinger
	// lost is told the requests whose leases were reaped before their ack,
	// and whether taking their counts back failed.
	lost func(ids []string, undoErr error)

	mu      sync.Mutex
	pending []ackRequest
	sending bool
}

type ackRequest struct {
	id    string
	tally *ledger.Tally
	done  chan error
}

// maxAckBatch bounds one acknowledgement round trip.
const maxAckBatch = 500

// ackLinger is how long the first ack of a batch waits for others. An ack
// only ends a lease whose page is published already, so it holds up
// nothing but the ledger's done count (and a crawl's completion) by this
// much; the lease is renewed meanwhile.
const ackLinger = 5 * time.Millisecond

func (b *ackBatcher) ack(ctx context.Context, id string, tally *ledger.Tally) error {
	req := ackRequest{id: id, tally: tally, done: make(chan error, 1)}
	b.mu.Lock()
	b.pending = append(b.pending, req)
	if b.sending {
		b.mu.Unlock()
		return <-req.done
	}
	b.sending = true
	b.mu.Unlock()
	if b.linger > 0 {
		time.Sleep(b.linger)
	}
	for {
		b.mu.Lock()
		batch := b.pending[:min(len(b.pending), maxAckBatch)]
		b.pending = b.pending[len(batch):]
		if len(batch) == 0 {
			b.sending = false
			b.pending = nil
			b.mu.Unlock()
			return <-req.done
		}
		b.mu.Unlock()
		err := b.send(ctx, batch)
		for _, r := range batch {
			r.done <- err
		}
	}
}

// send acknowledges one batch with its counts.
func (b *ackBatcher) send(ctx context.Context, batch []ackRequest) error {
	ids := make([]string, len(batch))
	var merged ledger.Tally
	for i, r := range batch {
		ids[i] = r.id
		merged.Merge(r.tally)
	}
	now := b.now()
	lost, err := b.leases.AckWith(ctx, func(pipe redis.Pipeliner) { merged.Write(ctx, pipe, now, b.ttl) }, ids...)
	if err != nil || len(lost) == 0 {
		return err
	}
	var undo ledger.Tally
	for _, r := range batch {
		for _, id := range lost {
			if r.id == id {
				undo.Merge(r.tally.Undo())
			}
		}
	}
	// The leases are gone already: an ack retried would find them lost
	// again and take their counts back twice, so a failure here is only
	// reported.
	var undoErr error
	if !undo.Empty() {
		pipe := b.rdb.TxPipeline()
		undo.Write(ctx, pipe, now, b.ttl)
		_, undoErr = pipe.Exec(ctx)
	}
	b.lost(lost, undoErr)
	return nil
}
