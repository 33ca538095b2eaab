package scheduler

import (
	"context"
	"sync"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/throttle"
)

// ackBatcher acknowledges leases by group commit: a caller finding no ack
// in flight sends its own at once and then, while others queued up behind
// it, sends theirs together, one round trip per batch. A lone caller waits
// one round trip; many concurrent callers share them.
type ackBatcher struct {
	leases *throttle.Leases

	mu      sync.Mutex
	pending []ackRequest
	sending bool
}

type ackRequest struct {
	id   string
	done chan error
}

// maxAckBatch bounds one acknowledgement round trip.
const maxAckBatch = 500

func (b *ackBatcher) ack(ctx context.Context, id string) error {
	req := ackRequest{id: id, done: make(chan error, 1)}
	b.mu.Lock()
	b.pending = append(b.pending, req)
	if b.sending {
		b.mu.Unlock()
		return <-req.done
	}
	b.sending = true
	b.mu.Unlock()
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
		ids := make([]string, len(batch))
		for i, r := range batch {
			ids[i] = r.id
		}
		err := b.leases.Ack(ctx, ids...)
		for _, r := range batch {
			r.done <- err
		}
	}
}
