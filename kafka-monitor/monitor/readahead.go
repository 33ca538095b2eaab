package monitor

import (
	"context"
	"sync"

	"github.com/segmentio/kafka-go"
)

// messageOverhead is what a message read ahead counts for besides its key
// and value: its struct, headers and the request it becomes.
const messageOverhead = 512

// readAhead bounds the bytes of the messages Run holds: read from Kafka and
// not yet stored and reported (READ_AHEAD_BYTES). The fetcher takes a
// message's bytes before handing it on and waits while the budget is
// spent; they are given back once its batch is reported. A message larger
// than the whole budget is taken when nothing else is held, so that it
// cannot stop the monitor.
type readAhead struct {
	mu    sync.Mutex
	held  int64
	limit int64
	freed chan struct{} // closed, and replaced, whenever bytes are given back
}

func newReadAhead(limit int64) *readAhead {
	return &readAhead{limit: max(1, limit), freed: make(chan struct{})}
}

// heldCost is what msg counts for in the budget.
func heldCost(msg *kafka.Message) int64 {
	return int64(len(msg.Key)+len(msg.Value)) + messageOverhead
}

// take waits until n bytes fit in the budget (or nothing is held) and takes
// them; it fails only when ctx is done first.
func (r *readAhead) take(ctx context.Context, n int64) error {
	for {
		r.mu.Lock()
		if r.held == 0 || r.held+n <= r.limit {
			r.held += n
			r.mu.Unlock()
			return nil
		}
		freed := r.freed
		r.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// giveBack returns the bytes of batch's messages to the budget.
func (r *readAhead) giveBack(batch []kafka.Message) {
	var n int64
	for i := range batch {
		n += heldCost(&batch[i])
	}
	r.mu.Lock()
	r.held -= n
	close(r.freed)
	r.freed = make(chan struct{})
	r.mu.Unlock()
}

// heldBytes is how many bytes are taken now.
func (r *readAhead) heldBytes() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.held
}
