package harness

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/kafkaclient"
)

// TopicPartitions waits until topic exists with partitions on kc's brokers
// (a producer creates it on its first message) and returns how many it has;
// it fails tb if timeout or ctx ends first.
func TopicPartitions(ctx context.Context, tb testing.TB, kc kafkaclient.Config, topic string, timeout time.Duration) int {
	tb.Helper()
	var partitions int
	WaitFor(tb, "topic "+topic, timeout, func() bool {
		if ctx.Err() != nil {
			tb.Fatalf("no topic %s: %v", topic, ctx.Err())
		}
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		topics, err := kc.ListTopics(ctx)
		for _, t := range topics {
			if t.Name == topic {
				partitions = t.Partitions
			}
		}
		return err == nil && partitions > 0
	})
	return partitions
}

// ReadTopic reads partitions 0 to partitions-1 of topic from their start,
// one goroutine a partition, calling on with each message's value (so on
// must be safe for concurrent use), until ctx ends; when tb ends it ends the
// reading and waits for it.
func ReadTopic(ctx context.Context, tb testing.TB, kc kafkaclient.Config, topic string, partitions int, on func(value []byte)) {
	tb.Helper()
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	tb.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	for p := range partitions {
		r, err := kc.NewPartitionReader(topic, p, kafka.FirstOffset)
		if err != nil {
			tb.Fatal(err)
		}
		wg.Go(func() {
			defer r.Close()
			for {
				m, err := r.ReadMessage(ctx)
				if err != nil {
					if ctx.Err() != nil {
						return
					}
					continue
				}
				on(m.Value)
			}
		})
	}
}

// PartitionWriter writes to chosen partitions of topic, closed when tb
// ends: the returned function writes values to partition (each message's
// Key is the partition number), failing tb if that takes over 30 s.
func PartitionWriter(tb testing.TB, kc kafkaclient.Config, topic string) func(partition int, values ...string) {
	tb.Helper()
	w := kc.NewWriter(topic)
	w.Balancer = kafka.BalancerFunc(func(m kafka.Message, _ ...int) int {
		p, _ := strconv.Atoi(string(m.Key))
		return p
	})
	tb.Cleanup(func() { w.Close() })
	return func(partition int, values ...string) {
		tb.Helper()
		msgs := make([]kafka.Message, len(values))
		for i, v := range values {
			msgs[i] = kafka.Message{Key: []byte(strconv.Itoa(partition)), Value: []byte(v)}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := w.WriteMessages(ctx, msgs...); err != nil {
			tb.Fatalf("produce to %s/%d: %v", topic, partition, err)
		}
	}
}
