// Package producer sends messages to one Kafka topic for callers that wait
// for the broker's acknowledgement, such as HTTP handlers answering only once
// a request is safely in Kafka.
//
// It batches by group commit instead of lingering: a message goes out at
// once when a sender is idle, and the messages that arrive while every
// sender has a produce request in flight go together in the next request.
// A lone caller therefore waits one round trip, never a linger period, and
// many concurrent callers share produce requests. (kafka-go's Writer, built
// for asynchronous streams, holds each batch until it is full or its linger
// expires, so synchronous callers would wait the linger every time.)
//
// Messages carry no key and are spread over the topic's partitions round
// robin, as the original REST service's producer does.
package producer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"
)

// ErrClosed is returned by Send after Close.
var ErrClosed = errors.New("producer closed")

// Config describes a Producer. Client and Topic are required.
type Config struct {
	// Client sends the produce requests (its Transport dials the brokers).
	Client *kafka.Client
	// Topic receives every message.
	Topic string
	// Partitions is the topic's partition count (default 1); SetPartitions
	// changes it later.
	Partitions int
	// Senders is how many produce requests may be in flight at once
	// (default: Partitions, at least 2).
	Senders int
	// MaxBatchBytes bounds the size of one produce request (default 1 MiB,
	// KAFKA_PRODUCER_MAX_REQUEST_SIZE), estimated generously from the values;
	// a single larger message still goes alone (and Kafka may refuse it).
	MaxBatchBytes int
	// Timeout bounds one produce request, retries included (default 10 s).
	Timeout time.Duration
	// Acks is the acknowledgement required (default kafka.RequireAll, so an
	// acknowledged message is on every in-sync replica).
	Acks kafka.RequiredAcks
}

// maxBatchMessages bounds the messages of one produce request.
const maxBatchMessages = 1000

// Size estimates: a record adds at most this much to its value (lengths,
// offset and time deltas as varints, attributes), a request this much to its
// records (request, topic, partition and batch headers).
const (
	recordOverhead  = 64
	requestOverhead = 1024
)

// Producer sends messages with group commit. It is safe for concurrent use.
type Producer struct {
	cfg        Config
	queue      chan *pending
	partitions atomic.Int64
	next       atomic.Uint64
	closeOnce  sync.Once
	wg         sync.WaitGroup
	mu         sync.RWMutex // held for reading while enqueuing, for writing by Close
	closed     bool
}

// pending is one message and its caller's result channel.
type pending struct {
	value []byte
	done  chan error
}

var donePool = sync.Pool{New: func() any { return make(chan error, 1) }}

// New starts a producer's senders; Close stops them.
func New(cfg Config) *Producer {
	if cfg.Partitions < 1 {
		cfg.Partitions = 1
	}
	if cfg.Senders < 1 {
		cfg.Senders = max(cfg.Partitions, 2)
	}
	if cfg.MaxBatchBytes <= 0 {
		cfg.MaxBatchBytes = 1 << 20
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Acks == 0 {
		cfg.Acks = kafka.RequireAll
	}
	p := &Producer{cfg: cfg, queue: make(chan *pending, 4*maxBatchMessages)}
	p.partitions.Store(int64(cfg.Partitions))
	p.wg.Add(cfg.Senders)
	for range cfg.Senders {
		go p.sender()
	}
	return p
}

// SetPartitions changes the partition count messages are spread over (when
// partitions were added to the topic).
func (p *Producer) SetPartitions(n int) {
	if n >= 1 {
		p.partitions.Store(int64(n))
	}
}

// Send produces value and returns once Kafka acknowledged it, or with the
// error that prevented it. If ctx ends first Send returns ctx's error, and
// the message may still be sent. value must not change until Send returns.
func (p *Producer) Send(ctx context.Context, value []byte) error {
	done := donePool.Get().(chan error)
	m := &pending{value: value, done: done}
	p.mu.RLock()
	if p.closed {
		p.mu.RUnlock()
		donePool.Put(done)
		return ErrClosed
	}
	select {
	case p.queue <- m:
		p.mu.RUnlock()
	case <-ctx.Done():
		p.mu.RUnlock()
		donePool.Put(done)
		return ctx.Err()
	}
	select {
	case err := <-done:
		donePool.Put(done) // only reused once its result has been taken
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops accepting messages, sends those already accepted and waits
// for the senders to finish.
func (p *Producer) Close() {
	p.closeOnce.Do(func() {
		p.mu.Lock()
		p.closed = true
		close(p.queue)
		p.mu.Unlock()
	})
	p.wg.Wait()
}

// sender takes the first waiting message, adds whatever else is already
// waiting (up to the batch limits) and produces them in one request.
func (p *Producer) sender() {
	defer p.wg.Done()
	var carry *pending // a message that did not fit the previous batch
	batch := make([]*pending, 0, 64)
	for {
		first := carry
		carry = nil
		if first == nil {
			var ok bool
			if first, ok = <-p.queue; !ok {
				return
			}
		}
		batch = append(batch[:0], first)
		size := requestOverhead + recordOverhead + len(first.value)
	fill:
		for len(batch) < maxBatchMessages {
			select {
			case m, ok := <-p.queue:
				if !ok {
					break fill
				}
				if size+recordOverhead+len(m.value) > p.cfg.MaxBatchBytes {
					carry = m
					break fill
				}
				batch = append(batch, m)
				size += recordOverhead + len(m.value)
			default:
				break fill
			}
		}
		err := p.produce(batch)
		for i, m := range batch {
			m.done <- err
			batch[i] = nil
		}
	}
}

// produce sends one batch, trying the next partition after a failure, until
// the timeout passes or the error is not worth retrying.
func (p *Producer) produce(batch []*pending) error {
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.Timeout)
	defer cancel()
	now := time.Now()
	records := make([]kafka.Record, len(batch))
	backoff := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		for i, m := range batch {
			// A record's value is a reader that sending consumes: fresh ones per attempt.
			records[i] = kafka.Record{Time: now, Value: kafka.NewBytes(m.value)}
		}
		partition := int(p.next.Add(1) % uint64(p.partitions.Load()))
		res, err := p.cfg.Client.Produce(ctx, &kafka.ProduceRequest{
			Topic:        p.cfg.Topic,
			Partition:    partition,
			RequiredAcks: p.cfg.Acks,
			Records:      kafka.NewRecordReader(records...),
		})
		if err == nil && res != nil {
			err = res.Error
		}
		if err == nil {
			return nil
		}
		err = fmt.Errorf("produce %d messages to %s/%d: %w", len(batch), p.cfg.Topic, partition, err)
		if attempt >= 3 || !retriable(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(backoff):
		}
		backoff *= 2
	}
}

// retriable reports whether another attempt may succeed: Kafka's temporary
// errors (a leader moving) and dropped connections, not a timeout.
func retriable(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return false
	}
	var temp interface{ Temporary() bool }
	if errors.As(err, &temp) {
		return temp.Temporary()
	}
	return true
}
