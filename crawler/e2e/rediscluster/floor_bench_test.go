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
	"github.com/scrapycluster/scrapy-cluster-go/scutils/throttle"
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
	var domains []domainKeys
	for i := 0; len(domains) < 16; i++ {
		d := keysOf(fmt.Sprintf("d%d.com", i))
		if rc.MasterOf(b, d.queue).Addr == master.Addr {
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
	const idleFor = 5 * time.Second
	before := make([]time.Duration, len(pids))
	for i, pid := range pids {
		before[i] = runTime(b, pid)
	}
	time.Sleep(idleFor)
	for i, pid := range pids {
		idle[i] = runTime(b, pid) - before[i]
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
				members := make([]redis.Z, rounds)
				for r := range members {
					members[r] = redis.Z{Score: float64(r), Member: fmt.Sprintf("%d:%d:%s", it, r, body)}
				}
				pipe.ZAdd(ctx, d.queue, members...)
				pipe.ZAdd(ctx, d.owners, redis.Z{Score: float64(time.Now().Add(time.Hour).Unix()), Member: "o1"})
			}
			if _, err := pipe.Exec(ctx); err != nil {
				b.Fatalf("%s: fill the queues: %v", names[i], err)
			}
			start := runTime(b, pids[i])
			for r := range rounds {
				as := make([]redisscripts.Pop, len(domains))
				for k, d := range domains {
					id := fmt.Sprintf("o1:%d:%d:%d", it, r, k)
					as[k] = redisscripts.Pop{Queue: d.queue, Command: "ZPOPMIN", Window: d.window, Moderation: d.moderation,
						WindowSeconds: "60", ModerationSeconds: "0", Expiry: "120", Limit: 1 << 30,
						HitID: "hit:" + id, LeaseID: id, Owner: "o1", Owners: d.owners, Records: d.records, Max: 1}
				}
				for k, cmd := range redisscripts.RunPipelined(ctx, rdb, as) {
					if res, err := cmd.Slice(); err != nil || len(res) == 0 || res[0] != int64(3) {
						b.Fatalf("%s: pop %d of round %d: %v %v", names[i], k, r, res, err)
					}
				}
			}
			popped := runTime(b, pids[i])
			popRun[i] += popped - start
			for range rounds {
				if err := rdb.Ping(ctx).Err(); err != nil {
					b.Fatalf("%s: ping: %v", names[i], err)
				}
			}
			pingRun[i] += runTime(b, pids[i]) - popped
			// The block's lease records and hits go, so every block pops
			// from the same state.
			pipe = rdb.Pipeline()
			for _, d := range domains {
				pipe.Del(ctx, d.records, d.window)
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
	perSec := func(i int) float64 { return float64(idle[i].Nanoseconds()) / 1e6 / idleFor.Seconds() }
	b.ReportMetric(perPop(0), "one-redis-µs/pop")
	b.ReportMetric(perPop(1), "cluster-master-µs/pop")
	b.ReportMetric(perPop(1)/perPop(0), "cluster-per-one-pop")
	b.ReportMetric(perPing(0), "one-redis-µs/round-trip")
	b.ReportMetric(perPing(1), "cluster-master-µs/round-trip")
	b.ReportMetric(perSec(0), "one-redis-idle-ms/s")
	b.ReportMetric(perSec(1), "cluster-master-idle-ms/s")
}

// domainKeys are a link domain's queue, throttle and lease keys on a
// Redis Cluster.
type domainKeys struct {
	queue, window, moderation, owners, records string
}

func keysOf(domain string) domainKeys {
	throttleKey := rediskeys.Cluster.Throttle("link", "", domain, true, false)
	leases := rediskeys.Cluster.Leases("link", domain)
	return domainKeys{queue: rediskeys.Cluster.Queue("link", domain), window: throttleKey + throttle.WindowSuffix,
		moderation: throttleKey + throttle.ModerateSuffix, owners: leases + ":owners", records: leases + ":items"}
}

// runTime is the run time so far of process pid (taskRun).
func runTime(tb testing.TB, pid int) time.Duration {
	tb.Helper()
	run, _, _, err := taskRun(pid)
	if err != nil {
		tb.Fatalf("run time of redis-server %d: %v", pid, err)
	}
	return run
}
