package bytebudget

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Holders never hold more than the bound together; one asking more than
// the bound takes all of it and goes alone.
func TestHoldersNeverHoldMoreThanTheBound(t *testing.T) {
	b := New(100)
	var now atomic.Int64 // what the holders hold, as they count it
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			for j := range 50 {
				n := (i*7+j*13)%60 + 1
				if i == 0 && j%10 == 0 {
					n = 1000 // more than the bound: taken for the bound
				}
				took, err := b.Take(context.Background(), n)
				if err != nil || took != min(n, 100) {
					t.Errorf("Take(%d) took %d, %v", n, took, err)
					return
				}
				if v := now.Add(int64(took)); v > 100 {
					t.Errorf("holders hold %d together, bound 100", v)
				}
				now.Add(-int64(took))
				b.Give(took)
			}
		})
	}
	wg.Wait()
	if bytes, waiting := b.State(); bytes != 0 || waiting != 0 {
		t.Errorf("%d bytes held and %d waiting after every Give", bytes, waiting)
	}
}

// Holders are served in the order they asked: a large one waiting is not
// passed over by a small one that would fit, and a waiter whose context
// ends leaves holding nothing, letting the next one go.
func TestHoldersAreServedInOrderAndACancelledWaiterHoldsNothing(t *testing.T) {
	b := New(100)
	ctx := context.Background()
	first, _ := b.Take(ctx, 60)
	large := make(chan int)
	go func() {
		n, _ := b.Take(ctx, 80)
		large <- n
	}()
	waitFor(t, b, 1)
	cctx, cancel := context.WithCancel(ctx)
	cancelled := make(chan error)
	go func() {
		_, err := b.Take(cctx, 10) // would fit now, but comes after the large one
		cancelled <- err
	}()
	waitFor(t, b, 2)
	cancel()
	if err := <-cancelled; err == nil {
		t.Fatal("a Take whose context ended returned no error")
	}
	if bytes, waiting := b.State(); bytes != 60 || waiting != 1 {
		t.Fatalf("after the cancel: %d bytes held, %d waiting; want 60 and the large one", bytes, waiting)
	}
	b.Give(first)
	select {
	case n := <-large:
		if n != 80 {
			t.Errorf("the large one took %d, want 80", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the large one was not woken when the bytes came back")
	}
	if b.Waits() != 2 {
		t.Errorf("Waits %d, want 2", b.Waits())
	}
}

// waitFor waits until waiting holders wait for room.
func waitFor(t *testing.T, b *Budget, waiting int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, w := b.State(); w == waiting {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d holders never waited", waiting)
		}
		time.Sleep(time.Millisecond)
	}
}
