// Package kafkaclient builds Kafka producers, consumers and admin calls from
// the shared settings, so every component (Kafka Monitor, Redis Monitor,
// crawler, REST) talks to Kafka configured the same way. It wraps
// github.com/segmentio/kafka-go.
//
// The settings are the KAFKA_* declarations below (Settings), with Scrapy
// Cluster 1.3's names and defaults; Config's fields say what each does. A
// component may give one a default of its own, e.g. the REST service reads
// from 'latest' (AutoOffsetReset.WithDefault).
//
// Components that must not lose messages (the Kafka Monitor) read with
// auto-commit off and commit each message after handling it: at-least-once.
package kafkaclient

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// The Kafka settings every component shares. Times are in the unit their
// name says, else in seconds.
var (
	Hosts           = settings.String("KAFKA_HOSTS", "localhost:9092", "Kafka brokers, comma-separated")
	TopicPrefix     = settings.String("KAFKA_TOPIC_PREFIX", "demo", "prefix of the cluster's topics: `<prefix>.incoming`, `<prefix>.crawled_firehose`, `<prefix>.outbound_firehose`")
	ConnTimeout     = settings.Seconds("KAFKA_CONN_TIMEOUT", 5, "seconds to connect to a broker").Positive()
	BatchLinger     = settings.Millis("KAFKA_PRODUCER_BATCH_LINGER_MS", 25, "ms a batching producer (`kafka-monitor feed`) waits to fill a batch; the services send at once with group commit (what arrives while two sends are out goes in the next)").AtLeast(0)
	SendBuffer      = settings.Int("KAFKA_PRODUCER_BUFFER_BYTES", 4<<20, "TCP send buffer of the producers' connections")
	Compression     = settings.String("KAFKA_PRODUCER_COMPRESSION", "none", "codec of the message batches every producer sends: `none`, `gzip`, `snappy`, `lz4` or `zstd` ([Kafka compression](production.md#kafka-compression)); every consumer of the topics must read it").Ours()
	MaxRequestBytes = settings.Int("KAFKA_PRODUCER_MAX_REQUEST_SIZE", 1<<20, "largest produce request, so the largest message sent: larger crawl results are cut or reduced ([crawl results](crawler.md#crawl-results))").Ours().Positive()
	AutoOffsetReset = settings.String("KAFKA_CONSUMER_AUTO_OFFSET_RESET", "earliest", "where a reader without committed offsets starts: `earliest` or `latest`")
	FetchMaxBytes   = settings.Int("KAFKA_CONSUMER_FETCH_MESSAGE_MAX_BYTES", 10<<20, "largest fetch, so the largest message read").Positive()
	FetchMaxWait    = settings.Millis("KAFKA_CONSUMER_TIMEOUT", 50, "ms a fetch waits for new messages").Positive()
	CommitInterval  = settings.Millis("KAFKA_CONSUMER_COMMIT_INTERVAL_MS", 5000, "ms between commits of a consumer group that commits periodically (`kafkadump dump -c`)")
	AutoCommit      = settings.Bool("KAFKA_CONSUMER_AUTO_COMMIT_ENABLE", true, "`kafkadump dump -c` commits periodically (false: each message at once); the Kafka Monitor's `run` commits each batch once it is stored, the others read without a consumer group")
	Partitions      = settings.Int("KAFKA_TOPIC_PARTITIONS", 3, "partitions of the topics a component creates (but the incoming topic's: `KAFKA_INCOMING_PARTITIONS`)").Ours().AtLeast(1)
	Replication     = settings.Int("KAFKA_TOPIC_REPLICATION_FACTOR", 1, "replication of the topics a component creates").Ours().AtLeast(1)
)

// Settings are the Kafka settings, for a component's settings.Group.
func Settings() settings.Group {
	return settings.Declare(Hosts, TopicPrefix, ConnTimeout, BatchLinger, SendBuffer, Compression, MaxRequestBytes, AutoOffsetReset,
		FetchMaxBytes, FetchMaxWait, CommitInterval, AutoCommit, Partitions, Replication)
}

// DefaultClientID is Config.ClientID's default.
const DefaultClientID = "scrapy-cluster"

// Config is the Kafka part of a component's settings. ConfigFromSettings
// fills it.
type Config struct {
	// Brokers are "host:port" addresses (KAFKA_HOSTS).
	Brokers []string
	// TopicPrefix prefixes the cluster's topics (KAFKA_TOPIC_PREFIX).
	TopicPrefix string
	// ConnTimeout bounds connecting to a broker (KAFKA_CONN_TIMEOUT).
	ConnTimeout time.Duration
	// BatchLinger is how long a producer waits to fill a batch
	// (KAFKA_PRODUCER_BATCH_LINGER_MS).
	BatchLinger time.Duration
	// PublishLinger is how long a Publisher's batch waits for more
	// messages (ProducerConfig.Linger). No shared setting: a component
	// sets it from its own (the crawler's KAFKA_RESULTS_LINGER_MS); 0 in
	// the others.
	PublishLinger time.Duration
	// PublishHeldBytes bounds the bytes of values a Publisher holds at
	// once: queued for, in or between its produce requests (0: no bound).
	// No shared setting: the crawler sets it (PublishHeldBound), so that
	// its results waiting for Kafka are bounded in memory; Publish waits
	// for room (Publisher.PublishHeld).
	PublishHeldBytes int
	// SendBufferBytes is the producer connections' TCP send buffer
	// (KAFKA_PRODUCER_BUFFER_BYTES).
	SendBufferBytes int
	// MaxRequestBytes bounds one produce request, and so the largest
	// message written (KAFKA_PRODUCER_MAX_REQUEST_SIZE).
	MaxRequestBytes int
	// Compression is the codec of the batches producers send
	// (KAFKA_PRODUCER_COMPRESSION; 0: none).
	Compression kafka.Compression
	// StartAtEarliest: a consumer group without committed offsets starts at
	// the oldest message (true) or only new ones (KAFKA_CONSUMER_AUTO_OFFSET_RESET).
	StartAtEarliest bool
	// FetchMaxBytes bounds one fetch, so also the largest message read
	// (KAFKA_CONSUMER_FETCH_MESSAGE_MAX_BYTES).
	FetchMaxBytes int
	// FetchMaxWait is how long a fetch waits for new messages
	// (KAFKA_CONSUMER_TIMEOUT).
	FetchMaxWait time.Duration
	// QueueCapacity is how many fetched messages a reader keeps ahead of
	// its consumer; 0 means defaultQueueCapacity.
	QueueCapacity int
	// CommitInterval is the auto-commit period (KAFKA_CONSUMER_COMMIT_INTERVAL_MS);
	// 0 commits synchronously on each CommitMessages call
	// (KAFKA_CONSUMER_AUTO_COMMIT_ENABLE false).
	CommitInterval time.Duration
	// Partitions and ReplicationFactor are used when this cluster creates a
	// topic (KAFKA_TOPIC_PARTITIONS, KAFKA_TOPIC_REPLICATION_FACTOR).
	Partitions        int
	ReplicationFactor int
	// ClientID names the component to the brokers ("" means DefaultClientID).
	ClientID string
}

// ConfigFromSettings reads the KAFKA_* settings. It fails with the setting's
// name when a value is unusable.
func ConfigFromSettings(s *settings.Settings) (Config, error) {
	cfg := Config{
		Brokers:           settings.SplitList(Hosts.From(s)),
		TopicPrefix:       TopicPrefix.From(s),
		ConnTimeout:       ConnTimeout.From(s),
		BatchLinger:       BatchLinger.From(s),
		SendBufferBytes:   SendBuffer.From(s),
		MaxRequestBytes:   MaxRequestBytes.From(s),
		FetchMaxBytes:     FetchMaxBytes.From(s),
		FetchMaxWait:      FetchMaxWait.From(s),
		Partitions:        Partitions.From(s),
		ReplicationFactor: Replication.From(s),
		ClientID:          DefaultClientID,
	}
	if AutoCommit.From(s) {
		cfg.CommitInterval = CommitInterval.From(s)
	}
	var err error
	if cfg.Compression, err = compressionNamed(Compression.From(s)); err != nil {
		return cfg, err
	}
	switch reset := strings.ToLower(AutoOffsetReset.From(s)); reset {
	case "earliest", "smallest":
		cfg.StartAtEarliest = true
	case "latest", "largest":
	default:
		return cfg, fmt.Errorf("setting KAFKA_CONSUMER_AUTO_OFFSET_RESET: want 'earliest' or 'latest', got %q", reset)
	}
	return cfg, cfg.Validate()
}

// compressionNamed is the codec KAFKA_PRODUCER_COMPRESSION names.
func compressionNamed(name string) (kafka.Compression, error) {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "none", "":
		return 0, nil
	case "gzip":
		return kafka.Gzip, nil
	case "snappy":
		return kafka.Snappy, nil
	case "lz4":
		return kafka.Lz4, nil
	case "zstd":
		return kafka.Zstd, nil
	}
	return 0, fmt.Errorf("setting KAFKA_PRODUCER_COMPRESSION: want none, gzip, snappy, lz4 or zstd, got %q", name)
}

// Validate reports unusable broker addresses (KAFKA_HOSTS). The numbers'
// bounds are their settings' own, which settings.Load enforces.
func (c Config) Validate() error {
	if len(c.Brokers) == 0 {
		return errors.New("setting KAFKA_HOSTS: no broker address given")
	}
	for _, b := range c.Brokers {
		if _, _, err := net.SplitHostPort(b); err != nil {
			return fmt.Errorf("setting KAFKA_HOSTS: broker %q is not host:port: %w", b, err)
		}
	}
	return nil
}

// Topic returns the cluster topic "<prefix>.<name>", e.g. Topic("crawled_firehose").
func (c Config) Topic(name string) string { return c.TopicPrefix + "." + name }

// transport dials with the connect timeout and the configured send buffer.
func (c Config) transport() *kafka.Transport {
	dialer := &net.Dialer{Timeout: c.ConnTimeout}
	return &kafka.Transport{
		DialTimeout: c.ConnTimeout,
		ClientID:    c.clientID(),
		// Notice new and re-created topics (and lost brokers) within a second.
		MetadataTTL: time.Second,
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			if tcp, ok := conn.(*net.TCPConn); ok && c.SendBufferBytes > 0 {
				_ = tcp.SetWriteBuffer(c.SendBufferBytes)
			}
			return conn, nil
		},
	}
}

func (c Config) clientID() string {
	if c.ClientID == "" {
		return DefaultClientID
	}
	return c.ClientID
}

// NewWriter returns a batching producer. With topic "" each message names its
// own topic. Writes wait for all in-sync replicas, so an acknowledged message
// is not lost; topics are not auto-created (use EnsureTopics).
func (c Config) NewWriter(topic string) *kafka.Writer {
	return &kafka.Writer{
		Addr:         kafka.TCP(c.Brokers...),
		Topic:        topic,
		Balancer:     &kafka.Hash{}, // same key, same partition; nil keys spread round-robin
		BatchTimeout: max(c.BatchLinger, time.Millisecond),
		BatchBytes:   int64(c.MaxRequestBytes),
		RequiredAcks: kafka.RequireAll,
		Compression:  c.Compression,
		Transport:    c.transport(),
	}
}

// NewGroupReader returns a consumer of topic in consumer group group. Offsets
// are committed every CommitInterval, or synchronously by CommitMessages when
// CommitInterval is 0 (at-least-once: commit after handling).
func (c Config) NewGroupReader(topic, group string) *kafka.Reader {
	return kafka.NewReader(c.readerConfig(topic, group))
}

// NewPartitionReader returns a consumer of one partition without a group,
// starting at offset (kafka.FirstOffset, kafka.LastOffset or a number).
func (c Config) NewPartitionReader(topic string, partition int, offset int64) (*kafka.Reader, error) {
	r := kafka.NewReader(c.readerConfig(topic, "", partition))
	if err := r.SetOffset(offset); err != nil {
		r.Close()
		return nil, fmt.Errorf("set offset of %s/%d: %w", topic, partition, err)
	}
	return r, nil
}

// defaultQueueCapacity leaves room for large batches: consumers hand
// messages over in batches.
const defaultQueueCapacity = 1000

func (c Config) readerConfig(topic, group string, partition ...int) kafka.ReaderConfig {
	start := kafka.LastOffset
	if c.StartAtEarliest {
		start = kafka.FirstOffset
	}
	rc := kafka.ReaderConfig{
		Brokers:        c.Brokers,
		Topic:          topic,
		GroupID:        group,
		MinBytes:       1,
		MaxBytes:       c.FetchMaxBytes,
		MaxWait:        c.FetchMaxWait,
		StartOffset:    start,
		CommitInterval: c.CommitInterval,
		QueueCapacity:  cmp.Or(c.QueueCapacity, defaultQueueCapacity),
		Dialer:         &kafka.Dialer{Timeout: c.ConnTimeout, ClientID: c.clientID(), DualStack: true},
		// Rebalances should not stall a small cluster for long.
		HeartbeatInterval: time.Second,
		SessionTimeout:    10 * time.Second,
		RebalanceTimeout:  10 * time.Second,
		JoinGroupBackoff:  500 * time.Millisecond,
	}
	if group == "" && len(partition) > 0 {
		rc.Partition = partition[0]
	}
	return rc
}

func (c Config) admin() *kafka.Client {
	return &kafka.Client{Addr: kafka.TCP(c.Brokers...), Timeout: c.ConnTimeout, Transport: c.transport()}
}

// TopicSpec describes a topic to create. Zero Partitions or ReplicationFactor
// take the Config's values.
type TopicSpec struct {
	Name              string
	Partitions        int
	ReplicationFactor int
}

// EnsureTopics creates the topics that do not exist yet, because production
// clusters often disable auto-creation. Existing topics are left as they are.
func (c Config) EnsureTopics(ctx context.Context, topics ...TopicSpec) error {
	return c.EnsureTopicsWith(ctx, c.admin(), topics...)
}

// EnsureTopicsWith is EnsureTopics through client, whose metadata cache then
// knows the topics at once (a Producer on client can send to them).
func (c Config) EnsureTopicsWith(ctx context.Context, client *kafka.Client, topics ...TopicSpec) error {
	if len(topics) == 0 {
		return nil
	}
	req := &kafka.CreateTopicsRequest{}
	for _, t := range topics {
		tc := kafka.TopicConfig{Topic: t.Name, NumPartitions: t.Partitions, ReplicationFactor: t.ReplicationFactor}
		if tc.NumPartitions <= 0 {
			tc.NumPartitions = c.Partitions
		}
		if tc.ReplicationFactor <= 0 {
			tc.ReplicationFactor = c.ReplicationFactor
		}
		req.Topics = append(req.Topics, tc)
	}
	resp, err := createTopics(ctx, client, req)
	if err != nil {
		return fmt.Errorf("create topics on %s: %w", strings.Join(c.Brokers, ","), err)
	}
	var errs []error
	for name, terr := range resp.Errors {
		if terr != nil && !errors.Is(terr, kafka.TopicAlreadyExists) {
			errs = append(errs, fmt.Errorf("create topic %s: %w", name, terr))
		}
	}
	return errors.Join(errs...)
}

// createTopics sends req, again while the client does not know the
// controller yet (kafka-go's BrokerNotAvailable before its first metadata,
// seen on a loaded machine) or the broker answers with a temporary error,
// until ctx is done.
func createTopics(ctx context.Context, client *kafka.Client, req *kafka.CreateTopicsRequest) (*kafka.CreateTopicsResponse, error) {
	backoff := 50 * time.Millisecond
	for {
		resp, err := client.CreateTopics(ctx, req)
		var kerr kafka.Error
		if err == nil || !errors.As(err, &kerr) || (kerr != kafka.BrokerNotAvailable && !kerr.Temporary()) {
			return resp, err
		}
		select {
		case <-ctx.Done():
			return nil, errors.Join(err, ctx.Err())
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// TopicInfo is a topic and its partition count.
type TopicInfo struct {
	Name       string
	Partitions int
}

// ListTopics returns the cluster's topics sorted by name (internal topics
// such as __consumer_offsets excluded).
func (c Config) ListTopics(ctx context.Context) ([]TopicInfo, error) {
	resp, err := c.admin().Metadata(ctx, &kafka.MetadataRequest{})
	if err != nil {
		return nil, fmt.Errorf("list topics on %s: %w", strings.Join(c.Brokers, ","), err)
	}
	var out []TopicInfo
	for _, t := range resp.Topics {
		if t.Internal || strings.HasPrefix(t.Name, "__") {
			continue
		}
		if t.Error != nil {
			return nil, fmt.Errorf("topic %s: %w", t.Name, t.Error)
		}
		out = append(out, TopicInfo{Name: t.Name, Partitions: len(t.Partitions)})
	}
	slices.SortFunc(out, func(a, b TopicInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Ping reports whether a broker answers, for health checks.
func (c Config) Ping(ctx context.Context) error {
	if _, err := c.admin().ApiVersions(ctx, &kafka.ApiVersionsRequest{}); err != nil {
		return fmt.Errorf("reach kafka at %s: %w", strings.Join(c.Brokers, ","), err)
	}
	return nil
}
