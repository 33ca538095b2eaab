package localcluster

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

// The components rely on keys expiring on their own (heartbeats, locks,
// throttle windows, duplicate filters); miniredis only ages keys when told.
func TestEmbeddedRedisExpiresKeysWithTheClock(t *testing.T) {
	port := harness.Port(t)
	r, err := startMiniredis(port)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: r.addr})
	defer rdb.Close()
	if ok, err := rdb.SetNX(ctx, "lock:x", "token", 300*time.Millisecond).Result(); !ok || err != nil {
		t.Fatalf("SET NX PX: %v, %v", ok, err)
	}
	if err := rdb.Set(ctx, "heartbeat", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Expire(ctx, "heartbeat", time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if n := rdb.Exists(ctx, "lock:x", "heartbeat").Val(); n != 2 {
		t.Fatalf("EXISTS = %d right after SET, want 2", n)
	}
	deadline := time.Now().Add(5 * time.Second)
	for rdb.Exists(ctx, "lock:x").Val() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("a key with a 300 ms TTL still exists after 5 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if rdb.Exists(ctx, "heartbeat").Val() != 1 {
		t.Error("a key with a 1 s TTL expired with the 300 ms one")
	}
	for rdb.Exists(ctx, "heartbeat").Val() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("a key with a 1 s TTL still exists after 5 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
