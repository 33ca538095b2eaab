package rediscluster_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisscripts"
)

// BenchmarkRedisClusterModeOwnCost is what Redis Cluster itself costs, our
// work aside: the same work, on the same keys, sent the same way, to a
// master of a three-master cluster and to one Redis, in alternated blocks.
// It is the floor under BenchmarkRedisCPUPerPage's all-masters figure.
//
//   - pop: the crawler's pop round, 16 leased lean pops of one ~400-byte
//     request each, one per domain, in one pipeline (the cluster layout's
//     keys on both servers, the 16 domains all in the master's slots, so
//     nothing but cluster mode differs). cluster-per-one-pop is the
//     master's Redis CPU per pop over the one Redis's.
//   - round trip: one PING a round trip, the cost of a wake-up, a read and
//     a write (the masters of a cluster share a crawl's round trips
//     between them, and make more of them than one Redis).
//   - idle: each server's CPU per second with no client (its own crons;
//     a cluster runs three, and its bus).
func BenchmarkRedisClusterModeOwnCost(b *testing.B) {
	ctx := context.Background()
	one := harness.StartRedis(b)
	rc := harness.StartRedisClusterWith(b, harness.RedisClusterOptions{NoReplicas: true})
	master := rc.Masters(b)[0]
	var domains []string
	for i := 0; len(domains) < 16; i++ {
		d := fmt.Sprintf("d%d.com", i)
		if rc.MasterOf(b, rediskeys.Cluster.Queue("link", d)).Addr == master.Addr {
			domains = append(domains, d)
		}
	}
	nodes := []*harness.Redis{one, master}
	names := []string{"one Redis", "cluster master"}
	pids := redisPIDs(b, nodes)
	clients := make([]*redis.Client, len(nodes))
	for i, n := range nodes {
		clients[i] = n.Client()
		defer clients[i].Close()
	}
	idle := make([]time.Duration, len(nodes))
	const idleSpan = 5 * time.Second
	before := runTimes(b, pids)
	time.Sleep(idleSpan)
	for i, t := range runTimes(b, pids) {
		idle[i] = t - before[i]
	}

	const rounds, member = 250, 400
	body := strings.Repeat("x", member)
	var popRun, pingRun [2]time.Duration
	var pops, pings int
	b.ResetTimer()
	for it := 0; it < b.N; it++ {
		for i, rdb := range clients {
			// Fill each domain's queue with a block's requests, then pop
			// them in rounds of one pop a domain.
			pipe := rdb.Pipeline()
			for _, d := range domains {
				q := rediskeys.Cluster.Queue("link", d)
				members := make([]redis.Z, rounds)
				for r := range members {
					members[r] = redis.Z{Score: float64(r), Member: fmt.Sprintf("%d:%d:%s", it, r, body)}
				}
				pipe.ZAdd(ctx, q, members...)
				owners, _ := leaseKeys(d)
				pipe.ZAdd(ctx, owners, redis.Z{Score: float64(time.Now().Add(time.Hour).Unix()), Member: "o1"})
			}
			if _, err := pipe.Exec(ctx); err != nil {
				b.Fatalf("%s: fill the queues: %v", names[i], err)
			}
			start := runTimes(b, pids[i:i+1])[0]
			for r := range rounds {
				as := make([]redisscripts.Pop, len(domains))
				for k, d := range domains {
					owners, records := leaseKeys(d)
					id := fmt.Sprintf("o1:%d:%d:%d", it, r, k)
					as[k] = redisscripts.Pop{Queue: rediskeys.Cluster.Queue("link", d), Command: "ZPOPMIN",
						Window: rediskeys.Cluster.Throttle("link", "", d, true, false) + ":throttle_window", Moderation: rediskeys.Cluster.Throttle("link", "", d, true, false) + ":throttle_time",
						WindowSeconds: "60", ModerationSeconds: "0", Expiry: "120", Limit: 1 << 30,
						HitID: "hit:" + id, LeaseID: id, Owner: "o1", Owners: owners, Records: records, Max: 1}
				}
				for k, cmd := range redisscripts.RunPipelined(ctx, rdb, as) {
					if res, err := cmd.Slice(); err != nil || len(res) == 0 || res[0] != int64(3) {
						b.Fatalf("%s: pop %d of round %d: %v %v", names[i], k, r, res, err)
					}
				}
			}
			popRun[i] += runTimes(b, pids[i:i+1])[0] - start
			start = runTimes(b, pids[i:i+1])[0]
			for range rounds {
				if err := rdb.Ping(ctx).Err(); err != nil {
					b.Fatalf("%s: ping: %v", names[i], err)
				}
			}
			pingRun[i] += runTimes(b, pids[i:i+1])[0] - start
			// The block's lease records and hits go, so every block pops
			// from the same state.
			pipe = rdb.Pipeline()
			for _, d := range domains {
				_, records := leaseKeys(d)
				pipe.Del(ctx, records, rediskeys.Cluster.Throttle("link", "", d, true, false)+":throttle_window")
			}
			if _, err := pipe.Exec(ctx); err != nil {
				b.Fatalf("%s: clear the block: %v", names[i], err)
			}
		}
		pops += rounds * len(domains)
		pings += rounds
	}
	b.StopTimer()
	perPop := func(i int) float64 { return float64(popRun[i].Nanoseconds()) / 1e3 / float64(pops) }
	perPing := func(i int) float64 { return float64(pingRun[i].Nanoseconds()) / 1e3 / float64(pings) }
	perSec := func(i int) float64 { return float64(idle[i].Nanoseconds()) / 1e6 / idleSpan.Seconds() }
	b.ReportMetric(perPop(0), "one-redis-µs/pop")
	b.ReportMetric(perPop(1), "cluster-master-µs/pop")
	b.ReportMetric(perPop(1)/perPop(0), "cluster-per-one-pop")
	b.ReportMetric(perPing(0), "one-redis-µs/round-trip")
	b.ReportMetric(perPing(1), "cluster-master-µs/round-trip")
	b.ReportMetric(perSec(0), "one-redis-idle-ms/s")
	b.ReportMetric(perSec(1), "cluster-master-idle-ms/s")
}

// leaseKeys are domain d's lease owners and records on a Redis Cluster.
func leaseKeys(d string) (owners, records string) {
	leases := rediskeys.Cluster.Leases("link", d)
	return leases + ":owners", leases + ":items"
}

// runTimes is the run time so far of each process of pids (taskRun).
func runTimes(tb testing.TB, pids []int) []time.Duration {
	tb.Helper()
	out := make([]time.Duration, len(pids))
	for i, pid := range pids {
		run, _, _, err := taskRun(pid)
		if err != nil {
			tb.Fatalf("run time of redis-server %d: %v", pid, err)
		}
		out[i] = run
	}
	return out
}
