package kafkaclient

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/bytebudget"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
)

// Publisher sends a component's answers or results to one topic family:
// "<prefix>.<family>_firehose" always and, with KAFKA_APPID_TOPICS, also
// "<prefix>.<family>_<appid>" (family "outbound" for the Redis Monitor,
// "crawled" for crawlers). Topics are created when first used.
//
// Publish is synchronous: it returns once Kafka has acknowledged every copy,
// so a caller can acknowledge its own input afterwards (at-least-once);
// PublishThen tells a callback instead, so its caller need not wait.
// Messages go through a Producer, so concurrent Publish calls share produce
// requests, waiting Config.PublishLinger at most for others to join them
// (none by default).
type Publisher struct {
	cfg         Config
	family      string
	firehose    []string // {FirehoseTopic()}: never changed, shared by the messages sent to it alone
	appIDTopics bool
	log         *logfactory.Logger
	client      *kafka.Client
	producer    *Producer

	mu      sync.Mutex
	ensured map[string]bool

	held *bytebudget.Budget // Config.PublishHeldBytes; nil: no bound

	// MaxBackoff bounds the wait between attempts while Kafka is away (5 s).
	MaxBackoff time.Duration
	// OnError, when set, is told of every attempt that Kafka failed,
	// retried or not (for metrics). Set it before the first Publish.
	OnError func(error)
}

// publisherSenders is how many produce requests a Publisher has in flight.
// Fewer senders make larger batches, and each produce request costs the
// same whatever it carries (building it, the metadata lookup, the system
// calls, the broker's side): a crawler publishing every page spent about 5%
// less CPU per page with 2 than with the Producer's default of 4
// (BenchmarkCrawlCost, interleaved), at the same pages per second. Two,
// not one, so that one slow request does not hold every result.
const publisherSenders = 2

// PublishHeldBound is a bound for PublishHeldBytes that costs a Publisher
// no throughput: what its produce requests can carry at once, those in
// flight (2) and the one gathering, each at most KAFKA_PRODUCER_MAX_REQUEST_SIZE
// (3 MiB by default). A value beyond it would wait in the producer's queue
// anyway.
func (c Config) PublishHeldBound() int { return (publisherSenders + 1) * c.MaxRequestBytes }

// NewPublisher returns a Publisher for topic family family (e.g. "outbound").
// log receives one line per failed attempt; it may be nil.
func (c Config) NewPublisher(family string, appIDTopics bool, log *logfactory.Logger) *Publisher {
	client := c.NewClient()
	p := &Publisher{
		cfg: c, family: family, appIDTopics: appIDTopics, log: log,
		client: client, producer: NewProducer(client, ProducerConfig{Senders: publisherSenders, MaxBatchBytes: c.MaxRequestBytes, Compression: c.Compression,
			Linger: c.PublishLinger}),
		ensured: map[string]bool{}, MaxBackoff: 5 * time.Second,
	}
	p.firehose = []string{p.FirehoseTopic()}
	if c.PublishHeldBytes > 0 {
		p.held = bytebudget.New(c.PublishHeldBytes)
	}
	return p
}

// FirehoseTopic is "<prefix>.<family>_firehose".
func (p *Publisher) FirehoseTopic() string { return p.cfg.Topic(p.family + "_firehose") }

// AppIDTopic is "<prefix>.<family>_<appid>".
func (p *Publisher) AppIDTopic(appID string) string { return p.cfg.Topic(p.family + "_" + appID) }

// ErrPermanent wraps failures that no retry can fix (a message larger than
// the broker accepts, an invalid topic name).
var ErrPermanent = errors.New("cannot be sent")

// validTopic is Kafka's rule for topic names.
var validTopic = regexp.MustCompile(`^[a-zA-Z0-9._-]{1,249}$`)

// Topics returns the topics a message of appID goes to: the firehose and,
// with appid topics on and a usable appid, the appid's topic.
func (p *Publisher) Topics(appID string) []string { return slices.Clone(p.topics(appID)) }

// topics is Topics, shared and never to be changed: p.firehose when the
// message goes to the firehose alone (a crawler's every page unless
// KAFKA_APPID_TOPICS), which then costs no allocation.
func (p *Publisher) topics(appID string) []string {
	if !p.appIDTopics || appID == "" {
		return p.firehose
	}
	t := p.AppIDTopic(appID)
	if !validTopic.MatchString(t) {
		if p.log != nil {
			p.log.Warning("Appid cannot be part of a Kafka topic name; sent to the firehose only", logfactory.Extra{"appid": appID, "topic": t})
		}
		return p.firehose
	}
	return []string{p.firehose[0], t}
}

// Publish sends value to Topics(appID). While Kafka is unreachable it
// retries with back-off, sending again only to the topics that have not
// acknowledged it yet; it fails only when ctx ends, the publisher is closed
// (ErrClosed) or the failure is permanent (errors.Is(err, ErrPermanent)).
func (p *Publisher) Publish(ctx context.Context, appID string, value []byte) error {
	return p.PublishHeld(ctx, appID, value, nil)
}

// PublishHeld is Publish, calling held (unless nil) once value counts in
// the bytes the publisher holds, before its first attempt: with
// Config.PublishHeldBytes, Publish first waits until value fits in what
// the others hold (all of the bound for a value larger than it), in
// turn; value counts until Publish returns. held is not called when
// Publish fails first (ctx ended, or a value that can never be sent).
// A crawler frees a page's processing slot there: its body is dead, and
// what it holds until Kafka acknowledges is value, counted in the bound.
func (p *Publisher) PublishHeld(ctx context.Context, appID string, value []byte, held func()) error {
	done := make(chan error, 1)
	p.PublishThen(ctx, appID, value, held, func(err error) { done <- err })
	return <-done
}

// PublishThen is PublishHeld without waiting for Kafka: it returns once
// value counts in what the publisher holds and its first attempt is
// queued (waiting for room as PublishHeld does: a caller that publishes
// faster than Kafka takes waits here), and then is told, exactly once,
// what PublishHeld would return. then is called by the goroutine that
// read Kafka's answer (or that waited out a back-off, or ends ctx's
// work), or before PublishThen returns when it failed first; it must not
// wait for anything. value counts until then is called, and must not
// change until then. Retries while Kafka is away go as PublishHeld's,
// from a goroutine of their own during each back-off. A crawler's worker
// goes on to its next request at once, where waiting for Kafka's
// acknowledgement cost it a wake-up per page.
func (p *Publisher) PublishThen(ctx context.Context, appID string, value []byte, held func(), then func(error)) {
	if size := recordSize(value); size > p.cfg.MaxRequestBytes {
		then(fmt.Errorf("%w: a %d-byte message is more than KAFKA_PRODUCER_MAX_REQUEST_SIZE (%d)", ErrPermanent, size, p.cfg.MaxRequestBytes))
		return
	}
	pb := &publishing{p: p, ctx: ctx, value: value, then: then, backoff: 100 * time.Millisecond}
	if p.held != nil {
		n, err := p.held.Take(ctx, len(value))
		if err != nil {
			then(err)
			return
		}
		pb.n = n
	}
	if held != nil {
		held()
	}
	pb.topics = p.topics(appID)
	if ctx.Done() != nil {
		pb.stop = context.AfterFunc(ctx, func() { pb.end(ctx.Err()) })
	}
	pb.attempt()
}

// publishing is one PublishThen under way: its attempts, each sending
// value to the topics that have not acknowledged it yet, until one
// succeeds, the failure is for good, or ctx ends.
type publishing struct {
	p       *Publisher
	ctx     context.Context
	topics  []string
	value   []byte
	n       int // bytes held (Publisher.held)
	then    func(error)
	backoff time.Duration
	stop    func() bool // the context.AfterFunc that ends it with ctx

	over atomic.Bool // then was called

	// An attempt's sends to several topics: those left, those failed.
	mu     sync.Mutex
	left   int
	failed []string
	errs   []error
}

// attempt sends value to the topics left (creating those not known to
// exist first), without waiting.
func (pb *publishing) attempt() {
	if err := pb.p.ensure(pb.ctx, pb.topics); err != nil {
		pb.failedWith(err)
		return
	}
	if len(pb.topics) == 1 {
		if err := pb.p.producer.SendThen(pb.ctx, pb.topics[0], pb.value, pb.sentOne); err != nil {
			pb.failedWith(err)
		}
		return
	}
	topics := pb.topics
	pb.mu.Lock()
	pb.left, pb.failed, pb.errs = len(topics), nil, nil
	pb.mu.Unlock()
	for _, t := range topics {
		if err := pb.p.producer.SendThen(pb.ctx, t, pb.value, func(err error) { pb.sentTo(t, err) }); err != nil {
			pb.sentTo(t, err)
		}
	}
}

// sentOne is Kafka's answer for the one topic.
func (pb *publishing) sentOne(err error) {
	if err == nil {
		pb.end(nil)
		return
	}
	pb.failedWith(err)
}

// sentTo is Kafka's answer (or the send's failure) for topic t, one of
// several: the last answer of an attempt ends it, with the topics that
// failed left for the next.
func (pb *publishing) sentTo(t string, err error) {
	pb.mu.Lock()
	if err != nil {
		pb.failed = append(pb.failed, t)
		pb.errs = append(pb.errs, err)
	}
	pb.left--
	last := pb.left == 0
	failed, errs := pb.failed, pb.errs
	pb.mu.Unlock()
	if !last {
		return
	}
	if len(failed) == 0 {
		pb.end(nil)
		return
	}
	pb.topics = failed
	pb.failedWith(errors.Join(errs...))
}

// failedWith ends an attempt that failed with err: the publishing ends
// when ctx ended, the publisher is closed or the failure is for good;
// otherwise the next attempt goes after the back-off (100 ms, doubling
// to MaxBackoff), from a goroutine that waits it out.
func (pb *publishing) failedWith(err error) {
	p := pb.p
	if errors.Is(err, kafka.UnknownTopicOrPartition) {
		p.forget(pb.topics) // deleted, or the broker lost its state: create again
	}
	if pb.ctx.Err() != nil {
		pb.end(pb.ctx.Err())
		return
	}
	if errors.Is(err, ErrClosed) {
		pb.end(err)
		return
	}
	if p.OnError != nil {
		p.OnError(err)
	}
	if permanent(err) {
		pb.end(fmt.Errorf("%w: %v", ErrPermanent, err))
		return
	}
	if p.log != nil {
		p.log.Error("Failed to send to Kafka; retrying", logfactory.Extra{"error": err.Error(), "retry_in": pb.backoff.String()})
	}
	wait := pb.backoff
	pb.backoff = min(pb.backoff*2, p.MaxBackoff)
	go func() {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-pb.ctx.Done():
			pb.end(pb.ctx.Err())
		case <-t.C:
			if !pb.over.Load() {
				pb.attempt()
			}
		}
	}()
}

// end tells the caller err, once: value no longer counts in what the
// publisher holds.
func (pb *publishing) end(err error) {
	if pb.over.Swap(true) {
		return
	}
	if pb.stop != nil {
		pb.stop()
	}
	if pb.n > 0 {
		pb.p.held.Give(pb.n)
	}
	pb.then(err)
}

// Held is the bytes of values Publish calls hold (at most
// Config.PublishHeldBytes, when set; 0 without a bound, uncounted) and how
// many Publish calls wait for room.
func (p *Publisher) Held() (bytes, waiting int) {
	if p.held == nil {
		return 0, 0
	}
	return p.held.State()
}

// recordSize is a keyless record's size as kafka-go counts it: a record
// larger than a produce request may be is refused before it is sent.
func recordSize(value []byte) int { return len(value) + 23 }

// permanent reports whether the broker refused a message for good.
func permanent(err error) bool {
	return errors.Is(err, kafka.MessageSizeTooLarge) || errors.Is(err, kafka.InvalidTopic) || errors.Is(err, kafka.RecordListTooLarge)
}

// ensure creates the topics not yet known to exist.
func (p *Publisher) ensure(ctx context.Context, topics []string) error {
	p.mu.Lock()
	var missing []TopicSpec
	for _, t := range topics {
		if !p.ensured[t] {
			missing = append(missing, TopicSpec{Name: t})
		}
	}
	p.mu.Unlock()
	if len(missing) == 0 {
		return nil
	}
	tctx, cancel := context.WithTimeout(ctx, p.cfg.ConnTimeout)
	defer cancel()
	if err := p.cfg.EnsureTopicsWith(tctx, p.client, missing...); err != nil {
		return err
	}
	p.mu.Lock()
	for _, t := range missing {
		p.ensured[t.Name] = true
	}
	p.mu.Unlock()
	return nil
}

func (p *Publisher) forget(topics []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, t := range topics {
		delete(p.ensured, t)
	}
}

// Close sends the messages already accepted, then closes the connections.
// Publish calls after Close fail with ErrClosed.
func (p *Publisher) Close() error {
	p.producer.Close()
	if t, ok := p.client.Transport.(*kafka.Transport); ok {
		t.CloseIdleConnections()
	}
	return nil
}
