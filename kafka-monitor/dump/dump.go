// Package dump is the logic of kafkadump, the Kafka Monitor's topic utility
// for watching the messages that flow through a Scrapy Cluster: List names
// the cluster's topics and Dump prints a topic's messages as they arrive.
//
// Dump reads every partition of the topic. Without a consumer group (the
// default, as the original's) it reads each partition directly from the
// end, or from the beginning with Options.FromBeginning, and commits
// nothing, so any number of dumps can watch a topic without disturbing
// each other or the cluster's consumers. With Options.Group it joins that
// consumer group and commits what it printed, so a later dump in the same
// group carries on where this one stopped.
//
// Each message is printed by Format.Render: JSON objects compacted on one
// line (or indented with Pretty), with their base64 "body" decoded or
// dropped on request; anything else as it came. A message never stops the
// dump.
package dump

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/segmentio/kafka-go"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/kafkaclient"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
)

// ErrUnknownTopic is returned by Dump for a topic the cluster does not have.
// Dump never creates topics.
var ErrUnknownTopic = errors.New("topic does not exist")

// Options says what Dump reads and how it prints it.
type Options struct {
	// Topic is the topic to read; required.
	Topic string
	// Group is the consumer group to read in. Empty (the default) reads
	// every partition without a group and commits nothing.
	Group string
	// FromBeginning reads from the oldest message kept instead of only the
	// messages produced after Dump started. In a group it applies only when
	// the group has no committed offsets yet.
	FromBeginning bool
	// Max stops Dump after that many messages; 0 reads until ctx ends.
	Max int
	// Format is how each message is printed.
	Format Format
}

// Validate reports unusable options.
func (o Options) Validate() error {
	switch {
	case strings.TrimSpace(o.Topic) == "":
		return errors.New("no topic given")
	case o.Max < 0:
		return fmt.Errorf("number of messages must not be negative, got %d", o.Max)
	}
	return o.Format.Validate()
}

// Summary counts what Dump consumed.
type Summary struct {
	// Messages is the number of messages consumed (each printed, unless
	// Format.JustBody found no body in it).
	Messages int
	// Bytes is the size of their values.
	Bytes int64
}

// String reads as the original's closing log line.
func (s Summary) String() string {
	if s.Messages == 0 {
		return "No records consumed"
	}
	mb := float64(s.Bytes) / (1024 * 1024)
	kb := float64(s.Bytes) / float64(s.Messages) / 1024
	return fmt.Sprintf("Num Records: %d, Total MBs: %.6f, kb per message: %.3f", s.Messages, mb, kb)
}

// Dump prints the messages of opts.Topic to out, one Render each, until ctx
// ends or opts.Max messages were consumed, then logs the Summary at INFO
// and returns it. The end of ctx is a normal stop, not an error. Dump fails
// at once, with ErrUnknownTopic, for a topic the cluster lacks. log may be
// nil.
func Dump(ctx context.Context, cfg kafkaclient.Config, opts Options, out io.Writer, log *logfactory.Logger) (Summary, error) {
	var sum Summary
	if err := opts.Validate(); err != nil {
		return sum, err
	}
	log = orDiscard(log)
	partitions, err := topicPartitions(ctx, cfg, opts.Topic)
	if err != nil {
		if ctx.Err() != nil {
			return sum, nil // stopped while starting
		}
		return sum, err
	}

	var src source
	if opts.Group != "" {
		cfg.StartAtEarliest = opts.FromBeginning
		src = groupSource{cfg.NewGroupReader(opts.Topic, opts.Group)}
		log.Info(fmt.Sprintf("Dumping %s (%d %s) in consumer group %s (%s if the group has no committed offsets)",
			opts.Topic, partitions, plural(partitions, "partition"), opts.Group, where(opts.FromBeginning)),
			logfactory.Extra{"topic": opts.Topic, "partitions": partitions, "group": opts.Group})
	} else {
		ps, err := newPartitionSource(ctx, cfg, opts.Topic, partitions, opts.FromBeginning)
		if err != nil {
			if ctx.Err() != nil {
				return sum, nil
			}
			return sum, err
		}
		src = ps
		start := where(opts.FromBeginning)
		if !opts.FromBeginning {
			start += ", new messages only"
		}
		log.Info(fmt.Sprintf("Dumping %s (%d %s) %s", opts.Topic, partitions, plural(partitions, "partition"), start),
			logfactory.Extra{"topic": opts.Topic, "partitions": partitions})
	}
	defer func() {
		log.Debug("Closing Kafka connection")
		if err := src.Close(); err != nil {
			log.Debug(fmt.Sprintf("Close reader of %s: %v", opts.Topic, err))
		}
	}()

	for opts.Max == 0 || sum.Messages < opts.Max {
		m, err := src.Fetch(ctx)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			return sum, fmt.Errorf("read %s: %w", opts.Topic, err)
		}
		text, note := opts.Format.Render(m.Value)
		if note != nil {
			extra := logfactory.Extra{"topic": m.Topic, "partition": m.Partition, "offset": m.Offset}
			if errors.Is(note, ErrNoBody) {
				log.Debug(fmt.Sprintf("Message %d/%d: %v", m.Partition, m.Offset, note), extra)
			} else {
				log.Warning(fmt.Sprintf("Message %d/%d: %v", m.Partition, m.Offset, note), extra)
			}
		}
		if text != nil {
			if _, err := out.Write(text); err != nil {
				return sum, fmt.Errorf("write message %d/%d of %s: %w", m.Partition, m.Offset, opts.Topic, err)
			}
		}
		sum.Messages++
		sum.Bytes += int64(len(m.Value))
		if err := src.Commit(ctx, m); err != nil && ctx.Err() == nil {
			log.Warning(fmt.Sprintf("Commit offset %d/%d of %s in group %s: %v", m.Partition, m.Offset, opts.Topic, opts.Group, err))
		}
	}
	log.Info(sum.String(), logfactory.Extra{"messages": sum.Messages, "bytes": sum.Bytes})
	return sum, nil
}

func where(fromBeginning bool) string {
	if fromBeginning {
		return "from the beginning"
	}
	return "from the end"
}

func orDiscard(log *logfactory.Logger) *logfactory.Logger {
	if log != nil {
		return log
	}
	l, err := logfactory.New(logfactory.Config{Output: io.Discard})
	if err != nil {
		panic(err) // the zero Config is valid
	}
	return l
}

// topicPartitions returns the number of partitions of topic, or
// ErrUnknownTopic. It asks for the whole topic list, because asking for one
// topic by name would make brokers that auto-create topics create it.
func topicPartitions(ctx context.Context, cfg kafkaclient.Config, topic string) (int, error) {
	topics, err := cfg.ListTopics(ctx)
	if err != nil {
		return 0, err
	}
	for _, t := range topics {
		if t.Name == topic {
			if t.Partitions < 1 {
				return 0, fmt.Errorf("topic %s has no partitions", topic)
			}
			return t.Partitions, nil
		}
	}
	return 0, fmt.Errorf("%w: %s on %s ('kafkadump list' shows the topics; kafkadump never creates one)",
		ErrUnknownTopic, topic, strings.Join(cfg.Brokers, ","))
}

// source is where Dump fetches messages: a consumer group or every
// partition read directly.
type source interface {
	Fetch(ctx context.Context) (kafka.Message, error)
	Commit(ctx context.Context, m kafka.Message) error
	Close() error
}

type groupSource struct{ r *kafka.Reader }

func (g groupSource) Fetch(ctx context.Context) (kafka.Message, error) { return g.r.FetchMessage(ctx) }

// Commit marks m done; with auto-commit on (the default) the reader sends
// the offsets every KAFKA_CONSUMER_COMMIT_INTERVAL_MS and on Close.
func (g groupSource) Commit(ctx context.Context, m kafka.Message) error {
	return g.r.CommitMessages(ctx, m)
}

func (g groupSource) Close() error { return g.r.Close() }

// partitionSource reads every partition of a topic with its own reader and
// hands the messages over one channel, each partition's in order.
type partitionSource struct {
	readers []*kafka.Reader
	msgs    chan kafka.Message
	errs    chan error
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// newPartitionSource starts reading partitions 0..n-1 of topic. The start
// offsets are fixed before it returns, so every message produced after it
// returned is read, even before the readers have connected.
func newPartitionSource(ctx context.Context, cfg kafkaclient.Config, topic string, n int, fromBeginning bool) (*partitionSource, error) {
	offsets := make([]int64, n)
	if fromBeginning {
		for p := range offsets {
			offsets[p] = kafka.FirstOffset
		}
	} else {
		var err error
		if offsets, err = lastOffsets(ctx, cfg, topic, n); err != nil {
			return nil, err
		}
	}
	readCtx, cancel := context.WithCancel(context.Background())
	s := &partitionSource{msgs: make(chan kafka.Message), errs: make(chan error, n), cancel: cancel}
	for p, off := range offsets {
		r, err := cfg.NewPartitionReader(topic, p, off)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.readers = append(s.readers, r)
		s.wg.Add(1)
		go s.read(readCtx, r)
	}
	return s, nil
}

func (s *partitionSource) read(ctx context.Context, r *kafka.Reader) {
	defer s.wg.Done()
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			if ctx.Err() == nil {
				s.errs <- fmt.Errorf("partition %d: %w", r.Config().Partition, err)
			}
			return
		}
		select {
		case s.msgs <- m:
		case <-ctx.Done():
			return
		}
	}
}

func (s *partitionSource) Fetch(ctx context.Context) (kafka.Message, error) {
	select {
	case m := <-s.msgs:
		return m, nil
	case err := <-s.errs:
		return kafka.Message{}, err
	case <-ctx.Done():
		return kafka.Message{}, ctx.Err()
	}
}

// Commit does nothing: without a group there is nowhere to commit to.
func (s *partitionSource) Commit(context.Context, kafka.Message) error { return nil }

func (s *partitionSource) Close() error {
	s.cancel()
	s.wg.Wait()
	var errs []error
	for _, r := range s.readers {
		errs = append(errs, r.Close())
	}
	return errors.Join(errs...)
}

// lastOffsets returns the offset the next message of each partition will
// get.
func lastOffsets(ctx context.Context, cfg kafkaclient.Config, topic string, n int) ([]int64, error) {
	req := &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{}}
	for p := range n {
		req.Topics[topic] = append(req.Topics[topic], kafka.LastOffsetOf(p))
	}
	client := &kafka.Client{Addr: kafka.TCP(cfg.Brokers...), Timeout: cfg.ConnTimeout}
	resp, err := client.ListOffsets(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("find the end of %s: %w", topic, err)
	}
	offsets := make([]int64, n)
	found := make([]bool, n)
	for _, po := range resp.Topics[topic] {
		if po.Error != nil {
			return nil, fmt.Errorf("find the end of %s/%d: %w", topic, po.Partition, po.Error)
		}
		if po.Partition >= 0 && po.Partition < n {
			offsets[po.Partition], found[po.Partition] = po.LastOffset, true
		}
	}
	for p, ok := range found {
		if !ok {
			return nil, fmt.Errorf("find the end of %s/%d: no answer from the broker", topic, p)
		}
	}
	return offsets, nil
}
