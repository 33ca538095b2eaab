package kafkaclient_test

import (
	"context"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/kafkaclient"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// A component loads the shared KAFKA_* settings, creates the topic it writes
// and produces to it; a consumer group reads and commits after handling.
func ExampleConfigFromSettings() {
	broker, err := harness.LaunchKafka(harness.KafkaOptions{NoAutoCreate: true}) // a real cluster in production
	if err != nil {
		panic(err)
	}
	defer broker.Close()

	incoming := settings.String("KAFKA_INCOMING_TOPIC", "demo.incoming", "the topic requests arrive on")
	declared := settings.Join(kafkaclient.Settings(), settings.Declare(incoming))
	s, _ := settings.Load(declared, settings.Options{Environ: []string{"KAFKA_HOSTS=" + broker.Hosts()}})
	cfg, err := kafkaclient.ConfigFromSettings(s)
	if err != nil {
		panic(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	topic := incoming.From(s)
	if err := cfg.EnsureTopics(ctx, kafkaclient.TopicSpec{Name: topic}); err != nil {
		panic(err)
	}
	w := cfg.NewWriter(topic)
	defer w.Close()
	_ = w.WriteMessages(ctx, kafka.Message{Value: []byte(`{"url": "http://example.com"}`)})

	r := cfg.NewGroupReader(topic, "demo-group")
	defer r.Close()
	m, _ := r.FetchMessage(ctx)
	fmt.Println(string(m.Value))
	_ = r.CommitMessages(ctx, m) // only after the message was handled
	// Output: {"url": "http://example.com"}
}
