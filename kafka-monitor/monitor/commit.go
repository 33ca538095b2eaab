package monitor

import (
	"context"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
)

// committer commits the offsets of stored batches in the background, so
// that a commit is on its way while the next batch is read, validated and
// stored. Batches stored while a commit is in flight go out together in
// the next one. A failed commit is logged; it only means redelivery.
type committer struct {
	r     *kafka.Reader
	marks *storedMarks // the marks of committed offsets are removed
	log   *logfactory.Logger
	in    chan []kafka.Message // per batch, the last message of each partition
	done  chan struct{}
}

// commitTimeout bounds one commit (a group rebalance may hold it up).
const commitTimeout = 10 * time.Second

func startCommitter(r *kafka.Reader, marks *storedMarks, log *logfactory.Logger) *committer {
	c := &committer{r: r, marks: marks, log: log, in: make(chan []kafka.Message, 16), done: make(chan struct{})}
	go c.loop()
	return c
}

// add queues a stored batch's offsets for commit. It blocks only when
// commits fall 16 batches behind.
func (c *committer) add(batch []kafka.Message) {
	c.in <- lastPerPartition(batch, nil)
}

// close commits what was added and stops.
func (c *committer) close() {
	close(c.in)
	<-c.done
}

func (c *committer) loop() {
	defer close(c.done)
	drainMerged(c.in, func(offsets, more []kafka.Message) []kafka.Message { return lastPerPartition(more, offsets) }, c.commit)
}

// commit commits offsets and forgets the marks of the requests they cover.
func (c *committer) commit(offsets []kafka.Message) {
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	defer cancel()
	if err := c.r.CommitMessages(ctx, offsets...); err != nil {
		c.log.Error("Failed to commit offsets; the requests stored since the last commit will be delivered again (and skipped)",
			logfactory.Extra{"error": err.Error(), "partitions": len(offsets)})
	} else if err := c.marks.forget(ctx, offsets); err != nil {
		c.log.Warning("Failed to remove the marks of committed requests; the next commit removes them",
			logfactory.Extra{"error": err.Error()})
	}
}

// drainMerged calls handle with each value received on in, merged (merge)
// with those already waiting behind it, until in is closed: a slow handle
// gets fewer, larger values instead of falling behind.
func drainMerged[T any](in <-chan T, merge func(acc, more T) T, handle func(T)) {
	for v := range in {
	more:
		for {
			select {
			case next, ok := <-in:
				if !ok {
					break more
				}
				v = merge(v, next)
			default:
				break more
			}
		}
		handle(v)
	}
}

// lastPerPartition adds to into the highest offset of each partition of
// msgs, keeping only what a commit needs (topic, partition, offset).
func lastPerPartition(msgs []kafka.Message, into []kafka.Message) []kafka.Message {
	for _, msg := range msgs {
		found := false
		for i := range into {
			if into[i].Topic == msg.Topic && into[i].Partition == msg.Partition {
				into[i].Offset = max(into[i].Offset, msg.Offset)
				found = true
				break
			}
		}
		if !found {
			into = append(into, kafka.Message{Topic: msg.Topic, Partition: msg.Partition, Offset: msg.Offset})
		}
	}
	return into
}
