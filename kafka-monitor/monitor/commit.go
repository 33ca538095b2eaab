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
	for offsets := range c.in {
	merge:
		for {
			select {
			case more, ok := <-c.in:
				if !ok {
					break merge
				}
				offsets = lastPerPartition(more, offsets)
			default:
				break merge
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
		if err := c.r.CommitMessages(ctx, offsets...); err != nil {
			c.log.Error("Failed to commit offsets; the requests stored since the last commit will be delivered again (and skipped)",
				logfactory.Extra{"error": err.Error(), "partitions": len(offsets)})
		} else if err := c.marks.forget(ctx, offsets); err != nil {
			c.log.Warning("Failed to remove the marks of committed requests; the next commit removes them",
				logfactory.Extra{"error": err.Error()})
		}
		cancel()
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
