package dump

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/kafkaclient"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
)

const firehose = "demo.crawled_firehose"

// testConfig is the Kafka configuration of a component pointed at k.
func testConfig(t *testing.T, k *harness.Kafka) kafkaclient.Config {
	t.Helper()
	cfg, err := kafkaclient.ConfigFromSettings(harness.LoadSettings(t, kafkaclient.Settings(), map[string]any{"KAFKA_HOSTS": k.Hosts()}))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// twoPartitions starts a broker whose firehose has two partitions and
// returns the configuration pointed at it and a writer to a partition.
func twoPartitions(t *testing.T) (kafkaclient.Config, func(partition int, values ...string)) {
	t.Helper()
	k := harness.StartKafka(t, harness.KafkaOptions{Topics: []string{firehose}, Partitions: 2})
	cfg := testConfig(t, k)
	return cfg, harness.PartitionWriter(t, cfg, firehose)
}

func testLogger(t *testing.T, out *harness.OutputBuffer) *logfactory.Logger {
	t.Helper()
	return harness.Logger(t, logfactory.Config{Name: "kafkadump", Level: "DEBUG"}, out)
}

type seqMsg struct {
	P   int `json:"p"`
	Seq int `json:"seq"`
}

func seqValues(p, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf(`{"p": %d, "seq": %d}`, p, i)
	}
	return out
}

// parseSeqLines reads Dump's output of seqValues messages and checks each
// partition's messages came in order, without gaps, from seq 0.
func parseSeqLines(t *testing.T, out string) map[int]int {
	t.Helper()
	next := map[int]int{}
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var m seqMsg
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("output line %q is not a dumped message: %v", line, err)
		}
		if m.Seq != next[m.P] {
			t.Fatalf("partition %d: got seq %d, want %d (order within a partition lost)\n%s", m.P, m.Seq, next[m.P], out)
		}
		next[m.P]++
	}
	return next
}

func TestListShowsTheTopicsOfTheCluster(t *testing.T) {
	k := harness.StartKafka(t, harness.KafkaOptions{Topics: []string{firehose, "demo.incoming"}, Partitions: 2})
	cfg := testConfig(t, k)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var out bytes.Buffer
	if err := List(ctx, cfg, &out, false); err != nil {
		t.Fatal(err)
	}
	if want := "Topics:\n- demo.crawled_firehose\n- demo.incoming\n"; out.String() != want {
		t.Errorf("list = %q, want %q", out.String(), want)
	}

	out.Reset()
	if err := List(ctx, cfg, &out, true); err != nil {
		t.Fatal(err)
	}
	if want := "Topics:\n- demo.crawled_firehose (2 partitions)\n- demo.incoming (2 partitions)\n"; out.String() != want {
		t.Errorf("list with partitions = %q, want %q", out.String(), want)
	}
}

func TestListFailsWithoutABroker(t *testing.T) {
	port := harness.Port(t)
	cfg := kafkaclient.Config{Brokers: []string{fmt.Sprintf("127.0.0.1:%d", port)}, ConnTimeout: time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := List(ctx, cfg, &bytes.Buffer{}, false); err == nil {
		t.Fatal("List with no broker listening succeeded")
	}
}

func TestDumpFromBeginningReadsEveryPartitionInOrder(t *testing.T) {
	cfg, produce := twoPartitions(t)
	produce(0, seqValues(0, 10)...)
	produce(1, seqValues(1, 10)...)

	for _, max := range []int{20, 15} {
		t.Run(fmt.Sprintf("stops after exactly %d messages", max), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var out bytes.Buffer
			sum, err := Dump(ctx, cfg, Options{Topic: firehose, FromBeginning: true, Max: max}, &out, nil)
			if err != nil {
				t.Fatal(err)
			}
			counts := parseSeqLines(t, out.String())
			if got := counts[0] + counts[1]; got != max || sum.Messages != max {
				t.Errorf("printed %d messages, summary says %d, want %d:\n%s", got, sum.Messages, max, out.String())
			}
			if max == 20 && (counts[0] != 10 || counts[1] != 10) {
				t.Errorf("want all 10 messages of each partition, got %v", counts)
			}
			var wantBytes int64
			for p, n := range counts {
				for _, v := range seqValues(p, n) {
					wantBytes += int64(len(v))
				}
			}
			if sum.Bytes != wantBytes {
				t.Errorf("summary bytes = %d, want the consumed values' size %d", sum.Bytes, wantBytes)
			}
		})
	}
}

func TestDumpFromTheEndPrintsOnlyNewMessages(t *testing.T) {
	cfg, produce := twoPartitions(t)
	produce(0, `{"old": 0}`)
	produce(1, `{"old": 1}`)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, logs harness.OutputBuffer
	type result struct {
		sum Summary
		err error
	}
	done := make(chan result, 1)
	go func() {
		sum, err := Dump(ctx, cfg, Options{Topic: firehose}, &out, testLogger(t, &logs))
		done <- result{sum, err}
	}()

	// Markers are produced until one of each partition comes through: from
	// then on the dump reads both partitions.
	seen := func(p int) bool { return strings.Contains(out.String(), fmt.Sprintf(`{"marker":%d}`, p)) }
	deadline := time.Now().Add(30 * time.Second)
	for !seen(0) || !seen(1) {
		if time.Now().After(deadline) {
			t.Fatalf("markers never came through; output:\n%s\nlogs:\n%s", out.String(), logs.String())
		}
		for p := range 2 {
			if !seen(p) {
				produce(p, fmt.Sprintf(`{"marker": %d}`, p))
			}
		}
		harness.Until(50*time.Millisecond, func() bool { return seen(0) && seen(1) })
	}
	produce(0, `{"new": 0}`)
	produce(1, `{"new": 1}`, `not JSON, printed as text`)
	harness.WaitFor(t, "the new messages", 30*time.Second, func() bool {
		s := out.String()
		return strings.Contains(s, `{"new":0}`) && strings.Contains(s, `{"new":1}`) && strings.Contains(s, "not JSON, printed as text\n")
	})

	cancel()
	var r result
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Dump did not stop when its context ended")
	}
	if r.err != nil {
		t.Fatalf("Dump stopped by its context returned %v, want nil", r.err)
	}
	if strings.Contains(out.String(), "old") {
		t.Errorf("a dump from the end printed older messages:\n%s", out.String())
	}
	if lines := strings.Count(out.String(), "\n"); r.sum.Messages != lines {
		t.Errorf("summary counts %d messages, output has %d", r.sum.Messages, lines)
	}
	for _, want := range []string{"Dumping demo.crawled_firehose (2 partitions) from the end, new messages only", r.sum.String()} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("logs lack %q:\n%s", want, logs.String())
		}
	}
}

func TestDumpInAConsumerGroupCarriesOnWhereTheLastStopped(t *testing.T) {
	cfg, produce := twoPartitions(t)
	produce(0, seqValues(0, 3)...)
	produce(1, seqValues(1, 3)...)

	var all []string
	for _, max := range []int{4, 2} {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		var out bytes.Buffer
		_, err := Dump(ctx, cfg, Options{Topic: firehose, Group: "dumpers", FromBeginning: true, Max: max}, &out, nil)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		if len(lines) != max {
			t.Fatalf("dump with max %d printed %d lines:\n%s", max, len(lines), out.String())
		}
		all = append(all, lines...)
	}
	slices.Sort(all)
	want := []string{`{"p":0,"seq":0}`, `{"p":0,"seq":1}`, `{"p":0,"seq":2}`, `{"p":1,"seq":0}`, `{"p":1,"seq":1}`, `{"p":1,"seq":2}`}
	if !slices.Equal(all, want) {
		t.Errorf("two dumps in one group printed\n%v\nwant each message once:\n%v", all, want)
	}
}

func TestDumpRefusesAMissingTopicWithoutCreatingIt(t *testing.T) {
	k := harness.StartKafka(t, harness.KafkaOptions{Topics: []string{firehose}}) // auto-creation on
	cfg := testConfig(t, k)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	for _, group := range []string{"", "dumpers"} {
		_, err := Dump(ctx, cfg, Options{Topic: "demo.nope", Group: group}, &bytes.Buffer{}, nil)
		if !errors.Is(err, ErrUnknownTopic) || !strings.Contains(err.Error(), "demo.nope") {
			t.Errorf("Dump of a missing topic (group %q) = %v, want ErrUnknownTopic naming it", group, err)
		}
	}
	topics, err := cfg.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range topics {
		if tp.Name == "demo.nope" {
			t.Error("Dump created the missing topic")
		}
	}
}

func TestDumpRefusesBadOptionsBeforeConnecting(t *testing.T) {
	cfg := kafkaclient.Config{Brokers: []string{"127.0.0.1:1"}, ConnTimeout: time.Second}
	for _, opts := range []Options{{}, {Topic: "t", Max: -1}, {Topic: "t", Format: Format{JustBody: true, NoBody: true}}} {
		if _, err := Dump(context.Background(), cfg, opts, &bytes.Buffer{}, nil); err == nil || strings.Contains(err.Error(), "127.0.0.1") {
			t.Errorf("Dump(%+v) = %v, want an options error", opts, err)
		}
	}
}
