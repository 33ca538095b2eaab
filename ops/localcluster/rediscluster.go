package localcluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The local Redis Cluster of --redis cluster: three masters and a replica
// of each, six redis-server children on RedisPort .. RedisPort+5, their
// cluster buses 10000 above (Redis's default).
const (
	clusterMasters  = 3
	clusterNodes    = clusterMasters * 2
	clusterBusShift = 10000
	// clusterNodeTimeout is cluster-node-timeout: how long a master may be
	// unreachable before its replica takes over.
	clusterNodeTimeout = 5 * time.Second
)

// clusterPorts are the ports of the local Redis Cluster's nodes.
func (cfg *Config) clusterPorts() []int {
	ports := make([]int, clusterNodes)
	for i := range ports {
		ports[i] = cfg.RedisPort + i
	}
	return ports
}

// clusterAddrs are the local cluster's nodes as REDIS_CLUSTER_NODES names
// them.
func (cfg *Config) clusterAddrs() []string {
	var addrs []string
	for _, p := range cfg.clusterPorts() {
		addrs = append(addrs, "127.0.0.1:"+strconv.Itoa(p))
	}
	return addrs
}

// clusterDir is where the local cluster's nodes keep their nodes.conf and
// append-only files: DataDir/redis-cluster, or a directory of its own for
// this run when DataDir is empty (removed by the cleanup returned).
func (cfg *Config) clusterDir() (dir string, cleanup func(), err error) {
	if cfg.DataDir == "" {
		dir, err := os.MkdirTemp("", "local-cluster-redis-")
		if err != nil {
			return "", nil, err
		}
		return dir, func() { os.RemoveAll(dir) }, nil
	}
	dir, err = filepath.Abs(filepath.Join(cfg.DataDir, "redis-cluster"))
	if err != nil {
		return "", nil, err
	}
	return dir, func() {}, nil
}

// clusterSpecs are the redis-server children of the local cluster, each in
// a directory of its own under dir. With DataDir they keep an append-only
// file, and their nodes.conf lets them find each other again after a
// restart; cluster-require-full-coverage no keeps the shards that are up
// serving while a dead master's replica takes over.
func (cfg *Config) clusterSpecs(dir string) ([]spec, error) {
	server, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("--redis %s: %w (install redis-server, or use --redis %s)", RedisCluster, err, RedisEmbedded)
	}
	if _, err := exec.LookPath("redis-cli"); err != nil {
		return nil, fmt.Errorf("--redis %s: %w (install redis-tools, which has redis-cli)", RedisCluster, err)
	}
	appendOnly := "no"
	if cfg.DataDir != "" {
		appendOnly = "yes"
	}
	var specs []spec
	for i, port := range cfg.clusterPorts() {
		nodeDir := filepath.Join(dir, strconv.Itoa(port))
		if err := os.MkdirAll(nodeDir, 0o755); err != nil {
			return nil, fmt.Errorf("create %s: %w", nodeDir, err)
		}
		specs = append(specs, spec{name: fmt.Sprintf("redis-%d", i+1), path: server, env: cfg.Env, args: []string{
			"--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--save", "", "--daemonize", "no",
			"--dir", nodeDir, "--appendonly", appendOnly,
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", strconv.Itoa(int(clusterNodeTimeout / time.Millisecond)),
			"--cluster-require-full-coverage", "no",
		}})
	}
	return specs, nil
}

// formCluster joins the local cluster's nodes, once they answer, into
// three masters with a replica each (redis-cli --cluster create) unless
// they already form a cluster (a restart with DataDir: their nodes.conf
// remembers it), then waits until every node says the cluster is ok.
func formCluster(ctx context.Context, cfg Config, con *console) error {
	ctx, cancel := context.WithTimeout(ctx, cfg.ReadyTimeout)
	defer cancel()
	addrs := cfg.clusterAddrs()
	nodes := make([]*redis.Client, len(addrs))
	for i, addr := range addrs {
		nodes[i] = redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
		defer nodes[i].Close()
	}
	infos, err := clusterInfos(ctx, nodes)
	if err != nil {
		return err
	}
	if infos[0]["cluster_known_nodes"] == "1" {
		args := append([]string{"--cluster", "create"}, addrs...)
		args = append(args, "--cluster-replicas", "1", "--cluster-yes")
		if out, err := exec.CommandContext(ctx, "redis-cli", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("redis-cli --cluster create: %w; output:\n%s", err, out)
		}
		con.logf("Redis Cluster formed: %d masters with a replica each", clusterMasters)
	}
	for {
		if infos, err = clusterInfos(ctx, nodes); err == nil && clusterOK(infos) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the Redis Cluster on %s is not ok after %s (last: %v)", strings.Join(addrs, ","), cfg.ReadyTimeout, describeInfos(infos, err))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// clusterOK says whether every node sees the whole cluster, ok and every
// slot served.
func clusterOK(infos []map[string]string) bool {
	for _, info := range infos {
		if info["cluster_state"] != "ok" || info["cluster_slots_assigned"] != "16384" ||
			info["cluster_known_nodes"] != strconv.Itoa(clusterNodes) {
			return false
		}
	}
	return true
}

// describeInfos says what the nodes last answered, for an error.
func describeInfos(infos []map[string]string, err error) string {
	if err != nil {
		return err.Error()
	}
	var parts []string
	for _, info := range infos {
		parts = append(parts, fmt.Sprintf("state %s, %s nodes, %s slots", info["cluster_state"], info["cluster_known_nodes"], info["cluster_slots_assigned"]))
	}
	return strings.Join(parts, "; ")
}

// clusterInfos is CLUSTER INFO of each node, its lines as fields.
func clusterInfos(ctx context.Context, nodes []*redis.Client) ([]map[string]string, error) {
	var infos []map[string]string
	for _, rdb := range nodes {
		text, err := rdb.ClusterInfo(ctx).Result()
		if err != nil {
			return nil, fmt.Errorf("CLUSTER INFO of %s: %w", rdb.Options().Addr, err)
		}
		info := map[string]string{}
		for _, line := range strings.Split(text, "\n") {
			if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
				info[k] = v
			}
		}
		infos = append(infos, info)
	}
	return infos, nil
}
