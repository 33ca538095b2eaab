package answers_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/rest/answers"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
)

var redisServer harness.SharedRedis

func TestMain(m *testing.M) { redisServer.Main(m) }

func testLogger(t *testing.T) (*logfactory.Logger, *harness.OutputBuffer) {
	t.Helper()
	buf := &harness.OutputBuffer{}
	log := harness.Logger(t, logfactory.Config{Level: "DEBUG", JSON: true}, buf)
	return log, buf
}

func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	harness.WaitFor(t, what, timeout, cond)
}

func TestStoreKeepsAnswersAtTheOriginalsKeyWithAnExpiry(t *testing.T) {
	rdb := redisServer.TestClient(t)
	ctx := context.Background()
	log, _ := testLogger(t)
	s := answers.NewStore(rdb, time.Minute, log)
	s.Start(ctx)
	defer s.Close()
	s.Save("store-1", []byte(`{"uuid": "store-1"}`))
	waitUntil(t, 5*time.Second, "the answer is stored", func() bool {
		return rdb.Get(ctx, "rest:poll:store-1").Val() == `{"uuid": "store-1"}`
	})
	if ttl := rdb.TTL(ctx, "rest:poll:store-1").Val(); ttl <= 0 || ttl > time.Minute {
		t.Fatalf("ttl %s", ttl)
	}
	got, err := s.Take(ctx, "store-1")
	if err != nil || string(got) != `{"uuid": "store-1"}` {
		t.Fatalf("Take: %q %v", got, err)
	}
	if _, err := s.Take(ctx, "store-1"); !errors.Is(err, answers.ErrNotFound) {
		t.Fatalf("second Take: %v, want ErrNotFound", err)
	}
}

func TestStoreRetriesWhileRedisIsAwayAndReportsTheFailures(t *testing.T) {
	r := harness.StartRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer rdb.Close()
	ctx := context.Background()
	log, logs := testLogger(t)
	s := answers.NewStore(rdb, time.Minute, log)
	var failures atomic.Int64
	s.OnError = func(error) { failures.Add(1) }
	s.Start(ctx)
	defer s.Close()

	r.Stop()
	s.Save("away-1", []byte(`{"uuid": "away-1"}`))
	waitUntil(t, 5*time.Second, "a failure is reported", func() bool { return failures.Load() > 0 })
	if _, err := s.Take(ctx, "x"); err == nil || errors.Is(err, answers.ErrNotFound) {
		t.Fatalf("Take with Redis away: %v", err)
	}
	if err := r.Restart(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 15*time.Second, "the answer is stored once Redis is back", func() bool {
		return rdb.Get(ctx, "rest:poll:away-1").Val() == `{"uuid": "away-1"}`
	})
	if !strings.Contains(logs.String(), "Unable to send result to redis; retrying") {
		t.Fatalf("retries not logged:\n%s", logs.String())
	}
}

func TestStoreDropsAnswersThatWouldHaveExpired(t *testing.T) {
	r := harness.StartRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr, MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	defer rdb.Close()
	log, logs := testLogger(t)
	s := answers.NewStore(rdb, 300*time.Millisecond, log)
	s.Start(context.Background())
	defer s.Close()
	r.Stop()
	s.Save("old-1", []byte(`{}`))
	waitUntil(t, 10*time.Second, "the answer is dropped", func() bool {
		return strings.Contains(logs.String(), "Dropping an answer Redis could not store before it would have expired")
	})
}

func TestCloseGivesQueuedAnswersOneAttempt(t *testing.T) {
	rdb := redisServer.TestClient(t)
	ctx := context.Background()
	log, _ := testLogger(t)
	s := answers.NewStore(rdb, time.Minute, log)
	for i := range 100 {
		s.Save("close-"+string(rune('a'+i%26))+string(rune('a'+i/26)), []byte(`{}`))
	}
	s.Start(ctx)
	s.Close()
	if n := len(rdb.Keys(ctx, "rest:poll:close-*").Val()); n != 100 {
		t.Fatalf("%d of 100 queued answers stored by Close", n)
	}
}
