package harness_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/segmentio/kafka-go"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

func TestRedisKeepsAppendOnlyDataAcrossRestart(t *testing.T) {
	r := harness.StartRedis(t, harness.RedisOptions{AppendOnly: true})
	ctx := context.Background()
	c := r.TestClient(t)
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := r.Restart(); err != nil {
		t.Fatal(err)
	}
	got, err := c.Get(ctx, "k").Result()
	if err != nil || got != "v" {
		t.Fatalf("after restart got %q, %v; want v", got, err)
	}
}

func TestRedisKillMakesItUnreachable(t *testing.T) {
	r := harness.StartRedis(t)
	c := r.TestClient(t)
	r.Kill()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("PING succeeded against a killed server")
	}
}

func TestZooKeeperKeepsDataAcrossRestart(t *testing.T) {
	z := harness.StartZooKeeper(t)
	conn, _, err := zk.Connect([]string{z.Addr}, 2*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Create("/harness", []byte("hello"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if err := z.Restart(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		data, _, err := conn.Get("/harness")
		if err == nil {
			if string(data) != "hello" {
				t.Fatalf("got %q, want hello", data)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("node unreadable after restart: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestKafkaRoundTripsAMessageWithKafkaGo(t *testing.T) {
	k := harness.StartKafka(t, harness.KafkaOptions{Topics: []string{"demo.test"}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	w := &kafka.Writer{Addr: kafka.TCP(k.Addrs...), Topic: "demo.test", BatchTimeout: time.Millisecond}
	defer w.Close()
	if err := w.WriteMessages(ctx, kafka.Message{Value: []byte(`{"hello":1}`)}); err != nil {
		t.Fatal(err)
	}
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: k.Addrs, Topic: "demo.test", Partition: 0, MaxWait: 50 * time.Millisecond})
	defer r.Close()
	m, err := r.ReadMessage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Value) != `{"hello":1}` {
		t.Fatalf("got %s", m.Value)
	}
}
