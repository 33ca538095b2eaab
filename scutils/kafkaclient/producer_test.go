package kafkaclient_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	"github.com/segmentio/kafka-go/protocol/produce"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/kafkaclient"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

const topic = "demo.incoming"

// start returns a client of a new broker holding topic with partitions
// partitions (and no other topic: none is created on demand).
func start(t *testing.T, partitions int32) *kafka.Client {
	t.Helper()
	k := harness.StartKafka(t, harness.KafkaOptions{Topics: []string{topic}, Partitions: partitions, NoAutoCreate: true})
	return configFor(k).NewClient()
}

// read returns every value in topic, partition by partition.
func read(t *testing.T, client *kafka.Client, partitions int) map[int][]string {
	t.Helper()
	return readTopic(t, client, topic, partitions)
}

func readTopic(t *testing.T, client *kafka.Client, topic string, partitions int) map[int][]string {
	t.Helper()
	out := map[int][]string{}
	for p := range partitions {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := client.Fetch(ctx, &kafka.FetchRequest{Topic: topic, Partition: p, Offset: 0, MaxBytes: 64 << 20})
		cancel()
		if err != nil {
			t.Fatalf("fetch partition %d: %v", p, err)
		}
		if res.Error != nil {
			t.Fatalf("fetch partition %d: %v", p, res.Error)
		}
		for {
			r, err := res.Records.ReadRecord()
			if err != nil {
				break
			}
			v := make([]byte, r.Value.Len())
			_, _ = r.Value.Read(v)
			out[p] = append(out[p], string(v))
		}
	}
	return out
}

func TestConcurrentSendsAllArriveSpreadOverThePartitions(t *testing.T) {
	client := start(t, 3)
	p := kafkaclient.NewProducer(client, kafkaclient.ProducerConfig{})
	defer p.Close()
	const n = 300
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.Send(context.Background(), topic, fmt.Appendf(nil, `{"n": %d}`, i)); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got := read(t, client, 3)
	var all []string
	for part := range 3 {
		if len(got[part]) == 0 {
			t.Errorf("partition %d got nothing", part)
		}
		all = append(all, got[part]...)
	}
	if len(all) != n {
		t.Fatalf("%d messages in Kafka, want %d", len(all), n)
	}
	slices.Sort(all)
	if len(slices.Compact(all)) != n {
		t.Fatal("a message was sent twice")
	}
}

func TestBatchesStayUnderMaxBatchBytesAndBigMessagesStillGo(t *testing.T) {
	client := start(t, 1)
	p := kafkaclient.NewProducer(client, kafkaclient.ProducerConfig{MaxBatchBytes: 4096, Senders: 1})
	defer p.Close()
	big := strings.Repeat("x", 100_000)
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v := fmt.Sprintf("%d-%s", i, strings.Repeat("y", 1000))
			if i == 25 {
				v = big
			}
			if err := p.Send(context.Background(), topic, []byte(v)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if got := read(t, client, 1)[0]; len(got) != 50 || !slices.Contains(got, big) {
		t.Fatalf("%d messages arrived", len(got))
	}
}

func TestSendFailsWhenKafkaIsUnreachable(t *testing.T) {
	port := harness.Port(t)
	client := configFor(&harness.Kafka{Addrs: []string{fmt.Sprint("127.0.0.1:", port)}}).NewClient()
	p := kafkaclient.NewProducer(client, kafkaclient.ProducerConfig{Timeout: 2 * time.Second})
	defer p.Close()
	start := time.Now()
	if err := p.Send(context.Background(), topic, []byte(`{}`)); err == nil {
		t.Fatal("sent without Kafka")
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("took %s, more than the timeout allows", time.Since(start))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.Send(ctx, topic, []byte(`{}`)); !errors.Is(err, context.Canceled) {
		t.Fatalf("Send with a cancelled context: %v", err)
	}
}

func TestCloseSendsWhatWasAcceptedAndRefusesMore(t *testing.T) {
	client := start(t, 2)
	p := kafkaclient.NewProducer(client, kafkaclient.ProducerConfig{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	sent := 0
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.Send(context.Background(), topic, fmt.Appendf(nil, "%d", i)); err == nil {
				mu.Lock()
				sent++
				mu.Unlock()
			} else if !errors.Is(err, kafkaclient.ErrClosed) {
				t.Error(err)
			}
		}()
	}
	p.Close()
	wg.Wait()
	got := read(t, client, 2)
	if len(got[0])+len(got[1]) != sent {
		t.Fatalf("%d messages in Kafka, %d acknowledged", len(got[0])+len(got[1]), sent)
	}
	if err := p.Send(context.Background(), topic, []byte("late")); !errors.Is(err, kafkaclient.ErrClosed) {
		t.Fatalf("Send after Close: %v", err)
	}
	p.Close() // twice is fine
}

func TestABatchOfSeveralTopicsReachesEachAndAMissingTopicFailsOnlyItsOwn(t *testing.T) {
	const other, missing = "demo.outbound_firehose", "demo.nowhere"
	k := harness.StartKafka(t, harness.KafkaOptions{Topics: []string{topic, other}, Partitions: 2, NoAutoCreate: true})
	client := configFor(k).NewClient()
	// One sender, so the messages waiting while it sends go together.
	p := kafkaclient.NewProducer(client, kafkaclient.ProducerConfig{Senders: 1, Timeout: 5 * time.Second})
	defer p.Close()
	const n = 200
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			to := []string{topic, other, missing}[i%3]
			errs[i] = p.Send(context.Background(), to, fmt.Appendf(nil, "%s-%d", to, i))
		})
	}
	wg.Wait()
	for i, err := range errs {
		switch i % 3 {
		case 2:
			if !errors.Is(err, kafka.UnknownTopicOrPartition) {
				t.Errorf("send %d to the missing topic: %v, want UnknownTopicOrPartition", i, err)
			}
		default:
			if err != nil {
				t.Errorf("send %d: %v", i, err)
			}
		}
	}
	for _, to := range []string{topic, other} {
		got := readTopic(t, client, to, 2)
		all := append(got[0], got[1]...)
		if len(all) != 67 { // i%3 == 0 or 1 for 67 of 0..199
			t.Errorf("%s holds %d messages, want 67", to, len(all))
		}
		for _, v := range all {
			if !strings.HasPrefix(v, to+"-") {
				t.Errorf("%s holds %q", to, v)
			}
		}
	}
}

// produceTimeouts records the time each produce request gives the broker
// to answer.
type produceTimeouts struct {
	kafka.RoundTripper
	mu  sync.Mutex
	got []time.Duration
}

func (r *produceTimeouts) RoundTrip(ctx context.Context, addr net.Addr, req kafka.Request) (kafka.Response, error) {
	if p, ok := req.(*produce.Request); ok {
		r.mu.Lock()
		r.got = append(r.got, time.Duration(p.Timeout)*time.Millisecond)
		r.mu.Unlock()
	}
	return r.RoundTripper.RoundTrip(ctx, addr, req)
}

func TestTheBrokerIsGivenHalfTheProduceTimeoutToAnswer(t *testing.T) {
	// A broker that cannot answer in time answers REQUEST_TIMED_OUT, the
	// records appended all the same, and the next attempt appends them
	// again: the broker's time must be the producer's, not kafka-go's
	// default of 500 ms.
	client := start(t, 1)
	rec := &produceTimeouts{RoundTripper: client.Transport}
	client.Transport = rec
	p := kafkaclient.NewProducer(client, kafkaclient.ProducerConfig{Timeout: 20 * time.Second})
	defer p.Close()
	if err := p.Send(context.Background(), topic, []byte(`{"n": 1}`)); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.got) != 1 || rec.got[0] < 9*time.Second || rec.got[0] > 10*time.Second {
		t.Fatalf("produce requests gave the broker %v to answer, want one of about 10s", rec.got)
	}
}

// With KAFKA_PRODUCER_COMPRESSION set, producers send batches in that
// codec, and every message reads back as it was sent.
func TestProducersCompressWithTheConfiguredCodec(t *testing.T) {
	for _, name := range []string{"gzip", "snappy", "lz4", "zstd"} {
		t.Run(name, func(t *testing.T) {
			k := harness.StartKafka(t, harness.KafkaOptions{Topics: []string{topic}, Partitions: 1, NoAutoCreate: true})
			cfg := configFor(k)
			s, err := settings.Load(kafkaclient.Settings(), settings.Options{NoEnv: true, Flags: map[string]string{
				"KAFKA_HOSTS": strings.Join(cfg.Brokers, ","), "KAFKA_PRODUCER_COMPRESSION": strings.ToUpper(name)}})
			if err != nil {
				t.Fatal(err)
			}
			if cfg, err = kafkaclient.ConfigFromSettings(s); err != nil {
				t.Fatal(err)
			}
			client := cfg.NewClient()
			p := kafkaclient.NewProducer(client, kafkaclient.ProducerConfig{Compression: cfg.Compression})
			defer p.Close()
			var want []string
			for i := range 20 {
				v := fmt.Sprintf(`{"n": %d, "body": %q}`, i, strings.Repeat("crawled ", 200))
				want = append(want, v)
				if err := p.Send(context.Background(), topic, []byte(v)); err != nil {
					t.Fatal(err)
				}
			}
			w := cfg.NewWriter(topic)
			defer w.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := w.WriteMessages(ctx, kafka.Message{Value: []byte("from the batching writer")}); err != nil {
				t.Fatal(err)
			}
			want = append(want, "from the batching writer")
			if got := read(t, client, 1)[0]; !slices.Equal(got, want) {
				t.Fatalf("read back %d messages, want the %d sent, equal", len(got), len(want))
			}
			if codecs := batchCodecs(t, client, topic); len(codecs) == 0 || slices.ContainsFunc(codecs, func(c string) bool { return c != name }) {
				t.Fatalf("the batches' codecs are %v, want %s each", codecs, name)
			}
		})
	}
	s, err := settings.Load(kafkaclient.Settings(), settings.Options{NoEnv: true, Flags: map[string]string{"KAFKA_PRODUCER_COMPRESSION": "brotli"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kafkaclient.ConfigFromSettings(s); err == nil || !strings.Contains(err.Error(), "KAFKA_PRODUCER_COMPRESSION") {
		t.Fatalf("an unknown codec: %v, want an error naming the setting", err)
	}
}

// batchCodecs names the codec of each record batch of topic's partition 0.
func batchCodecs(t *testing.T, client *kafka.Client, topic string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := client.Fetch(ctx, &kafka.FetchRequest{Topic: topic, Partition: 0, Offset: 0, MaxBytes: 64 << 20})
	if err != nil || res.Error != nil {
		t.Fatalf("fetch: %v %v", err, res.Error)
	}
	stream, ok := res.Records.(*protocol.RecordStream)
	if !ok {
		t.Fatalf("the fetched records are a %T, not a record stream", res.Records)
	}
	var codecs []string
	for _, r := range stream.Records {
		batch, ok := r.(*protocol.RecordBatch)
		if !ok {
			t.Fatalf("a fetched batch is a %T, not a v2 record batch", r)
		}
		codec := "none"
		if c := batch.Attributes.Compression(); c != 0 {
			codec = c.String()
		}
		codecs = append(codecs, codec)
	}
	return codecs
}

// A producer keeps a topic's partitions for a while, not for ever:
// partitions added to the topic get messages soon after.
func TestPartitionsAddedToATopicGetMessages(t *testing.T) {
	client := start(t, 1)
	p := kafkaclient.NewProducer(client, kafkaclient.ProducerConfig{})
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := p.Send(ctx, topic, []byte("before")); err != nil {
		t.Fatal(err)
	}
	res, err := client.CreatePartitions(ctx, &kafka.CreatePartitionsRequest{
		Topics: []kafka.TopicPartitionsConfig{{Name: topic, Count: 3}}})
	if err == nil {
		err = errors.Join(res.Errors[topic])
	}
	if err != nil {
		t.Fatalf("add partitions: %v", err)
	}
	sent := 0
	harness.WaitFor(t, "a message in an added partition", 30*time.Second, func() bool {
		if err := p.Send(ctx, topic, fmt.Appendf(nil, "after %d", sent)); err != nil {
			t.Fatal(err)
		}
		sent++
		for part := 1; part < 3; part++ { // the client may not know them yet either
			res, err := client.Fetch(ctx, &kafka.FetchRequest{Topic: topic, Partition: part, MaxBytes: 1 << 20})
			if err == nil && res.Error == nil {
				if _, err := res.Records.ReadRecord(); err == nil {
					return true
				}
			}
		}
		return false
	})
}

// With Config.PublishLinger, messages published one after another within
// it go in one produce request, one record batch, though a Publisher has
// two senders: a sender gathering a batch keeps the other from splitting it.
func TestMessagesWithinThePublishLingerGoInOneBatch(t *testing.T) {
	const firehose = "demo.crawled_firehose"
	k := harness.StartKafka(t, harness.KafkaOptions{Topics: []string{firehose}, Partitions: 1, NoAutoCreate: true})
	cfg := configFor(k)
	cfg.PublishLinger = 5 * time.Second
	p := cfg.NewPublisher("crawled", false, nil)
	defer p.Close()
	var want []string
	var wg sync.WaitGroup
	for i := range 20 {
		v := fmt.Sprintf(`{"n": %d}`, i)
		want = append(want, v)
		wg.Go(func() {
			if err := p.Publish(context.Background(), "", []byte(v)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	client := cfg.NewClient()
	got := readTopic(t, client, firehose, 1)[0]
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("read back %v, want %v", got, want)
	}
	if batches := batchCodecs(t, client, firehose); len(batches) != 1 {
		t.Fatalf("%d record batches, want the 20 messages in one", len(batches))
	}
}

// A batch of the most messages a batch takes goes at once, before its
// linger ends; the one after it waits for the next batch.
func TestABatchOfTheMostMessagesDoesNotWaitForTheLinger(t *testing.T) {
	client := start(t, 1)
	p := kafkaclient.NewProducer(client, kafkaclient.ProducerConfig{Senders: 1, Linger: time.Hour})
	defer p.Close()
	const most = 1000 // maxBatchMessages
	var wg sync.WaitGroup
	for i := range most + 1 {
		wg.Go(func() {
			if err := p.Send(context.Background(), topic, fmt.Appendf(nil, `{"n": %d}`, i)); err != nil {
				t.Error(err)
			}
		})
	}
	harness.WaitFor(t, "a full batch in Kafka", 30*time.Second, func() bool { return len(read(t, client, 1)[0]) >= most })
	if got := len(read(t, client, 1)[0]); got != most {
		t.Fatalf("%d messages arrived before the linger ended, want a batch of %d", got, most)
	}
	p.Close()
	wg.Wait()
	if got := len(read(t, client, 1)[0]); got != most+1 {
		t.Fatalf("%d messages arrived, want %d", got, most+1)
	}
}

// A batch that cannot take the next message goes at once, before its
// linger ends, and that message starts the next batch; without a linger
// every message sent alone goes alone.
func TestAFullBatchDoesNotWaitForTheLinger(t *testing.T) {
	client := start(t, 1)
	p := kafkaclient.NewProducer(client, kafkaclient.ProducerConfig{Senders: 1, MaxBatchBytes: 4096, Linger: time.Hour})
	defer p.Close()
	var wg sync.WaitGroup
	for i := range 3 { // 1,500 bytes each: with the overheads, two do not fit in 4,096
		wg.Go(func() {
			if err := p.Send(context.Background(), topic, fmt.Appendf(nil, "%d-%s", i, strings.Repeat("x", 1500))); err != nil {
				t.Error(err)
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	// The first goes as soon as the second is taken, the second as soon as
	// the third is; the third waits for an hour or for Close, which sends
	// it at once.
	harness.WaitFor(t, "a full batch in Kafka", 30*time.Second, func() bool { return len(read(t, client, 1)[0]) >= 2 })
	p.Close()
	<-done
	if got := read(t, client, 1)[0]; len(got) != 3 {
		t.Fatalf("%d messages arrived, want 3", len(got))
	}

	alone := start(t, 1)
	q := kafkaclient.NewProducer(alone, kafkaclient.ProducerConfig{})
	defer q.Close()
	for i := range 3 {
		if err := q.Send(context.Background(), topic, fmt.Appendf(nil, `{"n": %d}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	if batches := batchCodecs(t, alone, topic); len(batches) != 3 {
		t.Fatalf("%d record batches for three messages sent one after another without a linger, want 3", len(batches))
	}
}
