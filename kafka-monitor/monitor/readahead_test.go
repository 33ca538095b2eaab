package monitor

import (
	"context"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/segmentio/kafka-go"
)

func TestReadAheadWaitsForBytesGivenBack(t *testing.T) {
	r := newReadAhead(3 * messageOverhead)
	msg := kafka.Message{Value: make([]byte, messageOverhead)} // counts twice the overhead
	ctx := context.Background()
	if err := r.take(ctx, heldCost(&msg)); err != nil {
		t.Fatal(err)
	}
	taken := make(chan error, 1)
	go func() { taken <- r.take(ctx, heldCost(&msg)) }()
	select {
	case err := <-taken:
		t.Fatalf("took %d bytes beyond the budget (%d held of %d): %v", heldCost(&msg), r.heldBytes(), r.budget.Max(), err)
	case <-time.After(50 * time.Millisecond):
	}
	r.giveBack([]kafka.Message{msg})
	harness.WaitDone(t, "take after the bytes were given back", 5*time.Second, taken)
	if got := r.heldBytes(); got != heldCost(&msg) {
		t.Fatalf("%d bytes held, want %d", got, heldCost(&msg))
	}
}

func TestReadAheadTakesAMessageLargerThanTheBudgetWhenNothingIsHeld(t *testing.T) {
	r := newReadAhead(1024)
	huge := kafka.Message{Value: make([]byte, 1<<20)}
	if err := r.take(context.Background(), heldCost(&huge)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	small := kafka.Message{Value: []byte("{}")}
	if err := r.take(ctx, heldCost(&small)); err == nil {
		t.Fatal("took more while a message beyond the budget was held")
	}
	r.giveBack([]kafka.Message{huge})
	if got := r.heldBytes(); got != 0 {
		t.Fatalf("%d bytes held once the large message was given back, want 0", got)
	}
	if err := r.take(context.Background(), heldCost(&small)); err != nil {
		t.Fatal(err)
	}
	if got := r.heldBytes(); got != heldCost(&small) {
		t.Fatalf("%d bytes held, want %d", got, heldCost(&small))
	}
}
