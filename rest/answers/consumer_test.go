package answers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/scrapycluster/scrapy-cluster-go/rest/answers"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/kafkaclient"
)

const outbound = "demo.outbound_firehose"

func kafkaFor(t *testing.T, earliest bool) (kafkaclient.Config, *kafka.Client) {
	t.Helper()
	k := harness.StartKafka(t, harness.KafkaOptions{Topics: []string{outbound}, Partitions: 3})
	cfg := kafkaclient.Config{Brokers: k.Addrs, TopicPrefix: "demo", ConnTimeout: 5 * time.Second, MaxRequestBytes: 1 << 20,
		FetchMaxBytes: 1 << 20, FetchMaxWait: 50 * time.Millisecond, StartAtEarliest: earliest, Partitions: 3, ReplicationFactor: 1}
	return cfg, &kafka.Client{Addr: kafka.TCP(k.Addrs...), Timeout: 5 * time.Second}
}

// produce writes values to partition p of the outbound topic.
func produce(t *testing.T, client *kafka.Client, p int, values ...string) {
	t.Helper()
	recs := make([]kafka.Record, len(values))
	for i, v := range values {
		recs[i] = kafka.Record{Value: kafka.NewBytes([]byte(v)), Time: time.Now()}
	}
	res, err := client.Produce(context.Background(), &kafka.ProduceRequest{Topic: outbound, Partition: p, RequiredAcks: kafka.RequireAll, Records: kafka.NewRecordReader(recs...)})
	if err == nil {
		err = res.Error
	}
	if err != nil {
		t.Fatal(err)
	}
}

func TestConsumerRoutesAnswersFromEveryPartitionToWaitersOrTheStore(t *testing.T) {
	cfg, client := kafkaFor(t, false)
	rdb := redisServer.TestClient(t)
	ctx := context.Background()
	log, _ := testLogger(t)
	produce(t, client, 0, `{"uuid": "before-start"}`) // older than the consumer: not read ("latest")

	ws := answers.NewWaiters()
	store := answers.NewStore(rdb, time.Minute, log)
	store.Start(ctx)
	defer store.Close()
	c := answers.NewConsumer(cfg, client, outbound, ws, store, log)
	defer c.Close()
	if err := c.Start(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx, 3); err != nil || c.Partitions() != 3 {
		t.Fatalf("second Start: %v, %d partitions", err, c.Partitions())
	}

	waits := make([]*answers.Wait, 3)
	for p := range 3 {
		waits[p] = ws.Add(fmt.Sprint("waited-", p))
		produce(t, client, p, fmt.Sprintf(`{"uuid": "waited-%d", "p": %d}`, p, p), fmt.Sprintf(`{"uuid": "unwaited-%d"}`, p))
	}
	for p, w := range waits {
		select {
		case got := <-w.C():
			if string(got) != fmt.Sprintf(`{"uuid": "waited-%d", "p": %d}`, p, p) {
				t.Fatalf("partition %d: got %s", p, got)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("partition %d: no answer", p)
		}
	}
	for p := range 3 {
		key := fmt.Sprint("rest:poll:unwaited-", p)
		waitUntil(t, 10*time.Second, key+" is stored", func() bool { return rdb.Exists(ctx, key).Val() == 1 })
		if rdb.Exists(ctx, fmt.Sprint("rest:poll:waited-", p)).Val() != 0 {
			t.Fatalf("the answer delivered on partition %d was stored too", p)
		}
	}
	if rdb.Exists(ctx, "rest:poll:before-start").Val() != 0 {
		t.Fatal("an answer older than the consumer was read")
	}
}

func TestConsumerStartingAtEarliestReadsOlderAnswers(t *testing.T) {
	cfg, client := kafkaFor(t, true)
	rdb := redisServer.TestClient(t)
	ctx := context.Background()
	log, _ := testLogger(t)
	produce(t, client, 2, `{"uuid": "old-answer"}`)
	store := answers.NewStore(rdb, time.Minute, log)
	store.Start(ctx)
	defer store.Close()
	c := answers.NewConsumer(cfg, client, outbound, answers.NewWaiters(), store, log)
	defer c.Close()
	if err := c.Start(ctx, 3); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "the old answer is stored", func() bool { return rdb.Exists(ctx, "rest:poll:old-answer").Val() == 1 })
}

func TestConsumerStartFailsWhileKafkaIsAway(t *testing.T) {
	port := harness.Port(t)
	cfg := kafkaclient.Config{Brokers: []string{fmt.Sprint("127.0.0.1:", port)}, ConnTimeout: time.Second, FetchMaxBytes: 1 << 20, FetchMaxWait: 50 * time.Millisecond}
	log, _ := testLogger(t)
	c := answers.NewConsumer(cfg, &kafka.Client{Addr: kafka.TCP(cfg.Brokers...), Timeout: time.Second}, outbound, answers.NewWaiters(), nil, log)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := c.Start(ctx, 1); err == nil || c.Partitions() != 0 {
		t.Fatalf("Start without Kafka: %v, %d partitions", err, c.Partitions())
	}
}
