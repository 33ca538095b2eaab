package answers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/kafkaclient"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
)

// Consumer reads the outbound topic, every partition, without a consumer
// group: each REST instance sees every answer (the original's group_id=None).
// It starts at the partitions' ends (or beginnings, with
// KAFKA_CONSUMER_AUTO_OFFSET_RESET earliest) as they are when it starts, so
// every answer to a request sent after Start returned is seen.
type Consumer struct {
	cfg     kafkaclient.Config
	client  *kafka.Client
	topic   string
	waiters *Waiters
	store   *Store
	log     *logfactory.Logger

	mu      sync.Mutex
	ctx     context.Context
	cancel  context.CancelFunc
	readers map[int]*kafka.Reader
	wg      sync.WaitGroup
}

// NewConsumer returns a consumer of topic delivering to waiters and store.
// client is used to look up the partitions' offsets.
func NewConsumer(cfg kafkaclient.Config, client *kafka.Client, topic string, waiters *Waiters, store *Store, log *logfactory.Logger) *Consumer {
	return &Consumer{cfg: cfg, client: client, topic: topic, waiters: waiters, store: store, log: log, readers: map[int]*kafka.Reader{}}
}

// Partitions returns how many partitions are being read.
func (c *Consumer) Partitions() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.readers)
}

// Start begins reading partitions 0..partitions-1 (those not read yet),
// after finding where each starts. It returns once every reader is
// positioned, so answers produced afterwards are not missed; call it again
// when partitions were added. The readers run until Close.
func (c *Consumer) Start(ctx context.Context, partitions int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ctx == nil {
		c.ctx, c.cancel = context.WithCancel(context.WithoutCancel(ctx))
	}
	// A partition added while running holds only new answers: read it all.
	fromFirst := c.cfg.StartAtEarliest || len(c.readers) > 0
	var missing []kafka.OffsetRequest
	for p := range partitions {
		switch {
		case c.readers[p] != nil:
		case fromFirst:
			missing = append(missing, kafka.FirstOffsetOf(p))
		default:
			missing = append(missing, kafka.LastOffsetOf(p))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	res, err := c.client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{c.topic: missing}})
	if err != nil {
		return fmt.Errorf("find the offsets of %s: %w", c.topic, err)
	}
	start := map[int]int64{}
	for _, po := range res.Topics[c.topic] {
		if po.Error != nil {
			return fmt.Errorf("find the offsets of %s/%d: %w", c.topic, po.Partition, po.Error)
		}
		start[po.Partition] = po.LastOffset
		if fromFirst {
			start[po.Partition] = po.FirstOffset
		}
	}
	for _, req := range missing {
		offset, ok := start[req.Partition]
		if !ok {
			return fmt.Errorf("find the offsets of %s/%d: not in the answer", c.topic, req.Partition)
		}
		r, err := c.cfg.NewPartitionReader(c.topic, req.Partition, offset)
		if err != nil {
			return err
		}
		c.readers[req.Partition] = r
		c.wg.Add(1)
		go c.read(c.ctx, req.Partition, r)
	}
	c.log.Debug("Reading answers", logfactory.Extra{"topic": c.topic, "partitions": len(c.readers)})
	return nil
}

// Resync moves a reader that is past the end of its partition back to the
// end. That happens when Kafka lost the topic's messages (a broker replaced
// without its data, the topic deleted and created again): the reader would
// otherwise wait until the partition grew back to its old offset, missing
// every answer until then.
func (c *Consumer) Resync(ctx context.Context) error {
	c.mu.Lock()
	readers := maps.Clone(c.readers)
	c.mu.Unlock()
	if len(readers) == 0 {
		return nil
	}
	reqs := make([]kafka.OffsetRequest, 0, len(readers))
	for p := range readers {
		reqs = append(reqs, kafka.LastOffsetOf(p))
	}
	res, err := c.client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{c.topic: reqs}})
	if err != nil {
		return fmt.Errorf("find the offsets of %s: %w", c.topic, err)
	}
	for _, po := range res.Topics[c.topic] {
		r := readers[po.Partition]
		if po.Error != nil || r == nil {
			continue
		}
		if at := r.Offset(); at > po.LastOffset {
			c.log.Warning("The answers partition lost its messages; reading from its end", logfactory.Extra{
				"topic": c.topic, "partition": po.Partition, "offset": at, "end": po.LastOffset})
			if err := r.SetOffset(po.LastOffset); err != nil {
				return fmt.Errorf("reposition %s/%d: %w", c.topic, po.Partition, err)
			}
		}
	}
	return nil
}

// Close stops the readers and waits for them.
func (c *Consumer) Close() {
	c.mu.Lock()
	if c.cancel != nil {
		c.cancel()
	}
	readers := c.readers
	c.readers = map[int]*kafka.Reader{}
	c.mu.Unlock()
	c.wg.Wait()
	for _, r := range readers {
		r.Close()
	}
}

// read hands every message of one partition to Handle. The reader
// reconnects by itself while Kafka is away.
func (c *Consumer) read(ctx context.Context, partition int, r *kafka.Reader) {
	defer c.wg.Done()
	for {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, context.Canceled) {
				return
			}
			c.log.Error("Failed to read answers from Kafka", logfactory.Extra{"topic": c.topic, "partition": partition, "error": err.Error()})
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			continue
		}
		c.Handle(m.Value)
	}
}

// Handle routes one outbound message: to the requests waiting for its uuid,
// else to the poll store. Messages without a string uuid are not answers to
// REST requests and are skipped.
func (c *Consumer) Handle(value []byte) {
	var probe struct {
		UUID any `json:"uuid"`
	}
	if err := json.Unmarshal(value, &probe); err != nil {
		c.log.Warning("Unparseable JSON Received from kafka", logfactory.Extra{"data": preview(value), "error": err.Error()})
		return
	}
	uuid, ok := probe.UUID.(string)
	if !ok || uuid == "" {
		c.log.Debug("Got message not intended for this process")
		return
	}
	if c.waiters.Deliver(uuid, value) {
		c.log.Debug("Found Kafka message from request", logfactory.Extra{"uuid": uuid})
		return
	}
	c.log.Debug("Got poll result", logfactory.Extra{"uuid": uuid})
	c.store.Save(uuid, value)
}

// preview keeps log lines of huge or binary messages readable.
func preview(b []byte) string {
	const n = 1000
	if len(b) > n {
		return fmt.Sprintf("%s...(%d bytes)", b[:n], len(b))
	}
	return string(b)
}
