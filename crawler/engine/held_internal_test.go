package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Holders never hold more than the gate's max together, one asking more
// than max is admitted for max when nothing else is held, and a waiter
// whose context ends leaves holding nothing.
func TestByteGateBoundsWhatItsHoldersHold(t *testing.T) {
	g := newByteGate(100)
	var now atomic.Int64 // what the holders hold, as they count it
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			for j := range 50 {
				n := int64((i*7+j*13)%60 + 1)
				if i == 0 && j%10 == 0 {
					n = 1000 // more than max: admitted alone, for max
				}
				took, ok := g.acquire(context.Background(), n)
				if !ok || took != min(n, 100) {
					t.Errorf("acquire(%d) took %d, %v", n, took, ok)
					return
				}
				if v := now.Add(took); v > 100 {
					t.Errorf("holders hold %d together, max 100", v)
				}
				now.Add(-took)
				g.release(took)
			}
		})
	}
	wg.Wait()
	if g.Held() != 0 {
		t.Errorf("%d held after every release", g.Held())
	}

	held, _ := g.acquire(context.Background(), 80)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if took, ok := g.acquire(ctx, 30); ok || took != 0 {
		t.Fatalf("acquire with no room until its context ended: took %d, %v", took, ok)
	}
	if g.Held() != 80 || g.waits.Load() == 0 {
		t.Fatalf("held %d (want 80), waits %d (want some)", g.Held(), g.waits.Load())
	}
	done := make(chan int64)
	go func() {
		took, _ := g.acquire(context.Background(), 30)
		done <- took
	}()
	g.release(held)
	select {
	case took := <-done:
		if took != 30 {
			t.Errorf("took %d, want 30", took)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a waiter was not woken by a release")
	}
	if took, ok := g.acquire(context.Background(), 0); !ok || took != 0 {
		t.Errorf("acquire(0) took %d, %v", took, ok)
	}
}
