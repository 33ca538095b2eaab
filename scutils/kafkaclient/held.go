package kafkaclient

import (
	"context"
	"sync"
)

// held bounds the bytes of values a Publisher holds at once
// (Config.PublishHeldBytes): a Publish takes its value's size before its
// first attempt and gives it back when it returns, so what waits in the
// producer's queue, in its batches in flight and between attempts while
// Kafka is away is bounded. Publish calls wait their turn in order, so a
// large value is not passed over for ever by small ones; a value larger
// than the bound takes all of it, and goes alone.
type held struct {
	mu      sync.Mutex
	bytes   int
	max     int
	waiters []*heldWaiter
}

type heldWaiter struct {
	n     int
	ready chan struct{} // closed when its n bytes are taken for it
}

// take waits until n bytes (at most the bound) can be held and holds them,
// or returns ctx's error holding nothing. It returns what it took, to give
// back.
func (h *held) take(ctx context.Context, n int) (int, error) {
	n = min(n, h.max)
	h.mu.Lock()
	if len(h.waiters) == 0 && h.bytes+n <= h.max {
		h.bytes += n
		h.mu.Unlock()
		return n, nil
	}
	w := &heldWaiter{n: n, ready: make(chan struct{})}
	h.waiters = append(h.waiters, w)
	h.mu.Unlock()
	select {
	case <-w.ready:
		return n, nil
	case <-ctx.Done():
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case <-w.ready: // taken meanwhile: give it back
		h.bytes -= n
	default:
		for i, o := range h.waiters {
			if o == w {
				h.waiters = append(h.waiters[:i], h.waiters[i+1:]...)
				break
			}
		}
	}
	h.wake() // the first in line may fit now
	return 0, ctx.Err()
}

// give gives back n bytes taken.
func (h *held) give(n int) {
	h.mu.Lock()
	h.bytes -= n
	h.wake()
	h.mu.Unlock()
}

// wake lets the waiters that fit go, in order; h.mu is held.
func (h *held) wake() {
	for len(h.waiters) > 0 && h.bytes+h.waiters[0].n <= h.max {
		w := h.waiters[0]
		h.waiters[0] = nil
		h.waiters = h.waiters[1:]
		h.bytes += w.n
		close(w.ready)
	}
}

// state is the bytes held and the Publish calls waiting for room.
func (h *held) state() (bytes, waiting int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.bytes, len(h.waiters)
}
