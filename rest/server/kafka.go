package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/scrapycluster/scrapy-cluster-go/rest/answers"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/kafkaclient"
)

// errNotConnected is returned by send before Kafka was first reached.
var errNotConnected = errors.New("not connected to Kafka yet")

// kafkaSide is the service's Kafka end: the incoming topic requests go to,
// the outbound topic answers come from, the producer and the consumer.
type kafkaSide struct {
	cfg                kafkaclient.Config
	client             *kafka.Client
	incoming           string
	incomingPartitions int
	outbound           string
	sendTimeout        time.Duration
	consumer           *answers.Consumer
	producer           atomic.Pointer[kafkaclient.Producer]
}

// newKafkaClient returns a client on the transport every component dials
// Kafka with (kafkaclient.Config.NewClient), refreshing its cached cluster
// metadata every metadataTTL so new partitions and topics are seen soon. It sets no timeout of its own: every
// call's context carries its deadline (KAFKA_CONN_TIMEOUT for the checks,
// KAFKA_FEED_TIMEOUT for sending requests).
func newKafkaClient(cfg kafkaclient.Config, metadataTTL time.Duration) *kafka.Client {
	client := cfg.NewClient()
	if t, ok := client.Transport.(*kafka.Transport); ok {
		t.MetadataTTL = metadataTTL
	}
	return client
}

// check is the Kafka link's probe. It asks a broker for its API versions,
// creates the two topics when missing, starts reading new outbound
// partitions (and repositions readers Kafka lost the messages of) and, the
// first time, starts the producer (which spreads the requests over the
// incoming partitions the client's metadata lists).
func (k *kafkaSide) check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, k.cfg.ConnTimeout)
	defer cancel()
	if _, err := k.client.ApiVersions(ctx, &kafka.ApiVersionsRequest{}); err != nil {
		return fmt.Errorf("reach kafka at %s: %w", strings.Join(k.cfg.Brokers, ","), err)
	}
	parts, err := k.partitions(ctx)
	if err != nil {
		return err
	}
	if parts[k.incoming] == 0 || parts[k.outbound] == 0 {
		if err := k.createTopics(ctx); err != nil {
			return err
		}
		if parts, err = k.partitions(ctx); err != nil {
			return err
		}
		if parts[k.incoming] == 0 || parts[k.outbound] == 0 {
			return fmt.Errorf("topics %s and %s not available yet", k.incoming, k.outbound)
		}
	}
	if err := k.consumer.Start(ctx, parts[k.outbound]); err != nil {
		return err
	}
	if err := k.consumer.Resync(ctx); err != nil {
		return err
	}
	if k.producer.Load() == nil {
		k.producer.Store(kafkaclient.NewProducer(k.client, kafkaclient.ProducerConfig{
			Senders:       max(parts[k.incoming], 2),
			MaxBatchBytes: k.cfg.MaxRequestBytes,
			Timeout:       k.sendTimeout,
			Compression:   k.cfg.Compression,
		}))
	}
	return nil
}

// partitions returns the partition counts of the two topics as the client's
// metadata cache knows them (0: missing).
func (k *kafkaSide) partitions(ctx context.Context) (map[string]int, error) {
	md, err := k.client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{k.incoming, k.outbound}})
	if err != nil {
		return nil, fmt.Errorf("read the metadata of %s and %s: %w", k.incoming, k.outbound, err)
	}
	parts := map[string]int{}
	for _, t := range md.Topics {
		if t.Error == nil {
			parts[t.Name] = len(t.Partitions)
		}
	}
	return parts, nil
}

// createTopics creates the topics that do not exist (as the Kafka Monitor and
// Redis Monitor would), through the client so its metadata cache learns them.
func (k *kafkaSide) createTopics(ctx context.Context) error {
	return k.cfg.EnsureTopicsWith(ctx, k.client,
		kafkaclient.TopicSpec{Name: k.incoming, Partitions: k.incomingPartitions}, kafkaclient.TopicSpec{Name: k.outbound})
}

// send produces one request to the incoming topic.
func (k *kafkaSide) send(ctx context.Context, value []byte) error {
	p := k.producer.Load()
	if p == nil {
		return errNotConnected
	}
	return p.Send(ctx, k.incoming, value)
}

// close stops reading answers, sends what the producer accepted and closes
// the connections.
func (k *kafkaSide) close() {
	k.consumer.Close()
	if p := k.producer.Load(); p != nil {
		p.Close()
	}
	if t, ok := k.client.Transport.(*kafka.Transport); ok {
		t.CloseIdleConnections()
	}
}
