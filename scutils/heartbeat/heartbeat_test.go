package heartbeat_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/heartbeat"
)

var redisServer harness.SharedRedis

func TestMain(m *testing.M) { redisServer.Main(m) }

func TestRunKeepsTheKeyAliveAndDeletesItOnStop(t *testing.T) {
	rdb := redisServer.TestClient(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		heartbeat.Run(ctx, rdb, "stats:test:self:host:id", 400*time.Millisecond, nil)
	}()
	// Over several timeouts the key never disappears and keeps a fresh time.
	deadline := time.Now().Add(1500 * time.Millisecond)
	seen := 0
	for time.Now().Before(deadline) {
		v, err := rdb.Get(context.Background(), "stats:test:self:host:id").Result()
		if err == nil {
			f, perr := strconv.ParseFloat(v, 64)
			if perr != nil || time.Since(time.Unix(int64(f), 0)) > 3*time.Second {
				t.Fatalf("heartbeat value %q is not a recent epoch time", v)
			}
			ttl := rdb.PTTL(context.Background(), "stats:test:self:host:id").Val()
			if ttl <= 0 || ttl > 400*time.Millisecond {
				t.Fatalf("ttl %v, want within (0, 400ms]", ttl)
			}
			seen++
		} else if seen > 0 {
			t.Fatalf("key vanished while the heartbeat ran: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if seen == 0 {
		t.Fatal("key never written")
	}
	cancel()
	<-done
	if n := rdb.Exists(context.Background(), "stats:test:self:host:id").Val(); n != 0 {
		t.Fatal("key left behind after a clean stop")
	}
}

func TestNewIDIsTwelveHexDigits(t *testing.T) {
	a, b := heartbeat.NewID(), heartbeat.NewID()
	if len(a) != 12 || a == b {
		t.Fatalf("ids %q %q", a, b)
	}
	if _, err := strconv.ParseUint(a, 16, 64); err != nil {
		t.Fatal(err)
	}
}
