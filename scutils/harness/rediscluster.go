package harness

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// A RedisCluster's shape: three masters, one replica each (none with
// RedisClusterOptions.NoReplicas).
const (
	clusterMasters  = 3
	clusterReplicas = 1
	// clusterNodeTimeout is cluster-node-timeout: how long a master may be
	// unreachable before its replica takes over. Short, for quick failovers
	// in tests, yet long enough that a busy machine's pauses do not start
	// failovers of their own.
	clusterNodeTimeout = 2 * time.Second
	// clusterReadyTimeout bounds the wait for a new cluster, or a failover,
	// to settle (the machine may be loaded).
	clusterReadyTimeout = 60 * time.Second
)

// clusterNodeArgs are the redis-server arguments of a cluster node whose
// bus listens on busPort. cluster-require-full-coverage no keeps the
// shards that are up serving while a dead master's replica takes over;
// cluster-replica-validity-factor 0 lets a replica take over however long
// it has been out of touch (a loaded machine's replica can lag).
func clusterNodeArgs(busPort int) []string {
	return []string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
		"--cluster-port", strconv.Itoa(busPort),
		"--cluster-node-timeout", strconv.Itoa(int(clusterNodeTimeout / time.Millisecond)),
		"--cluster-require-full-coverage", "no", "--cluster-replica-validity-factor", "0"}
}

// RedisCluster is a real Redis Cluster on 127.0.0.1: three masters and a
// replica of each, six redis-server child processes in cluster mode.
type RedisCluster struct {
	// Nodes are every node, masters and replicas, in start order (which
	// nodes are masters changes with failovers: see Masters).
	Nodes []*Redis
}

// RedisClusterOptions shape a RedisCluster.
type RedisClusterOptions struct {
	// NoReplicas starts the three masters alone: a cluster that cannot
	// fail over, whose masters feed no replica (for measuring a master's
	// own work against one Redis's, like for like).
	NoReplicas bool
	// OneMaster starts one node serving every slot, alone: cluster mode
	// without keys spread over masters (for measuring what cluster mode
	// costs a process apart from the split).
	OneMaster bool
}

// StartRedisCluster starts a Redis Cluster of three masters with a
// replica each for tb and removes it when tb ends.
func StartRedisCluster(tb testing.TB) *RedisCluster {
	tb.Helper()
	return StartRedisClusterWith(tb, RedisClusterOptions{})
}

// StartRedisClusterWith starts a Redis Cluster shaped by opts for tb and
// removes it when tb ends.
func StartRedisClusterWith(tb testing.TB, opts RedisClusterOptions) *RedisCluster {
	tb.Helper()
	c, err := LaunchRedisClusterWith(opts)
	return started(tb, "redis cluster", c, err)
}

// LaunchRedisCluster starts six redis-server nodes on free loopback ports,
// joins them into a cluster of three masters with a replica each
// (redis-cli --cluster create) and waits until every node reports the
// cluster ok with every slot served and every replica in sync. Close
// removes it.
func LaunchRedisCluster() (*RedisCluster, error) {
	return LaunchRedisClusterWith(RedisClusterOptions{})
}

// LaunchRedisClusterWith is LaunchRedisCluster shaped by opts: with
// NoReplicas, three nodes, every one a master; with OneMaster, one node.
func LaunchRedisClusterWith(opts RedisClusterOptions) (*RedisCluster, error) {
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		return nil, fmt.Errorf("redis-cli: %w (apt-get install redis-tools)", ErrMissing)
	}
	masters, replicas := clusterMasters, clusterReplicas
	if opts.NoReplicas {
		replicas = 0
	}
	if opts.OneMaster {
		masters, replicas = 1, 0
	}
	c := &RedisCluster{}
	for range masters * (1 + replicas) {
		n, err := launchRedis(RedisOptions{}, true)
		if err != nil {
			c.Close()
			return nil, err
		}
		c.Nodes = append(c.Nodes, n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterReadyTimeout)
	defer cancel()
	if err := c.create(ctx, cli, replicas); err != nil {
		c.Close()
		return nil, err
	}
	if err := c.waitSettled(ctx, c.Nodes, masters); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// create joins c's nodes into a cluster with replicas replicas a master
// (redis-cli --cluster create, which wants three masters at least); one
// node alone is given every slot, and told its address (a node learns it
// from the peers it meets, and a lone one has none: it would name itself
// ":<port>" to clients).
func (c *RedisCluster) create(ctx context.Context, cli string, replicas int) error {
	if len(c.Nodes) == 1 {
		rdb := c.Nodes[0].Client()
		defer rdb.Close()
		if err := rdb.ConfigSet(ctx, "cluster-announce-ip", "127.0.0.1").Err(); err != nil {
			return fmt.Errorf("CONFIG SET cluster-announce-ip on %s: %w", c.Nodes[0].Addr, err)
		}
		if err := rdb.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err(); err != nil {
			return fmt.Errorf("CLUSTER ADDSLOTSRANGE 0 16383 on %s: %w", c.Nodes[0].Addr, err)
		}
		return nil
	}
	args := append([]string{"--cluster", "create"}, c.addrs(c.Nodes)...)
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	if out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("redis-cli --cluster create: %w; output:\n%s", err, out)
	}
	return nil
}

// Seeds are the addresses of every node, comma-separated: a value for
// REDIS_CLUSTER_NODES.
func (c *RedisCluster) Seeds() string { return strings.Join(c.addrs(c.live()), ",") }

// Client returns a new cluster client of this cluster. The caller closes it.
// Like the components' (redisconn), it reloads the slot map every second,
// so it follows a failover: a dead master refuses connections rather than
// answering MOVED, which is what makes go-redis reload the map at once.
func (c *RedisCluster) Client() *redis.ClusterClient {
	return redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.addrs(c.live()), ClusterStateReloadInterval: time.Second})
}

// TestClient returns a cluster client, closed when tb ends.
func (c *RedisCluster) TestClient(tb testing.TB) *redis.ClusterClient {
	tb.Helper()
	cc := c.Client()
	tb.Cleanup(func() { cc.Close() })
	return cc
}

// Close kills every node and removes their files.
func (c *RedisCluster) Close() {
	for _, n := range c.Nodes {
		n.Close()
	}
}

// Masters are the nodes that are masters now, by the view of a live node.
func (c *RedisCluster) Masters(tb testing.TB) []*Redis {
	tb.Helper()
	view, err := c.view(context.Background(), c.live()[0])
	if err != nil {
		tb.Fatal(err)
	}
	var masters []*Redis
	for _, n := range c.live() {
		if view.masterAddrs[n.Addr] {
			masters = append(masters, n)
		}
	}
	return masters
}

// MasterOf is the node that is master of key's slot now.
func (c *RedisCluster) MasterOf(tb testing.TB, key string) *Redis {
	tb.Helper()
	slot := rediskeys.Slot(key)
	for _, m := range c.Masters(tb) {
		rdb := m.Client()
		shards, err := rdb.ClusterShards(context.Background()).Result()
		rdb.Close()
		if err != nil {
			tb.Fatal(err)
		}
		for _, sh := range shards {
			for _, r := range sh.Slots {
				if int64(slot) >= r.Start && int64(slot) <= r.End && servedBy(sh, m) {
					return m
				}
			}
		}
	}
	tb.Fatalf("no master serves slot %d of %q", slot, key)
	return nil
}

// servedBy reports whether node is the master of shard.
func servedBy(shard redis.ClusterShard, node *Redis) bool {
	for _, n := range shard.Nodes {
		if n.Role == "master" && n.Port == int64(node.Port) {
			return true
		}
	}
	return false
}

// KillMaster ends master with SIGKILL, as a crash would, and waits until
// its replica has been promoted and every live node serves all slots from
// live masters. It returns the promoted replica.
func (c *RedisCluster) KillMaster(tb testing.TB, master *Redis) *Redis {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clusterReadyTimeout)
	defer cancel()
	replica, err := c.replicaOf(ctx, master)
	if err != nil {
		tb.Fatal(err)
	}
	master.Kill()
	if err := c.waitSettled(ctx, c.live(), clusterMasters); err != nil {
		tb.Fatalf("after killing master %s: %v", master.Addr, err)
	}
	if !slices.Contains(c.Masters(tb), replica) {
		tb.Fatalf("replica %s of killed master %s was not promoted", replica.Addr, master.Addr)
	}
	return replica
}

// replicaOf is the node that replicates master.
func (c *RedisCluster) replicaOf(ctx context.Context, master *Redis) (*Redis, error) {
	view, err := c.view(ctx, master)
	if err != nil {
		return nil, err
	}
	for _, n := range c.live() {
		if view.replicaOf[n.Addr] == master.Addr {
			return n, nil
		}
	}
	return nil, fmt.Errorf("master %s has no replica", master.Addr)
}

// live are the nodes whose process runs.
func (c *RedisCluster) live() []*Redis {
	var out []*Redis
	for _, n := range c.Nodes {
		n.mu.Lock()
		up := n.proc != nil && !n.proc.Exited()
		n.mu.Unlock()
		if up {
			out = append(out, n)
		}
	}
	return out
}

func (c *RedisCluster) addrs(nodes []*Redis) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.Addr
	}
	return out
}

// clusterView is one node's CLUSTER NODES: which addresses are masters
// that serve slots, which replicate which master, and which it marks
// failed.
type clusterView struct {
	masterAddrs map[string]bool
	replicaOf   map[string]string
	failed      map[string]bool
}

func (c *RedisCluster) view(ctx context.Context, node *Redis) (clusterView, error) {
	rdb := node.Client()
	defer rdb.Close()
	text, err := rdb.ClusterNodes(ctx).Result()
	if err != nil {
		return clusterView{}, fmt.Errorf("CLUSTER NODES on %s: %w", node.Addr, err)
	}
	v := clusterView{masterAddrs: map[string]bool{}, replicaOf: map[string]string{}, failed: map[string]bool{}}
	addrOf := map[string]string{}
	var lines [][]string
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		addrOf[f[0]] = addr
		lines = append(lines, f)
	}
	for _, f := range lines {
		addr, _, _ := strings.Cut(f[1], "@")
		flags := strings.Split(f[2], ",")
		switch {
		case slices.Contains(flags, "fail"):
			v.failed[addr] = true
		case slices.Contains(flags, "master") && len(f) > 8:
			v.masterAddrs[addr] = true
		case slices.Contains(flags, "slave"):
			v.replicaOf[addr] = addrOf[f[3]]
		}
	}
	return v, nil
}

// waitSettled waits until every node of nodes reports cluster_state:ok,
// sees masters masters serving every slot, none of them marked failed,
// and every master has its replicas connected and in sync.
func (c *RedisCluster) waitSettled(ctx context.Context, nodes []*Redis, masters int) error {
	var last error
	for {
		if last = c.settled(ctx, nodes, masters); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redis cluster not settled: %w", last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (c *RedisCluster) settled(ctx context.Context, nodes []*Redis, masters int) error {
	for _, n := range nodes {
		rdb := n.Client()
		info, err := rdb.ClusterInfo(ctx).Result()
		rdb.Close()
		if err != nil {
			return fmt.Errorf("CLUSTER INFO on %s: %w", n.Addr, err)
		}
		if !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_slots_ok:16384") {
			return fmt.Errorf("node %s: %s", n.Addr, clusterInfoLine(info))
		}
		view, err := c.view(ctx, n)
		if err != nil {
			return err
		}
		if len(view.masterAddrs) != masters {
			return fmt.Errorf("node %s sees %d masters serving slots, want %d", n.Addr, len(view.masterAddrs), masters)
		}
		for addr := range view.masterAddrs {
			if view.failed[addr] || !slices.ContainsFunc(nodes, func(l *Redis) bool { return l.Addr == addr }) {
				return fmt.Errorf("node %s sees %s as a master, which is down", n.Addr, addr)
			}
		}
	}
	return c.replicasInSync(ctx, nodes)
}

// replicasInSync checks that every replica among nodes has its link to its
// master up and nothing left to load.
func (c *RedisCluster) replicasInSync(ctx context.Context, nodes []*Redis) error {
	for _, n := range nodes {
		rdb := n.Client()
		info, err := rdb.Info(ctx, "replication").Result()
		rdb.Close()
		if err != nil {
			return fmt.Errorf("INFO replication on %s: %w", n.Addr, err)
		}
		if strings.Contains(info, "role:slave") &&
			(!strings.Contains(info, "master_link_status:up") || !strings.Contains(info, "master_sync_in_progress:0")) {
			return fmt.Errorf("replica %s not in sync with its master", n.Addr)
		}
	}
	return nil
}

// clusterInfoLine is the cluster_state and slot counts of a CLUSTER INFO,
// for a message.
func clusterInfoLine(info string) string {
	var parts []string
	for _, line := range strings.Split(info, "\r\n") {
		if strings.HasPrefix(line, "cluster_state:") || strings.HasPrefix(line, "cluster_slots_") {
			parts = append(parts, line)
		}
	}
	return strings.Join(parts, " ")
}
