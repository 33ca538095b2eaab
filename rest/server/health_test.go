package server_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/kafkaclient"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

func index(t *testing.T, in *instance) map[string]any {
	t.Helper()
	a := in.do(t, "GET", "/", "", "")
	if a.Code != 200 {
		t.Fatalf("index: %d %s", a.Code, a.Raw)
	}
	return a.Body
}

func TestIndexReportsTheServiceAndItsConnections(t *testing.T) {
	_, in := startOne(t)
	got := index(t, in)
	if got["kafka_connected"] != true || got["redis_connected"] != true || got["node_health"] != "GREEN" ||
		got["my_id"] != in.svc.ID() || len(in.svc.ID()) != 12 {
		t.Fatalf("index %v", got)
	}
	if up, ok := got["uptime_sec"].(float64); !ok || up < 0 || up > 60 {
		t.Fatalf("uptime_sec %v", got["uptime_sec"])
	}
	if len(got) != 5 {
		t.Fatalf("index has %d keys, want the spec's 5: %v", len(got), got)
	}
	// POST works too, as in the original.
	if a := in.do(t, "POST", "/", "", ""); a.Code != 200 || a.Body["node_health"] != "GREEN" {
		t.Fatalf("POST /: %d %s", a.Code, a.Raw)
	}
	if a := in.do(t, "HEAD", "/", "", ""); a.Code != 200 {
		t.Fatalf("HEAD /: %d", a.Code)
	}
	if !strings.Contains(in.logs.String(), `"message": "'index' endpoint called"`) {
		t.Fatal("no 'index' log line")
	}
}

func TestIndexFollowsRedisGoingAndComing(t *testing.T) {
	c, in := startOne(t)
	c.redis.Stop()
	harness.WaitFor(t, "the index shows Redis gone", 5*time.Second, func() bool {
		got := index(t, in)
		return got["redis_connected"] == false && got["kafka_connected"] == true && got["node_health"] == "YELLOW"
	})
	if err := c.redis.Restart(); err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, "the index shows Redis back", 15*time.Second, func() bool { return index(t, in)["node_health"] == "GREEN" })
	// And Redis works again for polls.
	c.rdb.Set(context.Background(), rediskeys.RestPollKey("back"), `{"uuid": "back"}`, time.Minute)
	if a := in.post(t, "/poll", `{"poll_id": "back"}`); a.Code != 200 {
		t.Fatalf("%d %s", a.Code, a.Raw)
	}
}

func TestServiceWaitsForKafkaAndFollowsItGoingAndComing(t *testing.T) {
	port := harness.Port(t)
	startKafka := func() *kfake.Cluster {
		k, err := kfake.NewCluster(kfake.Ports(port))
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	// Neither Kafka nor Redis is there when the service starts.
	redisPort := harness.Port(t)
	in := startInstance(t, settingsFor(t, redisPort, "127.0.0.1:"+strconv.Itoa(port)))
	if got := index(t, in); got["node_health"] != "RED" || got["kafka_connected"] != false || got["redis_connected"] != false {
		t.Fatalf("index %v", got)
	}
	crawl := `{"url": "http://example.com", "appid": "testapp", "crawlid": "abc123"}`
	if a := in.post(t, "/feed", crawl); a.Code != 500 {
		t.Fatalf("%d %s", a.Code, a.Raw)
	}

	k := startKafka()
	harness.WaitFor(t, "Kafka is connected", 15*time.Second, in.svc.KafkaConnected)
	if got := index(t, in); got["node_health"] != "YELLOW" {
		t.Fatalf("index %v", got)
	}
	if a := in.post(t, "/feed", crawl); a.Code != 200 {
		t.Fatalf("%d %s", a.Code, a.Raw)
	}

	k.Close()
	harness.WaitFor(t, "Kafka is seen as gone", 10*time.Second, func() bool { return !in.svc.KafkaConnected() })
	if a := in.post(t, "/feed", crawl); a.Code != 500 || harness.JSONText(t, a.Body) != failure("Unable to connect to Kafka") {
		t.Fatalf("%d %s", a.Code, a.Raw)
	}

	k = startKafka()
	defer k.Close()
	harness.WaitFor(t, "Kafka is connected again", 20*time.Second, in.svc.KafkaConnected)
	harness.WaitFor(t, "a crawl request is accepted again", 10*time.Second, func() bool { return in.post(t, "/feed", crawl).Code == 200 })
}

func TestHeartbeatIsKeptWhileRunningAndRemovedOnClose(t *testing.T) {
	c := newCluster(t)
	in := startInstance(t, settingsFor(t, c.redis.Port, c.kafka.Hosts(), "HEARTBEAT_TIMEOUT=30"))
	host, _ := os.Hostname()
	key := rediskeys.HeartbeatKey("rest", host, in.svc.ID())
	harness.WaitFor(t, "the heartbeat key exists", 5*time.Second, func() bool {
		return c.rdb.Exists(context.Background(), key).Val() == 1
	})
	if ttl := c.rdb.TTL(context.Background(), key).Val(); ttl <= 0 || ttl > 30*time.Second {
		t.Fatalf("%s expires in %s, want within HEARTBEAT_TIMEOUT", key, ttl)
	}
	v, _ := c.rdb.Get(context.Background(), key).Float64()
	if time.Since(time.Unix(int64(v), 0)) > time.Minute {
		t.Fatalf("heartbeat value %v is not the current time", v)
	}
	in.svc.Close()
	if c.rdb.Exists(context.Background(), key).Val() != 0 {
		t.Fatal("heartbeat key left after Close")
	}
}

func TestAnswersAreStillReadAfterKafkaLostItsMessages(t *testing.T) {
	r := harness.StartRedis(t)
	rdb := r.TestClient(t)
	port := harness.Port(t)
	hosts := "127.0.0.1:" + strconv.Itoa(port)
	k, err := kfake.NewCluster(kfake.Ports(port))
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{redis: r, rdb: rdb, kcfg: kafkaclient.Config{Brokers: []string{hosts}, TopicPrefix: "demo", ConnTimeout: 5 * time.Second,
		MaxRequestBytes: 1 << 20, Partitions: 2, ReplicationFactor: 1}}
	in := startInstance(t, settingsFor(t, r.Port, hosts))
	harness.WaitFor(t, "the service connects", 10*time.Second, func() bool { return in.svc.KafkaConnected() && in.svc.RedisConnected() })
	var before []string
	for i := range 10 {
		before = append(before, fmt.Sprintf(`{"uuid": "before-%d"}`, i))
	}
	c.publish(t, before...)
	harness.WaitFor(t, "the answers are read", 10*time.Second, func() bool {
		return len(rdb.Keys(context.Background(), "rest:poll:before-*").Val()) == 10
	})

	// A broker without the old data takes over the address.
	k.Close()
	harness.WaitFor(t, "Kafka is seen as gone", 10*time.Second, func() bool { return !in.svc.KafkaConnected() })
	k, err = kfake.NewCluster(kfake.Ports(port))
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	harness.WaitFor(t, "Kafka is connected again", 20*time.Second, in.svc.KafkaConnected)
	c.publish(t, `{"uuid": "after-1"}`, `{"uuid": "after-2"}`)
	harness.WaitFor(t, "the answers after the loss are read", 15*time.Second, func() bool {
		return rdb.Exists(context.Background(), "rest:poll:after-1", "rest:poll:after-2").Val() == 2
	})
}
