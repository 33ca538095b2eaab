package lifecycle_test

import (
	"context"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/lifecycle"
)

func TestSleepIsInterruptedByCancellation(t *testing.T) {
	if !lifecycle.Sleep(context.Background(), time.Millisecond) {
		t.Fatal("an uninterrupted sleep reported cancellation")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if lifecycle.Sleep(ctx, time.Hour) || time.Since(start) > time.Second {
		t.Fatal("a cancelled sleep did not return at once")
	}
}

func TestWithGraceOutlivesTheSignalByTheGrace(t *testing.T) {
	ctx, signal := context.WithCancel(context.Background())
	work, stop := lifecycle.WithGrace(ctx, 200*time.Millisecond)
	defer stop()
	signal()
	if work.Err() != nil {
		t.Fatal("work cancelled with the signal")
	}
	select {
	case <-work.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("work never cancelled after the grace")
	}
	// stop ends the work context at once.
	work2, stop2 := lifecycle.WithGrace(context.Background(), time.Hour)
	stop2()
	if work2.Err() == nil {
		t.Fatal("stop did not cancel the work context")
	}
}

func TestEveryTicksUntilStopIsClosed(t *testing.T) {
	stop := make(chan struct{})
	ticks := make(chan time.Time, 100)
	done := make(chan struct{})
	go func() {
		defer close(done)
		lifecycle.Every(stop, time.Millisecond, func(now time.Time) { ticks <- now })
	}()
	var last time.Time
	for range 3 {
		select {
		case now := <-ticks:
			if !now.After(last) {
				t.Fatalf("tick at %v after one at %v", now, last)
			}
			last = now
		case <-time.After(10 * time.Second):
			t.Fatal("no tick within 10 s")
		}
	}
	close(stop)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Every did not return after stop was closed")
	}
}
