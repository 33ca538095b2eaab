package monitor

import (
	"context"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/bytebudget"
	"github.com/segmentio/kafka-go"
)

// messageOverhead is what a message read ahead counts for besides its key
// and value: its struct, headers and the request it becomes.
const messageOverhead = 512

// readAhead bounds the bytes of the messages Run holds: read from Kafka and
// not yet stored and reported (READ_AHEAD_BYTES). The fetcher takes a
// message's bytes before handing it on and waits while the budget is
// spent; they are given back once its batch is reported. A message larger
// than the whole budget takes all of it, once nothing else is held, so
// that it cannot stop the monitor (bytebudget.Budget).
type readAhead struct {
	budget *bytebudget.Budget
}

func newReadAhead(limit int64) *readAhead {
	return &readAhead{budget: bytebudget.New(int(limit))}
}

// heldCost is what msg counts for in the budget.
func heldCost(msg *kafka.Message) int64 {
	return int64(len(msg.Key)+len(msg.Value)) + messageOverhead
}

// take waits until n bytes fit in the budget (all of it for n beyond it)
// and takes them; it fails only when ctx is done first.
func (r *readAhead) take(ctx context.Context, n int64) error {
	_, err := r.budget.Take(ctx, r.clip(n))
	return err
}

// clip is what n bytes take of the budget: at most all of it.
func (r *readAhead) clip(n int64) int {
	return int(min(n, int64(r.budget.Max())))
}

// giveBack returns the bytes of batch's messages to the budget.
func (r *readAhead) giveBack(batch []kafka.Message) {
	n := 0
	for i := range batch {
		n += r.clip(heldCost(&batch[i]))
	}
	r.budget.Give(n)
}

// heldBytes is how many bytes are taken now.
func (r *readAhead) heldBytes() int64 {
	held, _ := r.budget.State()
	return int64(held)
}
