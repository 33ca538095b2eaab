package kafkaclient_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/kafkaclient"
)

func TestConsumerLagCountsWhatTheGroupHasNotCommitted(t *testing.T) {
	k := harness.StartKafka(t, harness.KafkaOptions{NoAutoCreate: true})
	cfg := configFor(k)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const topic, group = "demo.incoming", "lag-group"
	if err := cfg.EnsureTopics(ctx, kafkaclient.TopicSpec{Name: topic, Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	client := cfg.NewClient()
	lag := func() int64 {
		t.Helper()
		n, err := kafkaclient.ConsumerLag(ctx, client, topic, group)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := lag(); n != 0 {
		t.Fatalf("empty topic: lag %d", n)
	}
	w := cfg.NewWriter(topic)
	defer w.Close()
	var msgs []kafka.Message
	for i := range 6 {
		msgs = append(msgs, kafka.Message{Value: fmt.Appendf(nil, "%d", i)})
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	if n := lag(); n != 6 {
		t.Fatalf("nothing committed: lag %d, want 6", n)
	}
	r := cfg.NewGroupReader(topic, group)
	defer r.Close()
	for range 4 {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.CommitMessages(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if n := lag(); n != 2 {
		t.Fatalf("four committed: lag %d, want 2", n)
	}
}
