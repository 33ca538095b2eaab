package redisconn_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisconn"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// waiter is the Waiter of env's settings, logging to the returned buffer.
func waiter(t *testing.T, env ...string) (*redisconn.Waiter, *settings.Settings, *harness.OutputBuffer) {
	t.Helper()
	s, err := settings.Load(redisconn.Settings(), settings.Options{Environ: env})
	if err != nil {
		t.Fatal(err)
	}
	out := &harness.OutputBuffer{}
	log, err := logfactory.New(logfactory.Config{Output: out, Level: "INFO", IncludeExtra: true})
	if err != nil {
		t.Fatal(err)
	}
	w, err := redisconn.NewWaiter(s, log)
	if err != nil {
		t.Fatal(err)
	}
	return w, s, out
}

// waits is how many WAIT commands node has run.
func waits(t *testing.T, node *harness.Redis) int {
	t.Helper()
	rdb := node.Client()
	defer rdb.Close()
	stats, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(stats, "\r\n") {
		if rest, ok := strings.CutPrefix(line, "cmdstat_wait:calls="); ok {
			n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
			return n
		}
	}
	return 0
}

// A Redis without replicas: a write that waits for one carries on after
// REDIS_WAIT_TIMEOUT_MS, counted and logged, a command alone as a
// pipeline; without the Waiter's context nothing waits.
func TestWaitWithoutReplicasCarriesOnCountedAndLogged(t *testing.T) {
	r := harness.StartRedis(t)
	w, s, out := waiter(t, "REDIS_HOST=127.0.0.1", "REDIS_PORT="+strconv.Itoa(r.Port),
		"REDIS_WAIT_REPLICAS=1", "REDIS_WAIT_TIMEOUT_MS=100")
	c := redisconn.New(s)
	defer c.Close()
	ctx := w.Context(context.Background())
	if err := c.Set(ctx, "a", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "b", "2", 0)
		p.Incr(ctx, "c")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n := c.Get(context.Background(), "c").Val(); n != "1" {
		t.Errorf("c = %q after one INCR", n)
	}
	if got := testutil.ToFloat64(w.Collector()); got != 2 {
		t.Errorf("scrapy_redis_wait_short_total = %v, want 2 (a command, a pipeline)", got)
	}
	if got := waits(t, r); got != 2 {
		t.Errorf("Redis ran WAIT %d times, want 2", got)
	}
	if !strings.Contains(out.String(), "Fewer replicas than asked acknowledged a write in time") ||
		strings.Count(out.String(), "Fewer replicas") != 1 {
		t.Errorf("want one warning (spaced), log:\n%s", out.String())
	}
	if err := c.Set(context.Background(), "d", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got := waits(t, r); got != 2 {
		t.Errorf("a write without the Waiter's context waited (WAIT ran %d times)", got)
	}
}

// A Redis with a replica: the waited writes are acknowledged, nothing is
// counted.
func TestWaitForAReplicaOfOneRedis(t *testing.T) {
	r, replica := harness.StartRedis(t), harness.StartRedis(t)
	rc := replica.TestClient(t)
	if err := rc.ReplicaOf(context.Background(), r.Host, strconv.Itoa(r.Port)).Err(); err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, "the replica in sync", 30*time.Second, func() bool {
		info, err := rc.Info(context.Background(), "replication").Result()
		return err == nil && strings.Contains(info, "master_link_status:up")
	})
	// A timeout a loaded machine's replica meets.
	w, s, out := waiter(t, "REDIS_HOST=127.0.0.1", "REDIS_PORT="+strconv.Itoa(r.Port), "REDIS_WAIT_REPLICAS=1", "REDIS_WAIT_TIMEOUT_MS=5000")
	c := redisconn.New(s)
	defer c.Close()
	ctx := w.Context(context.Background())
	for i := range 5 {
		if err := c.Set(ctx, "k", i, 0).Err(); err != nil {
			t.Fatal(err)
		}
		if got := rc.Get(context.Background(), "k").Val(); got != strconv.Itoa(i) {
			t.Fatalf("the replica holds k=%q right after the waited write of %d", got, i)
		}
	}
	if got := testutil.ToFloat64(w.Collector()); got != 0 {
		t.Errorf("scrapy_redis_wait_short_total = %v with the replica up; log:\n%s", got, out.String())
	}
	if got := waits(t, r); got != 5 {
		t.Errorf("Redis ran WAIT %d times, want 5", got)
	}
}

// On a Redis Cluster a pipeline's part on each master ends with WAIT;
// after a master's death its promoted replica has no replica of its own:
// writes there carry on after the timeout, counted, and the others'
// are acknowledged.
func TestWaitOnEveryMasterOfAClusterAndAfterAFailover(t *testing.T) {
	rc := harness.StartRedisCluster(t)
	// Every replica up: a timeout a loaded machine's replicas meet (a
	// replica descheduled for 200 ms once made a write short here).
	w, s, out := waiter(t, "REDIS_CLUSTER_NODES="+rc.Seeds(), "REDIS_WAIT_REPLICAS=1", "REDIS_WAIT_TIMEOUT_MS=5000")
	c := redisconn.New(s)
	defer c.Close()
	keys := []string{"{a}", "{b}", "{c}", "{d}", "{e}", "{f}", "{g}", "{h}"}
	writeWith := func(ctx context.Context, c redis.UniversalClient) error {
		_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, k := range keys {
				p.Incr(ctx, k)
			}
			return nil
		})
		return err
	}
	write := func() error { return writeWith(w.Context(context.Background()), c) }
	masters := map[string]*harness.Redis{}
	for _, k := range keys {
		m := rc.MasterOf(t, k)
		masters[m.Addr] = m
	}
	if len(masters) != 3 {
		t.Fatalf("the keys are on %d masters, want 3", len(masters))
	}
	if err := write(); err != nil {
		t.Fatal(err)
	}
	for _, m := range masters {
		if got := waits(t, m); got < 1 {
			t.Errorf("master %s ran WAIT %d times, want at least 1", m.Addr, got)
		}
	}
	for _, k := range keys {
		if n := c.Get(context.Background(), k).Val(); n != "1" {
			t.Errorf("%s = %q after one INCR", k, n)
		}
	}
	if got := testutil.ToFloat64(w.Collector()); got != 0 {
		t.Errorf("scrapy_redis_wait_short_total = %v with every replica up; log:\n%s", got, out.String())
	}
	// After the failover, writes to the promoted master wait out a short
	// timeout (a client of its own, so each try takes 200 ms).
	short, s2, _ := waiter(t, "REDIS_CLUSTER_NODES="+rc.Seeds(), "REDIS_WAIT_REPLICAS=1", "REDIS_WAIT_TIMEOUT_MS=200")
	c2 := redisconn.New(s2)
	defer c2.Close()
	promoted := rc.KillMaster(t, rc.MasterOf(t, keys[0]))
	harness.WaitFor(t, "the waited writes to reach the promoted master", 30*time.Second, func() bool {
		return writeWith(short.Context(context.Background()), c2) == nil && waits(t, promoted) > 0
	})
	if got := testutil.ToFloat64(short.Collector()); got < 1 {
		t.Errorf("scrapy_redis_wait_short_total = %v after writes to a master without replicas", got)
	}
}

// The settings are checked: a negative count, a zero timeout (WAIT would
// block for ever) and a timeout past the socket's are refused.
func TestWaitSettingsAreChecked(t *testing.T) {
	for _, env := range [][]string{
		{"REDIS_WAIT_REPLICAS=-1"},
		{"REDIS_WAIT_REPLICAS=1", "REDIS_WAIT_TIMEOUT_MS=0"},
		{"REDIS_WAIT_REPLICAS=1", "REDIS_WAIT_TIMEOUT_MS=2000", "REDIS_SOCKET_TIMEOUT=1"},
	} {
		s, err := settings.Load(redisconn.Settings(), settings.Options{Environ: env})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := redisconn.NewWaiter(s, nil); err == nil || !strings.Contains(err.Error(), "REDIS_WAIT_") {
			t.Errorf("%v: error %v, want one naming the setting", env, err)
		}
	}
	s, _ := settings.Load(redisconn.Settings(), settings.Options{})
	if w, err := redisconn.NewWaiter(s, nil); w != nil || err != nil {
		t.Errorf("REDIS_WAIT_REPLICAS unset: %v, %v; want no Waiter", w, err)
	}
}
