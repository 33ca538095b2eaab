package kafkaclient

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
)

// Publisher sends a component's answers or results to one topic family:
// "<prefix>.<family>_firehose" always and, with KAFKA_APPID_TOPICS, also
// "<prefix>.<family>_<appid>" (family "outbound" for the Redis Monitor,
// "crawled" for crawlers). Topics are created when first used.
//
// Publish is synchronous: it returns once Kafka has acknowledged every copy,
// so a caller can acknowledge its own input afterwards (at-least-once).
// Concurrent Publish calls are batched together by the underlying writer,
// which waits at most a millisecond for more messages (less when
// KAFKA_PRODUCER_BATCH_LINGER_MS says so): a synchronous caller would
// otherwise wait the whole linger on every message.
type Publisher struct {
	cfg         Config
	family      string
	appIDTopics bool
	log         *logfactory.Logger
	w           *kafka.Writer

	mu      sync.Mutex
	ensured map[string]bool

	// MaxBackoff bounds the wait between attempts while Kafka is away (5 s).
	MaxBackoff time.Duration
}

// NewPublisher returns a Publisher for topic family family (e.g. "outbound").
// log receives one line per failed attempt; it may be nil.
func (c Config) NewPublisher(family string, appIDTopics bool, log *logfactory.Logger) *Publisher {
	w := c.NewWriter("")
	w.BatchTimeout = min(w.BatchTimeout, time.Millisecond)
	return &Publisher{
		cfg: c, family: family, appIDTopics: appIDTopics, log: log,
		w: w, ensured: map[string]bool{}, MaxBackoff: 5 * time.Second,
	}
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
func (p *Publisher) Topics(appID string) []string {
	topics := []string{p.FirehoseTopic()}
	if p.appIDTopics && appID != "" {
		if t := p.AppIDTopic(appID); validTopic.MatchString(t) {
			topics = append(topics, t)
		} else if p.log != nil {
			p.log.Warning("Appid cannot be part of a Kafka topic name; sent to the firehose only", logfactory.Extra{"appid": appID, "topic": t})
		}
	}
	return topics
}

// Publish sends value to Topics(appID). While Kafka is unreachable it
// retries with back-off; it fails only when ctx ends or the failure is
// permanent (errors.Is(err, ErrPermanent)).
func (p *Publisher) Publish(ctx context.Context, appID string, value []byte) error {
	topics := p.Topics(appID)
	msgs := make([]kafka.Message, len(topics))
	for i, t := range topics {
		msgs[i] = kafka.Message{Topic: t, Value: value}
	}
	return p.retry(ctx, func(ctx context.Context) error {
		if err := p.ensure(ctx, topics); err != nil {
			return err
		}
		err := p.w.WriteMessages(ctx, msgs...)
		if errors.Is(err, kafka.UnknownTopicOrPartition) {
			p.forget(topics) // deleted, or the broker lost its state: create again
		}
		return err
	})
}

func (p *Publisher) retry(ctx context.Context, attempt func(context.Context) error) error {
	backoff := 100 * time.Millisecond
	for {
		err := attempt(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if permanent(err) {
			return fmt.Errorf("%w: %v", ErrPermanent, err)
		}
		if p.log != nil {
			p.log.Error("Failed to send to Kafka; retrying", logfactory.Extra{"error": err.Error(), "retry_in": backoff.String()})
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		backoff = min(backoff*2, p.MaxBackoff)
	}
}

func permanent(err error) bool {
	var tooLarge kafka.MessageTooLargeError
	return errors.As(err, &tooLarge) || errors.Is(err, kafka.MessageSizeTooLarge) ||
		errors.Is(err, kafka.InvalidTopic) || errors.Is(err, kafka.RecordListTooLarge)
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
	if err := p.cfg.EnsureTopics(tctx, missing...); err != nil {
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

// Close flushes and closes the writer.
func (p *Publisher) Close() error { return p.w.Close() }
