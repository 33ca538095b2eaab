package kafkaclient_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/kafkaclient"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// load reads the Kafka settings of environ as a component does: Load, then
// ConfigFromSettings; the error is the first either gives.
func load(t *testing.T, environ ...string) (kafkaclient.Config, error) {
	t.Helper()
	s, err := settings.Load(kafkaclient.Settings(), settings.Options{Environ: environ})
	if err != nil {
		return kafkaclient.Config{}, err
	}
	return kafkaclient.ConfigFromSettings(s)
}

func TestConfigFromSettingsReadsTheSpecsSettings(t *testing.T) {
	cfg, err := load(t)
	if err != nil {
		t.Fatal(err)
	}
	// The spec's defaults, in the settings' units.
	want := kafkaclient.Config{
		Brokers: []string{"localhost:9092"}, TopicPrefix: "demo", ConnTimeout: 5 * time.Second,
		BatchLinger: 25 * time.Millisecond, SendBufferBytes: 4 << 20, MaxRequestBytes: 1 << 20,
		StartAtEarliest: true, FetchMaxBytes: 10 << 20, FetchMaxWait: 50 * time.Millisecond,
		CommitInterval: 5 * time.Second, Partitions: 3, ReplicationFactor: 1, ClientID: "scrapy-cluster",
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("defaults:\n got %+v\nwant %+v", cfg, want)
	}
	if cfg.Topic("crawled_firehose") != "demo.crawled_firehose" {
		t.Fatal(cfg.Topic("crawled_firehose"))
	}
	cfg, err = load(t, "KAFKA_HOSTS=k1:9092, k2:9093", "KAFKA_CONSUMER_AUTO_OFFSET_RESET=latest",
		"KAFKA_CONSUMER_AUTO_COMMIT_ENABLE=false", "KAFKA_TOPIC_PREFIX=prod")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(cfg.Brokers, "|") != "k1:9092|k2:9093" || cfg.StartAtEarliest || cfg.CommitInterval != 0 ||
		cfg.Topic("incoming") != "prod.incoming" {
		t.Fatalf("overrides: %+v", cfg)
	}
}

func TestConfigFromSettingsRejectsUnusableValues(t *testing.T) {
	for _, env := range []string{
		"KAFKA_CONSUMER_AUTO_OFFSET_RESET=middle",
		"KAFKA_HOSTS=",
		"KAFKA_HOSTS=no-port",
		"KAFKA_TOPIC_PARTITIONS=0",
		"KAFKA_CONN_TIMEOUT=0",
		"KAFKA_PRODUCER_BATCH_LINGER_MS=-1",
		"KAFKA_PRODUCER_MAX_REQUEST_SIZE=0",
		"KAFKA_CONSUMER_FETCH_MESSAGE_MAX_BYTES=-5",
		"KAFKA_CONSUMER_TIMEOUT=0",
		"KAFKA_TOPIC_REPLICATION_FACTOR=0",
	} {
		name := strings.SplitN(env, "=", 2)[0]
		if _, err := load(t, env); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: err = %v, want an error naming the setting", env, err)
		}
	}
}

func configFor(k *harness.Kafka) kafkaclient.Config {
	return kafkaclient.Config{
		Brokers: k.Addrs, TopicPrefix: "demo", ConnTimeout: 5 * time.Second, BatchLinger: 5 * time.Millisecond,
		SendBufferBytes: 1 << 20, MaxRequestBytes: 1 << 20, StartAtEarliest: true, FetchMaxBytes: 1 << 20,
		FetchMaxWait: 50 * time.Millisecond, Partitions: 3, ReplicationFactor: 1,
	}
}

func TestEnsureTopicsCreatesMissingTopicsOnceAndListTopicsSeesThem(t *testing.T) {
	k := harness.StartKafka(t, harness.KafkaOptions{NoAutoCreate: true})
	cfg := configFor(k)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	specs := []kafkaclient.TopicSpec{{Name: "demo.incoming", Partitions: 6}, {Name: "demo.crawled_firehose"}}
	if err := cfg.EnsureTopics(ctx, specs...); err != nil {
		t.Fatal(err)
	}
	if err := cfg.EnsureTopics(ctx, specs...); err != nil {
		t.Fatalf("second EnsureTopics: %v", err)
	}
	topics, err := cfg.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(topics) != "[{demo.crawled_firehose 3} {demo.incoming 6}]" {
		t.Fatalf("topics = %v", topics)
	}
}

func TestWriterAndGroupReaderDeliverAtLeastOnce(t *testing.T) {
	k := harness.StartKafka(t, harness.KafkaOptions{NoAutoCreate: true})
	cfg := configFor(k)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const topic = "demo.incoming"
	if err := cfg.EnsureTopics(ctx, kafkaclient.TopicSpec{Name: topic, Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	w := cfg.NewWriter(topic)
	defer w.Close()
	var msgs []kafka.Message
	for i := range 5 {
		msgs = append(msgs, kafka.Message{Value: fmt.Appendf(nil, `{"n":%d}`, i)})
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}

	// First consumer handles two messages, commits them, then dies after
	// fetching a third it never committed.
	r1 := cfg.NewGroupReader(topic, "demo-group")
	for i := range 3 {
		m, err := r1.FetchMessage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf(`{"n":%d}`, i); string(m.Value) != want {
			t.Fatalf("got %s, want %s", m.Value, want)
		}
		if i < 2 {
			if err := r1.CommitMessages(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
	}
	r1.Close()

	// The next consumer in the group gets the uncommitted message again.
	r2 := cfg.NewGroupReader(topic, "demo-group")
	defer r2.Close()
	m, err := r2.FetchMessage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Value) != `{"n":2}` {
		t.Fatalf("after restart got %s, want the uncommitted {\"n\":2}", m.Value)
	}
}

func TestPartitionReaderStartsWhereAsked(t *testing.T) {
	k := harness.StartKafka(t, harness.KafkaOptions{Topics: []string{"demo.outbound_firehose"}})
	cfg := configFor(k)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w := cfg.NewWriter("demo.outbound_firehose")
	defer w.Close()
	if err := w.WriteMessages(ctx, kafka.Message{Value: []byte("a")}, kafka.Message{Value: []byte("b")}); err != nil {
		t.Fatal(err)
	}
	r, err := cfg.NewPartitionReader("demo.outbound_firehose", 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	m, err := r.ReadMessage(ctx)
	if err != nil || string(m.Value) != "b" {
		t.Fatalf("got %q, %v; want b at offset 1", m.Value, err)
	}
}

func TestPingTellsAReachableBrokerFromADeadOne(t *testing.T) {
	k := harness.StartKafka(t)
	cfg := configFor(k)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cfg.Ping(ctx); err != nil {
		t.Fatalf("ping live broker: %v", err)
	}
	port := harness.Port(t)
	cfg.Brokers = []string{fmt.Sprintf("127.0.0.1:%d", port)}
	cfg.ConnTimeout = 500 * time.Millisecond
	short, cancel2 := context.WithTimeout(ctx, 2*time.Second)
	defer cancel2()
	if err := cfg.Ping(short); err == nil {
		t.Fatal("ping of a closed port succeeded")
	}
}

func readAll(t *testing.T, cfg kafkaclient.Config, topic string, n int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := cfg.NewPartitionReader(topic, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []string
	for len(out) < n {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("read %s: got %v, then %v", topic, out, err)
		}
		out = append(out, string(m.Value))
	}
	return out
}

func TestPublisherSendsToFirehoseAndAppIDTopicsItCreates(t *testing.T) {
	k := harness.StartKafka(t, harness.KafkaOptions{NoAutoCreate: true})
	cfg := configFor(k)
	cfg.Partitions = 1
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := cfg.NewPublisher("outbound", true, nil)
	defer p.Close()
	if err := p.Publish(ctx, "testapp", []byte(`{"n":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := p.Publish(ctx, "bad app/id", []byte(`{"n":2}`)); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, cfg, "demo.outbound_firehose", 2); got[0] != `{"n":1}` || got[1] != `{"n":2}` {
		t.Fatalf("firehose got %v", got)
	}
	if got := readAll(t, cfg, "demo.outbound_testapp", 1); got[0] != `{"n":1}` {
		t.Fatalf("appid topic got %v", got)
	}
	if got := p.Topics("x"); len(got) != 2 || got[1] != "demo.outbound_x" {
		t.Fatalf("topics %v", got)
	}
	crawled := cfg.NewPublisher("crawled", false, nil)
	if got := crawled.Topics("x"); len(got) != 1 || got[0] != "demo.crawled_firehose" {
		t.Fatalf("topics without appid topics %v", got)
	} else {
		got[0] = "changed" // the caller's own copy
	}
	if got := crawled.Topics("y"); len(got) != 1 || got[0] != "demo.crawled_firehose" {
		t.Fatalf("topics after a caller changed its list: %v", got)
	}
}

func TestPublisherWaitsForKafkaToComeBack(t *testing.T) {
	port := harness.Port(t)
	cfg := configFor(&harness.Kafka{Addrs: []string{fmt.Sprintf("127.0.0.1:%d", port)}})
	cfg.ConnTimeout = 500 * time.Millisecond
	p := cfg.NewPublisher("outbound", false, nil)
	p.MaxBackoff = 200 * time.Millisecond
	var failures atomic.Int64
	p.OnError = func(error) { failures.Add(1) }
	defer p.Close()
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		done <- p.Publish(ctx, "testapp", []byte("late"))
	}()
	select {
	case err := <-done:
		t.Fatalf("Publish returned %v with no broker", err)
	case <-time.After(700 * time.Millisecond):
	}
	if failures.Load() == 0 {
		t.Error("OnError was not told of the failed attempts")
	}
	k := harness.StartKafka(t, harness.KafkaOptions{NoAutoCreate: true, Ports: []int{port}})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, configFor(k), "demo.outbound_firehose", 1); got[0] != "late" {
		t.Fatalf("got %v", got)
	}
}

func TestPublisherGivesUpOnlyWhenCancelled(t *testing.T) {
	port, _ := harness.FreePort()
	cfg := configFor(&harness.Kafka{Addrs: []string{fmt.Sprintf("127.0.0.1:%d", port)}})
	p := cfg.NewPublisher("outbound", false, nil)
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := p.Publish(ctx, "a", []byte("x")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want the context's error", err)
	}
}

func TestPublisherCreatesATopicAgainAfterTheBrokerLostIt(t *testing.T) {
	k := harness.StartKafka(t, harness.KafkaOptions{NoAutoCreate: true})
	cfg := configFor(k)
	cfg.Partitions = 1
	p := cfg.NewPublisher("outbound", false, nil)
	p.MaxBackoff = 200 * time.Millisecond
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := p.Publish(ctx, "a", []byte("before")); err != nil {
		t.Fatal(err)
	}
	// A new in-memory broker on the same port knows no topics.
	port := k.Cluster.ListenAddrs()[0]
	k.Close()
	var portNum int
	fmt.Sscanf(port[strings.LastIndexByte(port, ':')+1:], "%d", &portNum)
	k2 := harness.StartKafka(t, harness.KafkaOptions{NoAutoCreate: true, Ports: []int{portNum}})
	if err := p.Publish(ctx, "a", []byte("after")); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, configFor(k2), "demo.outbound_firehose", 1); got[0] != "after" {
		t.Fatalf("got %v", got)
	}
}

func TestPublisherRefusesForGoodWhatCanNeverBeSent(t *testing.T) {
	k := harness.StartKafka(t, harness.KafkaOptions{NoAutoCreate: true})
	cfg := configFor(k)
	cfg.Partitions = 1
	cfg.MaxRequestBytes = 1000
	p := cfg.NewPublisher("outbound", false, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.Publish(ctx, "a", make([]byte, 1000)); !errors.Is(err, kafkaclient.ErrPermanent) {
		t.Fatalf("a message larger than a request: %v, want ErrPermanent", err)
	}
	if err := p.Publish(ctx, "a", []byte("fits")); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Publish(ctx, "a", []byte("late")); !errors.Is(err, kafkaclient.ErrClosed) {
		t.Fatalf("Publish after Close: %v, want ErrClosed", err)
	}
	if got := readAll(t, cfg, "demo.outbound_firehose", 1); got[0] != "fits" {
		t.Fatalf("got %v", got)
	}
}

// TestPublisherHoldsAtMostPublishHeldBytes: with Kafka away, values wait
// for it counted in what the publisher holds, and once that is at its
// bound the next Publish calls wait their turn, before their first
// attempt, until one of those held returns.
func TestPublisherHoldsAtMostPublishHeldBytes(t *testing.T) {
	port, _ := harness.FreePort()
	cfg := configFor(&harness.Kafka{Addrs: []string{fmt.Sprintf("127.0.0.1:%d", port)}})
	cfg.ConnTimeout = 200 * time.Millisecond
	cfg.PublishHeldBytes = 3000
	p := cfg.NewPublisher("outbound", false, nil)
	p.MaxBackoff = 100 * time.Millisecond
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	type call struct {
		cancel context.CancelFunc
		held   atomic.Bool
		done   chan error
	}
	var mostHeld atomic.Int64
	calls := make([]*call, 5)
	for i := range calls {
		c := &call{done: make(chan error, 1)}
		cctx, cancel := context.WithCancel(ctx)
		c.cancel = cancel
		calls[i] = c
		go func() {
			c.done <- p.PublishHeld(cctx, "a", make([]byte, 1000), func() {
				c.held.Store(true)
				n, _ := p.Held()
				for most := mostHeld.Load(); int64(n) > most && !mostHeld.CompareAndSwap(most, int64(n)); most = mostHeld.Load() {
				}
			})
		}()
	}
	heldNow := func() (n int) {
		for _, c := range calls {
			if c.held.Load() {
				n++
			}
		}
		return n
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for !ok() {
			if ctx.Err() != nil {
				bytes, waiting := p.Held()
				t.Fatalf("%s: never (%d calls held, %d bytes held, %d waiting)", what, heldNow(), bytes, waiting)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor("3 values held and 2 calls waiting", func() bool {
		bytes, waiting := p.Held()
		return heldNow() == 3 && bytes == 3000 && waiting == 2
	})
	// One held gives up: the first waiting takes its room.
	var gone *call
	for _, c := range calls {
		if c.held.Load() {
			gone = c
			break
		}
	}
	gone.cancel()
	if err := <-gone.done; !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled Publish returned %v", err)
	}
	waitFor("a waiting call takes the room given back", func() bool {
		bytes, waiting := p.Held()
		return heldNow() == 4 && bytes == 3000 && waiting == 1
	})
	// A waiting call that gives up holds nothing.
	for _, c := range calls {
		if !c.held.Load() {
			c.cancel()
			if err := <-c.done; !errors.Is(err, context.Canceled) {
				t.Fatalf("a cancelled waiting Publish returned %v", err)
			}
		}
	}
	if bytes, waiting := p.Held(); bytes != 3000 || waiting != 0 {
		t.Fatalf("%d bytes held, %d waiting after the waiting call gave up; want 3000, 0", bytes, waiting)
	}
	for _, c := range calls {
		c.cancel()
	}
	waitFor("nothing held once every call returned", func() bool { bytes, _ := p.Held(); return bytes == 0 })
	if got := mostHeld.Load(); got > 3000 {
		t.Fatalf("the publisher held %d bytes at once, more than its bound of 3000", got)
	}
}

// TestPublisherHoldsALargerValueAlone: a value larger than
// PublishHeldBytes takes all of it, and goes once nothing else is held.
func TestPublisherHoldsALargerValueAlone(t *testing.T) {
	k := harness.StartKafka(t, harness.KafkaOptions{NoAutoCreate: true})
	cfg := configFor(k)
	cfg.Partitions = 1
	cfg.PublishHeldBytes = 100
	p := cfg.NewPublisher("outbound", false, nil)
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	large := strings.Repeat("x", 500)
	if err := p.PublishHeld(ctx, "a", []byte(large), func() {
		if bytes, _ := p.Held(); bytes != 100 {
			t.Errorf("a value larger than the bound holds %d bytes, want all of the bound, 100", bytes)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, cfg, "demo.outbound_firehose", 1); got[0] != large {
		t.Fatalf("got %.20q...", got[0])
	}
}

// TestPublishThenAnswersEachValueOnceWhenKafkaHasItInEveryTopic: values
// handed over with PublishThen while Kafka is away count in what the
// publisher holds and are answered once Kafka is back, each once, after
// every topic (the firehose and the appid's) has it; one whose context
// ends first is answered with its context's error and holds nothing.
func TestPublishThenAnswersEachValueOnceWhenKafkaHasItInEveryTopic(t *testing.T) {
	port := harness.Port(t)
	cfg := configFor(&harness.Kafka{Addrs: []string{fmt.Sprintf("127.0.0.1:%d", port)}})
	cfg.ConnTimeout = 500 * time.Millisecond
	cfg.Partitions = 1
	cfg.PublishHeldBytes = 1 << 20
	p := cfg.NewPublisher("outbound", true, nil)
	p.MaxBackoff = 200 * time.Millisecond
	var failures atomic.Int64
	p.OnError = func(error) { failures.Add(1) }
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const n = 20
	var answers [n + 1]atomic.Int64
	var errs [n + 1]atomic.Value
	for i := range n {
		p.PublishThen(ctx, "app", []byte(fmt.Sprintf("v%02d", i)), nil, func(err error) {
			if err != nil {
				errs[i].Store(err)
			}
			answers[i].Add(1)
		})
	}
	gone, giveUp := context.WithCancel(ctx)
	p.PublishThen(gone, "app", []byte("gone"), nil, func(err error) {
		errs[n].Store(err)
		answers[n].Add(1)
	})
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for !ok() {
			if ctx.Err() != nil {
				t.Fatalf("%s: never", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor("attempts failing while Kafka is away", func() bool { return failures.Load() >= 2 })
	for i := range answers {
		if got := answers[i].Load(); got != 0 {
			t.Fatalf("value %d answered %d times while Kafka is away", i, got)
		}
	}
	if bytes, _ := p.Held(); bytes != n*3+4 {
		t.Fatalf("%d bytes held while Kafka is away, want %d", bytes, n*3+4)
	}
	giveUp()
	waitFor("the value whose context ended answered", func() bool { return answers[n].Load() == 1 })
	if err, _ := errs[n].Load().(error); !errors.Is(err, context.Canceled) {
		t.Fatalf("a value whose context ended was answered %v", err)
	}
	if bytes, _ := p.Held(); bytes != n*3 {
		t.Fatalf("%d bytes held once it gave up, want %d", bytes, n*3)
	}
	k := harness.StartKafka(t, harness.KafkaOptions{NoAutoCreate: true, Ports: []int{port}})
	waitFor("every value answered", func() bool {
		for i := range n {
			if answers[i].Load() == 0 {
				return false
			}
		}
		return true
	})
	for i := range answers {
		if got := answers[i].Load(); got != 1 {
			t.Errorf("value %d answered %d times", i, got)
		}
		if err, _ := errs[i].Load().(error); i < n && err != nil {
			t.Errorf("value %d answered %v", i, err)
		}
	}
	if bytes, _ := p.Held(); bytes != 0 {
		t.Fatalf("%d bytes held once every value is answered", bytes)
	}
	for _, topic := range []string{"demo.outbound_firehose", "demo.outbound_app"} {
		got := readAll(t, configFor(k), topic, n)
		slices.Sort(got)
		for i, v := range got {
			if want := fmt.Sprintf("v%02d", i); v != want {
				t.Fatalf("%s holds %v, want v00 to v%02d once each", topic, got, n-1)
			}
		}
	}
}
