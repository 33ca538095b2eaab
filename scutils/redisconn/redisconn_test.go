package redisconn_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisconn"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

func TestClientFromSettingsReachesRedisAndSurvivesARestart(t *testing.T) {
	r := harness.StartRedis(t)
	s, err := settings.Load(redisconn.Settings(), settings.Options{Environ: []string{
		"REDIS_HOST=127.0.0.1", "REDIS_PORT=" + strconv.Itoa(r.Port), "REDIS_DB=2", "REDIS_SOCKET_TIMEOUT=1",
	}})
	if err != nil {
		t.Fatal(err)
	}
	c := redisconn.New(s).(*redis.Client)
	defer c.Close()
	ctx := context.Background()
	if err := redisconn.Ping(ctx, c); err != nil {
		t.Fatal(err)
	}
	if c.Options().DB != 2 || c.Options().ReadTimeout != time.Second {
		t.Fatalf("options %+v", c.Options())
	}
	r.Kill()
	if err := redisconn.Ping(ctx, c); err == nil {
		t.Fatal("ping succeeded with Redis down")
	}
	if err := r.Restart(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for redisconn.Ping(ctx, c) != nil {
		if time.Now().After(deadline) {
			t.Fatal("client did not reconnect after Redis restarted")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// In cluster mode the client reaches every master of the cluster, and
// follows a failover: once a killed master's replica took over, the same
// client pings every master again and reads what was written before.
func TestClusterClientFromSettingsFollowsAFailover(t *testing.T) {
	c := harness.StartRedisCluster(t)
	s, err := settings.Load(redisconn.Settings(), settings.Options{Environ: []string{
		"REDIS_CLUSTER_NODES=" + c.Seeds(), "REDIS_SOCKET_TIMEOUT=1",
	}})
	if err != nil {
		t.Fatal(err)
	}
	if !redisconn.Cluster(s) {
		t.Fatal("not in cluster mode with REDIS_CLUSTER_NODES set")
	}
	rdb := redisconn.New(s)
	defer rdb.Close()
	ctx := context.Background()
	if err := redisconn.Ping(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, "before", "kept", 0).Err(); err != nil {
		t.Fatal(err)
	}
	master := c.MasterOf(t, "before")
	if err := master.TestClient(t).Do(ctx, "WAIT", 1, 10000).Err(); err != nil {
		t.Fatal(err)
	}
	c.KillMaster(t, master)
	harness.WaitFor(t, "the client to follow the failover", 30*time.Second, func() bool {
		return redisconn.Ping(ctx, rdb) == nil && rdb.Get(ctx, "before").Val() == "kept"
	})
}

// A cluster that cannot be reached is named by its seeds.
func TestClusterPingNamesTheSeeds(t *testing.T) {
	seed := "127.0.0.1:" + strconv.Itoa(harness.Port(t))
	s, err := settings.Load(redisconn.Settings(), settings.Options{Environ: []string{
		"REDIS_CLUSTER_NODES=" + seed, "REDIS_SOCKET_TIMEOUT=1",
	}})
	if err != nil {
		t.Fatal(err)
	}
	rdb := redisconn.New(s)
	defer rdb.Close()
	err = redisconn.Ping(context.Background(), rdb)
	if err == nil || !strings.Contains(err.Error(), "redis cluster at "+seed) {
		t.Fatalf("Ping of an unreachable cluster: %v, want it to name %s", err, seed)
	}
}
