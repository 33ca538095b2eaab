package producer_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/scrapycluster/scrapy-cluster-go/rest/producer"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

const topic = "demo.incoming"

func start(t *testing.T, partitions int32) *kafka.Client {
	t.Helper()
	k := harness.StartKafka(t, harness.KafkaOptions{Topics: []string{topic}, Partitions: partitions})
	return &kafka.Client{Addr: kafka.TCP(k.Addrs...), Timeout: 5 * time.Second}
}

// read returns every value in topic, partition by partition.
func read(t *testing.T, client *kafka.Client, partitions int) map[int][]string {
	t.Helper()
	out := map[int][]string{}
	for p := range partitions {
		res, err := client.Fetch(context.Background(), &kafka.FetchRequest{Topic: topic, Partition: p, Offset: 0, MaxBytes: 64 << 20})
		if err != nil || res.Error != nil {
			t.Fatalf("fetch partition %d: %v %v", p, err, res.Error)
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
	p := producer.New(producer.Config{Client: client, Topic: topic, Partitions: 3})
	defer p.Close()
	const n = 300
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.Send(context.Background(), fmt.Appendf(nil, `{"n": %d}`, i)); err != nil {
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
	p := producer.New(producer.Config{Client: client, Topic: topic, MaxBatchBytes: 4096, Senders: 1})
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
			if err := p.Send(context.Background(), []byte(v)); err != nil {
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
	port, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	client := &kafka.Client{Addr: kafka.TCP(fmt.Sprint("127.0.0.1:", port)), Timeout: time.Second}
	p := producer.New(producer.Config{Client: client, Topic: topic, Timeout: 2 * time.Second})
	defer p.Close()
	start := time.Now()
	if err := p.Send(context.Background(), []byte(`{}`)); err == nil {
		t.Fatal("sent without Kafka")
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("took %s, more than the timeout allows", time.Since(start))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.Send(ctx, []byte(`{}`)); !errors.Is(err, context.Canceled) {
		t.Fatalf("Send with a cancelled context: %v", err)
	}
}

func TestCloseSendsWhatWasAcceptedAndRefusesMore(t *testing.T) {
	client := start(t, 2)
	p := producer.New(producer.Config{Client: client, Topic: topic, Partitions: 2})
	var wg sync.WaitGroup
	var mu sync.Mutex
	sent := 0
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.Send(context.Background(), fmt.Appendf(nil, "%d", i)); err == nil {
				mu.Lock()
				sent++
				mu.Unlock()
			} else if !errors.Is(err, producer.ErrClosed) {
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
	if err := p.Send(context.Background(), []byte("late")); !errors.Is(err, producer.ErrClosed) {
		t.Fatalf("Send after Close: %v", err)
	}
	p.Close() // twice is fine
}
