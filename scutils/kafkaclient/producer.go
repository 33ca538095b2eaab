package kafkaclient

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"
)

// Producer sends messages for callers that wait for the broker's
// acknowledgement: an HTTP handler answering only once a request is safely
// in Kafka, a monitor deleting a request key only once its answer is out, a
// crawler acknowledging a page only once its result is published.
//
// It batches by group commit instead of lingering: a message goes out at
// once when a sender is idle, and the messages that arrive while every
// sender has a produce request in flight go together in the next requests
// (one per topic). A lone caller therefore waits one round trip, never a
// linger period, and many concurrent callers share produce requests.
// With ProducerConfig.Linger a batch also waits, from its first message's
// Send, up to that long for more: fewer, larger produce requests for
// callers whose own round trips are far longer (a crawler's fetches).
// (kafka-go's Writer, built for asynchronous streams, holds each batch until
// it is full or its linger expires, so synchronous callers would wait the
// linger every time.)
//
// Messages carry no key and are spread over their topic's partitions round
// robin, as the original's producers do; the partitions are those the
// client's metadata cache knows. Every acknowledged message is on every
// in-sync replica (acks=all).
type Producer struct {
	client    *kafka.Client
	cfg       ProducerConfig
	queue     chan *pending
	next      atomic.Uint64
	closeOnce sync.Once
	wg        sync.WaitGroup
	mu        sync.RWMutex // held for reading while enqueuing, for writing by Close
	closed    bool

	// gathering is held by the sender gathering the next batch, so that
	// with a linger the senders do not split the messages between them.
	gathering sync.Mutex
	carry     *pending // a message that did not fit the last batch; under gathering

	// With a linger: the messages Send queued that no batch took yet (the
	// carry included), and their sizes as a batch counts them; full is
	// signalled when they fill a batch, closing closed by Close. The
	// gathering sender waits for either or its linger, not for each
	// message: woken per message, it took a wake-up per crawled page.
	waitingN, waitingBytes atomic.Int64
	full, closing          chan struct{}

	partsMu sync.Mutex
	parts   map[string]partitions // by topic: what partition read last

	// produceClient is client with Timeout set, which kafka-go sends to the
	// broker (halved) as the time it may take to answer a produce request;
	// without it kafka-go asks for 500 ms, and a broker whose replicas take
	// longer answers REQUEST_TIMED_OUT with the records already appended,
	// which another attempt then appends again.
	produceClient *kafka.Client
}

// ProducerConfig tunes a Producer. Zero values take the defaults.
type ProducerConfig struct {
	// Senders is how many produce batches may be in flight at once
	// (default 4).
	Senders int
	// MaxBatchBytes bounds the size of one batch (default 1 MiB,
	// KAFKA_PRODUCER_MAX_REQUEST_SIZE), estimated generously from the
	// values; a single larger message still goes alone (and Kafka may
	// refuse it).
	MaxBatchBytes int
	// Timeout bounds the attempts at one produce request (default 30 s,
	// as Kafka's own producers' request.timeout.ms). Within it a request
	// that failed for a reason that may pass (a leader moving, a dropped
	// connection) is tried again on the next partition, three attempts at
	// most. The broker is given half of what is left of it to answer each
	// attempt. A request the broker did not answer in time may have been
	// appended all the same: a caller that sends it again (as Publisher
	// does) may publish it twice, so keep it well above the time a loaded
	// broker takes.
	Timeout time.Duration
	// Compression is the codec of the batches sent (Config.Compression;
	// 0: none).
	Compression kafka.Compression
	// Linger is how long a batch waits for more messages after its first
	// message was handed to Send, unless it fills first (0: it goes as
	// soon as a sender is free, with whatever waits then). Each message
	// then waits up to Linger longer for its acknowledgement.
	Linger time.Duration
}

// DefaultProduceTimeout is ProducerConfig.Timeout's default.
const DefaultProduceTimeout = 30 * time.Second

// ErrClosed is returned by Send after Close.
var ErrClosed = errors.New("producer closed")

// maxBatchMessages bounds the messages of one batch.
const maxBatchMessages = 1000

// maxAttempts bounds the attempts at one produce request.
const maxAttempts = 3

// Size estimates: a record adds at most this much to its value (lengths,
// offset and time deltas as varints, attributes), a request this much to its
// records (request, topic, partition and batch headers).
const (
	recordOverhead  = 64
	requestOverhead = 1024
)

// partitions are a topic's partitions as the metadata listed them at a
// time.
type partitions struct {
	ids []int
	at  time.Time
}

// partitionsTTL is how long a Producer uses a topic's partitions before
// it reads the client's metadata again; a failed produce request reads it
// again at once. Reading it per request, even from the client's cache,
// was about 2% of a crawler's CPU (pprof of BenchmarkCrawlCost). A second,
// as the transport's own metadata (MetadataTTL): new partitions are used
// within two seconds.
const partitionsTTL = time.Second

// pending is one message and its caller's result channel (Send) or
// callback (SendThen).
type pending struct {
	topic string
	value []byte
	done  chan error
	then  func(error)
	at    time.Time // when Send took it; set with a linger only
}

var donePool = sync.Pool{New: func() any { return make(chan error, 1) }}

// NewClient returns a client on the transport every component dials Kafka
// with (KAFKA_CONN_TIMEOUT, the client id, KAFKA_PRODUCER_BUFFER_BYTES), its
// cluster metadata refreshed every second. It sets no timeout of its own:
// each call's context carries its deadline.
func (c Config) NewClient() *kafka.Client {
	return &kafka.Client{Addr: kafka.TCP(c.Brokers...), Transport: c.transport()}
}

// NewProducer starts a producer's senders on client (which the caller keeps
// and may share); Close stops them.
func NewProducer(client *kafka.Client, cfg ProducerConfig) *Producer {
	if cfg.Senders < 1 {
		cfg.Senders = 4
	}
	if cfg.MaxBatchBytes <= 0 {
		cfg.MaxBatchBytes = 1 << 20
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultProduceTimeout
	}
	produceClient := *client
	produceClient.Timeout = cfg.Timeout
	p := &Producer{client: client, produceClient: &produceClient, cfg: cfg, queue: make(chan *pending, 4*maxBatchMessages),
		full: make(chan struct{}, 1), closing: make(chan struct{})}
	p.wg.Add(cfg.Senders)
	for range cfg.Senders {
		go p.sender()
	}
	return p
}

// Send produces value to topic and returns once Kafka acknowledged it, or
// with the error that prevented it. If ctx ends first Send returns ctx's
// error, and the message may still be sent. value must not change until
// Send returns.
func (p *Producer) Send(ctx context.Context, topic string, value []byte) error {
	done := donePool.Get().(chan error)
	if err := p.enqueue(ctx, &pending{topic: topic, value: value, done: done}); err != nil {
		donePool.Put(done)
		return err
	}
	select {
	case err := <-done:
		donePool.Put(done) // only reused once its result has been taken
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// SendThen is Send without waiting for Kafka: it returns once the message
// is queued (or with ErrClosed, or ctx's error while the queue is full,
// then is not called), and then is told what Send would return, by the
// goroutine that read Kafka's answer for the message's whole batch: it
// must not wait for anything. ctx ending afterwards does not call then;
// the message may still be sent. value must not change until then is
// called. A caller that waits for its answer, as Send's do, is woken
// once per message; one that goes on with other work is not.
func (p *Producer) SendThen(ctx context.Context, topic string, value []byte, then func(error)) error {
	return p.enqueue(ctx, &pending{topic: topic, value: value, then: then})
}

// enqueue hands m to the senders.
func (p *Producer) enqueue(ctx context.Context, m *pending) error {
	if p.cfg.Linger > 0 {
		m.at = time.Now()
	}
	p.mu.RLock()
	if p.closed {
		p.mu.RUnlock()
		return ErrClosed
	}
	select {
	case p.queue <- m:
		p.mu.RUnlock()
		if p.cfg.Linger > 0 {
			p.queued(m)
		}
		return nil
	case <-ctx.Done():
		p.mu.RUnlock()
		return ctx.Err()
	}
}

// Close stops accepting messages, sends those already accepted and waits
// for the senders to finish. It does not close the client.
func (p *Producer) Close() {
	p.closeOnce.Do(func() {
		p.mu.Lock()
		p.closed = true
		close(p.queue)
		close(p.closing)
		p.mu.Unlock()
	})
	p.wg.Wait()
}

// sender produces the batches it gathers, one request per topic, the
// requests in parallel, until the producer is closed and its queue empty.
func (p *Producer) sender() {
	defer p.wg.Done()
	batch := make([]*pending, 0, 64)
	for {
		var ok bool
		if batch, ok = p.gather(batch[:0]); !ok {
			return
		}
		p.produceByTopic(batch)
		clear(batch)
	}
}

// queued counts m among the messages waiting for a batch, and tells the
// gathering sender when they fill one (a batch that cannot take the next
// message, or one of maxBatchMessages). With a linger only.
func (p *Producer) queued(m *pending) {
	bytes := p.waitingBytes.Add(int64(recordOverhead + len(m.value)))
	if n := p.waitingN.Add(1); n >= maxBatchMessages || requestOverhead+bytes > int64(p.cfg.MaxBatchBytes) {
		select {
		case p.full <- struct{}{}:
		default: // told already
		}
	}
}

// filled reports whether the messages waiting fill a batch (queued),
// dropping a signal left from a batch gone already.
func (p *Producer) filled() bool {
	select {
	case <-p.full:
	default:
	}
	return p.waitingN.Load() >= maxBatchMessages || requestOverhead+p.waitingBytes.Load() > int64(p.cfg.MaxBatchBytes)
}

// gather appends the next batch to batch: the first waiting message (or
// the one the last batch had no room for), then whatever else waits, up
// to the batch limits, once Linger has passed since the first message's
// Send or the messages waiting fill a batch (queued). It is false once
// the producer is closed and every message taken. One sender gathers at
// a time.
func (p *Producer) gather(batch []*pending) ([]*pending, bool) {
	p.gathering.Lock()
	defer p.gathering.Unlock()
	first := p.carry
	p.carry = nil
	if first == nil {
		var ok bool
		if first, ok = <-p.queue; !ok {
			return batch, false
		}
	}
	if p.cfg.Linger > 0 {
		defer func() { p.taken(batch) }()
		if wait := time.Until(first.at.Add(p.cfg.Linger)); wait > 0 && !p.filled() {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-p.full:
			case <-p.closing:
			}
			t.Stop()
		}
	}
	batch = append(batch, first)
	size := requestOverhead + recordOverhead + len(first.value)
	for len(batch) < maxBatchMessages {
		var m *pending
		var ok bool
		select {
		case m, ok = <-p.queue:
		default:
			return batch, true
		}
		if !ok { // closed: what was taken goes at once
			return batch, true
		}
		if size+recordOverhead+len(m.value) > p.cfg.MaxBatchBytes {
			p.carry = m
			return batch, true
		}
		batch = append(batch, m)
		size += recordOverhead + len(m.value)
	}
	return batch, true
}

// taken uncounts batch's messages from those waiting (queued).
func (p *Producer) taken(batch []*pending) {
	var bytes int64
	for _, m := range batch {
		bytes += int64(recordOverhead + len(m.value))
	}
	p.waitingBytes.Add(-bytes)
	p.waitingN.Add(-int64(len(batch)))
}

// produceByTopic produces a batch, one request per topic, and tells each
// message's caller its request's result.
func (p *Producer) produceByTopic(batch []*pending) {
	topic := batch[0].topic
	same := true
	for _, m := range batch[1:] {
		if m.topic != topic {
			same = false
			break
		}
	}
	if same { // the usual case: no grouping, no goroutines
		p.finish(batch, p.produce(topic, batch))
		return
	}
	byTopic := map[string][]*pending{}
	var order []string
	for _, m := range batch {
		if _, seen := byTopic[m.topic]; !seen {
			order = append(order, m.topic)
		}
		byTopic[m.topic] = append(byTopic[m.topic], m)
	}
	var wg sync.WaitGroup
	for _, t := range order {
		wg.Go(func() { p.finish(byTopic[t], p.produce(t, byTopic[t])) })
	}
	wg.Wait()
}

// finish tells each message's caller err: Send's on its channel,
// SendThen's by calling its then.
func (p *Producer) finish(msgs []*pending, err error) {
	for _, m := range msgs {
		if m.then != nil {
			m.then(err)
		} else {
			m.done <- err
		}
	}
}

// produce sends one topic's messages in one request, trying the next
// partition after a failure, until the timeout passes, the attempts are used
// up or the error is not worth retrying.
func (p *Producer) produce(topic string, msgs []*pending) error {
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.Timeout)
	defer cancel()
	now := time.Now()
	records := make([]kafka.Record, len(msgs))
	backoff := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		partition, err := p.partition(ctx, topic)
		if err == nil {
			for i, m := range msgs {
				// A record's value is a reader that sending consumes: fresh ones per attempt.
				records[i] = kafka.Record{Time: now, Value: kafka.NewBytes(m.value)}
			}
			var res *kafka.ProduceResponse
			res, err = p.produceClient.Produce(ctx, &kafka.ProduceRequest{
				Topic:        topic,
				Partition:    partition,
				RequiredAcks: kafka.RequireAll,
				Records:      kafka.NewRecordReader(records...),
				Compression:  p.cfg.Compression,
			})
			if err == nil && res != nil {
				err = res.Error
			}
			if err == nil {
				return nil
			}
		}
		p.forgetPartitions(topic)
		err = fmt.Errorf("produce %d messages to %s/%d: %w", len(msgs), topic, partition, err)
		if attempt >= maxAttempts || !retriable(err) {
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

// partition picks the next of topic's partitions, round robin, from the
// client's cached metadata (no round trip once the client knows the
// topic), read again after partitionsTTL or a failure.
func (p *Producer) partition(ctx context.Context, topic string) (int, error) {
	p.partsMu.Lock()
	known, ok := p.parts[topic]
	p.partsMu.Unlock()
	if !ok || time.Since(known.at) >= partitionsTTL {
		ids, err := p.readPartitions(ctx, topic)
		if err != nil {
			return 0, err
		}
		known = partitions{ids: ids, at: time.Now()}
		p.partsMu.Lock()
		if p.parts == nil {
			p.parts = map[string]partitions{}
		}
		p.parts[topic] = known
		p.partsMu.Unlock()
	}
	return known.ids[(p.next.Add(1)-1)%uint64(len(known.ids))], nil
}

// forgetPartitions makes the next request to topic read its partitions
// again.
func (p *Producer) forgetPartitions(topic string) {
	p.partsMu.Lock()
	delete(p.parts, topic)
	p.partsMu.Unlock()
}

// readPartitions lists topic's partitions from the client's metadata.
func (p *Producer) readPartitions(ctx context.Context, topic string) ([]int, error) {
	md, err := p.client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return nil, fmt.Errorf("read the metadata of %s: %w", topic, err)
	}
	for _, t := range md.Topics {
		if t.Name != topic {
			continue
		}
		if t.Error != nil {
			return nil, t.Error
		}
		if len(t.Partitions) == 0 {
			return nil, kafka.UnknownTopicOrPartition
		}
		ids := make([]int, len(t.Partitions))
		for i, pt := range t.Partitions {
			ids[i] = pt.ID
		}
		return ids, nil
	}
	return nil, kafka.UnknownTopicOrPartition
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
