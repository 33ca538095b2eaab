package harness_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// A started cluster serves every slot from three masters, each with a
// replica, and spreads keys over all three; after its master is killed, a
// replica takes over and the keys written (and replicated: WAIT) before are
// still there.
func TestRedisClusterSurvivesAKilledMaster(t *testing.T) {
	c := harness.StartRedisCluster(t)
	ctx := context.Background()
	rdb := c.TestClient(t)
	masters := c.Masters(t)
	if len(masters) != 3 || len(c.Nodes) != 6 {
		t.Fatalf("%d masters of %d nodes, want 3 of 6", len(masters), len(c.Nodes))
	}
	perMaster := map[string]int{}
	for i := range 100 {
		key := fmt.Sprintf("key%d", i)
		if err := rdb.Set(ctx, key, i, 0).Err(); err != nil {
			t.Fatal(err)
		}
		slot, err := rdb.ClusterKeySlot(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if int(slot) != rediskeys.Slot(key) {
			t.Fatalf("rediskeys.Slot(%q) = %d, Redis says %d", key, rediskeys.Slot(key), slot)
		}
		perMaster[c.MasterOf(t, key).Addr]++
	}
	if len(perMaster) != 3 {
		t.Fatalf("100 keys on %d masters, want 3: %v", len(perMaster), perMaster)
	}
	if got, want := rediskeys.Slot("a{crawl}b"), rediskeys.Slot("crawl"); got != want {
		t.Fatalf("Slot of a hash-tagged key %d, of its tag %d", got, want)
	}
	for _, m := range masters {
		mc := m.TestClient(t)
		if n, err := mc.Do(ctx, "WAIT", 1, 10000).Int(); err != nil || n != 1 {
			t.Fatalf("WAIT on %s: %d replicas, %v", m.Addr, n, err)
		}
	}

	victim := c.MasterOf(t, "key7")
	promoted := c.KillMaster(t, victim)
	if promoted == victim {
		t.Fatal("the killed master came back as the promoted one")
	}
	if got := c.MasterOf(t, "key7"); got != promoted {
		t.Fatalf("key7 is served by %s, want the promoted replica %s", got.Addr, promoted.Addr)
	}
	after := c.TestClient(t)
	for i := range 100 {
		if v, err := after.Get(ctx, fmt.Sprintf("key%d", i)).Int(); err != nil || v != i {
			t.Fatalf("key%d after failover: %d, %v", i, v, err)
		}
	}
	// The client made before the failover follows it too.
	if !harness.Until(30*time.Second, func() bool { return rdb.Get(ctx, "key7").Val() == "7" }) {
		t.Fatal("the client made before the failover does not read key7")
	}
}

// A cluster started without replicas is three masters and nothing else:
// every node serves slots, none replicates, and keys spread over all three.
func TestRedisClusterWithoutReplicasIsThreeMastersAlone(t *testing.T) {
	c := harness.StartRedisClusterWith(t, harness.RedisClusterOptions{NoReplicas: true})
	ctx := context.Background()
	if masters := c.Masters(t); len(masters) != 3 || len(c.Nodes) != 3 {
		t.Fatalf("%d masters of %d nodes, want 3 of 3", len(masters), len(c.Nodes))
	}
	for _, n := range c.Nodes {
		info := n.TestClient(t).Info(ctx, "replication").Val()
		if !strings.Contains(info, "role:master") || !strings.Contains(info, "connected_slaves:0") {
			t.Errorf("%s: %s", n.Addr, info)
		}
	}
	rdb := c.TestClient(t)
	perMaster := map[string]bool{}
	for i := range 30 {
		key := fmt.Sprintf("key%d", i)
		if err := rdb.Set(ctx, key, i, 0).Err(); err != nil {
			t.Fatal(err)
		}
		perMaster[c.MasterOf(t, key).Addr] = true
	}
	if len(perMaster) != 3 {
		t.Errorf("30 keys on %d masters, want 3", len(perMaster))
	}
}

// A cluster of one master is one node serving every slot: a cluster
// client's keys, and a script's keys of different slots, all land there.
func TestRedisClusterOfOneMasterServesEverySlot(t *testing.T) {
	c := harness.StartRedisClusterWith(t, harness.RedisClusterOptions{OneMaster: true})
	ctx := context.Background()
	if masters := c.Masters(t); len(masters) != 1 || len(c.Nodes) != 1 {
		t.Fatalf("%d masters of %d nodes, want 1 of 1", len(masters), len(c.Nodes))
	}
	info := c.Nodes[0].TestClient(t).ClusterInfo(ctx).Val()
	if !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_slots_assigned:16384") || !strings.Contains(info, "cluster_known_nodes:1") {
		t.Fatalf("CLUSTER INFO: %s", info)
	}
	rdb := c.TestClient(t)
	for i := range 30 {
		key := fmt.Sprintf("key%d", i)
		if err := rdb.Set(ctx, key, i, 0).Err(); err != nil {
			t.Fatal(err)
		}
		if got := c.MasterOf(t, key).Addr; got != c.Nodes[0].Addr {
			t.Errorf("%s on %s, want the one master %s", key, got, c.Nodes[0].Addr)
		}
	}
	if n := c.Nodes[0].TestClient(t).DBSize(ctx).Val(); n != 30 {
		t.Errorf("the master holds %d keys, want 30", n)
	}
}
