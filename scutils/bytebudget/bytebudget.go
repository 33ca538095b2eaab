// Package bytebudget bounds the bytes that many goroutines hold at once: a
// holder takes its bytes before it holds them, waiting its turn while they
// would not fit, and gives them back when done. Holders are served in the
// order they asked, so a large one is not passed over for ever by small
// ones; one larger than the whole budget takes all of it and goes alone.
//
// The Kafka publisher bounds the results it holds with one
// (kafkaclient.Config.PublishHeldBytes), the crawler the follow-up requests
// waiting for their acknowledgement (FOLLOWUPS_HELD_BYTES), and the Kafka
// Monitor the requests it has read and not yet stored (READ_AHEAD_BYTES).
package bytebudget

import (
	"context"
	"sync"
	"sync/atomic"
)

// Budget is a bound of max bytes. Its methods are safe for concurrent use.
type Budget struct {
	max   int
	waits atomic.Int64

	mu      sync.Mutex
	bytes   int
	waiters []*waiter
}

type waiter struct {
	n     int
	ready chan struct{} // closed when its n bytes are taken for it
}

// New returns a budget of bound bytes (at least 1).
func New(bound int) *Budget { return &Budget{max: max(1, bound)} }

// Max is the budget's bound.
func (b *Budget) Max() int { return b.max }

// Take waits until n bytes (at most the bound) can be held, after those who
// asked before, and holds them, or returns ctx's error holding nothing. It
// returns what it took, to give back.
func (b *Budget) Take(ctx context.Context, n int) (int, error) {
	n = min(n, b.max)
	b.mu.Lock()
	if len(b.waiters) == 0 && b.bytes+n <= b.max {
		b.bytes += n
		b.mu.Unlock()
		return n, nil
	}
	w := &waiter{n: n, ready: make(chan struct{})}
	b.waiters = append(b.waiters, w)
	b.mu.Unlock()
	b.waits.Add(1)
	select {
	case <-w.ready:
		return n, nil
	case <-ctx.Done():
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-w.ready: // taken meanwhile: give it back
		b.bytes -= n
	default:
		for i, o := range b.waiters {
			if o == w {
				b.waiters = append(b.waiters[:i], b.waiters[i+1:]...)
				break
			}
		}
	}
	b.wake() // the first in line may fit now
	return 0, ctx.Err()
}

// Give gives back n bytes taken.
func (b *Budget) Give(n int) {
	b.mu.Lock()
	b.bytes -= n
	b.wake()
	b.mu.Unlock()
}

// wake lets the waiters that fit go, in order; b.mu is held.
func (b *Budget) wake() {
	for len(b.waiters) > 0 && b.bytes+b.waiters[0].n <= b.max {
		w := b.waiters[0]
		b.waiters[0] = nil
		b.waiters = b.waiters[1:]
		b.bytes += w.n
		close(w.ready)
	}
}

// State is the bytes held and the holders waiting for room.
func (b *Budget) State() (bytes, waiting int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.bytes, len(b.waiters)
}

// Waits counts the Take calls that had to wait for room.
func (b *Budget) Waits() int64 { return b.waits.Load() }
