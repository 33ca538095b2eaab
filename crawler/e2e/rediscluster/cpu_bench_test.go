package rediscluster_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/testsite"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
)

// The crawl BenchmarkRedisCPUPerPage runs in each mode: 20 test sites (a
// domain each) of cpuRoots trees of fan-out cpuFanout and depth 2, crawled
// to maxdepth cpuMaxDepth (the most a request may ask) from the first
// site's "/", which links to every other's: about 10,500 pages, 10 to 12
// links each.
const (
	cpuRoots    = 50
	cpuFanout   = 10
	cpuMaxDepth = 3
)

// BenchmarkRedisCPUPerPage is the Redis CPU a crawl costs per page on one
// Redis and on a Redis Cluster of three masters, from one run on the same
// crawl: the Kafka Monitor and two crawler processes (the binaries of this
// tree, default settings, the throttle out of the way: QUEUE_HITS 100000 a
// minute per domain), fed one seed (the cpuRoots, cpuFanout, cpuMaxDepth
// crawl of 20 domains), per iteration once on the one Redis, once on a
// cluster of three masters without replicas, once on a cluster of three
// masters with a replica each (harness.StartRedisCluster's) and once on a
// cluster of one master, each
// with a broker of its own (a warm-up crawl to depth 1 first in each mode:
// the scripts loaded, connections open). A mode's span runs from the feed
// until every page is published and the crawl's ledger has nothing
// outstanding.
//
// The targets are judged on the cluster without replicas: like for like,
// as the one Redis feeds no replica either; a master with a replica also
// pays for feeding it (its replication stream, the replica's socket
// writes), reported beside with the prefix "replicas-".
//
// Each mode counts the crawlers' responses as it does in production: the
// one Redis in the original's sorted sets (a member a page in each of six
// windows, about a fifth of its CPU here), a cluster in a hash of time
// buckets per host and code (docs/redis-cluster.md, "The crawlers'
// response counts on a cluster"). CPUBENCH_SETTINGS=STATS_STATUS_CODES=false
// leaves them out of both, comparing the frontiers alone.
//
// From /proc/<pid>/stat (utime + stime) of each redis-server process:
//
//   - single-redis-cpu-µs/page: the one Redis's CPU per page;
//   - busiest-master-cpu-µs/page: the CPU per page of the master that used
//     the most, and busiest-master-per-single, its ratio to the one Redis's
//     (the target: at most 0.45, so the ceiling grows about
//     threefold);
//   - masters-cpu-µs/page: the three masters' together, and
//     masters-per-single, its ratio to the one Redis's (target: at most 1.20);
//   - single-redis-cmds/page and masters-cmds/page: the commands Redis ran
//     (INFO commandstats, a script counting once and each command it runs
//     once more), and single-cmd-<command>/page and cluster-cmd-<command>/page
//     for each command with at least 0.05 per page (the log lines give each
//     master's);
//   - single-redis-reads/page, busiest-master-reads/page and
//     masters-reads/page: how often Redis read requests from a socket
//     (INFO stats total_reads_processed), its round trips near enough: each
//     a wake-up with its kernel work, whatever it holds;
//   - single-pages/s and cluster-pages/s (the machine's other load shows
//     here, not in the CPU figures);
//   - single-redis-idle-cpu-ms/s and masters-idle-cpu-ms/s: what the one
//     Redis and the three masters spend per second with every component
//     running and no crawl (idleCPU: the cluster bus and each node's crons
//     cost per second, not per page), and the CPU per page net of it over
//     the crawl's span: single-redis-net-cpu-µs/page,
//     busiest-master-net-per-single and masters-net-per-single. The
//     targets are judged on the figures above, not these: these say how
//     much of a gap is a fixed cost per second, which weighs less per page
//     the faster a cluster crawls (the ceiling the targets are about);
//   - replicas-busiest-master-cpu-µs/page, replicas-busiest-master-per-single,
//     replicas-masters-cpu-µs/page, replicas-masters-per-single,
//     replicas-masters-cmds/page and replicas-pages/s: the same on the
//     cluster with replicas (the masters' CPU only);
//   - one-master-cpu-µs/page, one-master-per-single (and net of idle),
//     one-master-reads/page, one-master-slices/page, one-master-idle-cpu-ms/s
//     and one-master-pages/s: the same crawl on a cluster of one master
//     serving every slot (harness.RedisClusterOptions.OneMaster), the
//     cluster layout's keys and scripts in one process: what cluster mode
//     itself costs over the one Redis; masters-per-one-master is what
//     spreading the keys over three masters costs on top of it.
//
// /proc counts CPU in 10 ms ticks: the crawl is long enough (about 0.5 s
// of the one Redis's CPU) that a tick is a few per cent of a figure.
//
//	go test -run '^$' -bench BenchmarkRedisCPUPerPage -benchtime 1x ./crawler/e2e/rediscluster/
//
// CPUBENCH_SETTINGS (NAME=VALUE pairs, comma-separated) gives every
// component of every mode more settings: SCHEDULER_CLUSTER_ACK_LINGER_MS=250.
func BenchmarkRedisCPUPerPage(b *testing.B) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		b.Skip("needs /proc")
	}
	sites := startSites(b, 20, testsite.WithPages(cpuRoots), testsite.WithTree(cpuFanout, 2))
	seed := sites[0].URL("/")
	want := len(testsite.Reachable(seed, cpuMaxDepth, notFile, sites...))
	b.Logf("%d pages a crawl", want)
	quiet := map[string]string{"LOG_LEVEL": "WARNING", "SC_LOG_LEVEL": "WARNING"}
	// CPUBENCH_SETTINGS: NAME=VALUE pairs, comma-separated, for every
	// component of every mode (SCHEDULER_CLUSTER_ACK_LINGER_MS=250).
	for _, kv := range strings.Split(os.Getenv("CPUBENCH_SETTINGS"), ",") {
		if name, v, ok := strings.Cut(strings.TrimSpace(kv), "="); ok {
			quiet[name] = v
		} else if kv != "" {
			b.Fatalf("CPUBENCH_SETTINGS: %q is not NAME=VALUE", kv)
		}
	}

	rs := harness.StartRedis(b)
	kSingle := harness.StartKafka(b, harness.KafkaOptions{NoAutoCreate: true})
	single := cpuMode{name: "single", env: harness.ClusterSettings(rs.Port, kSingle.Hosts(), ""), k: kSingle,
		nodes: []*harness.Redis{rs}, rdb: rs.TestClient(b)}
	for n, v := range quiet {
		single.env[n] = v
	}
	modes := []*cpuMode{&single}
	for _, c := range []struct {
		name string
		opts harness.RedisClusterOptions
	}{{"cluster", harness.RedisClusterOptions{NoReplicas: true}}, {"replicas", harness.RedisClusterOptions{}}, {"one-master", harness.RedisClusterOptions{OneMaster: true}}} {
		rc := harness.StartRedisClusterWith(b, c.opts)
		k := harness.StartKafka(b, harness.KafkaOptions{NoAutoCreate: true})
		modes = append(modes, &cpuMode{name: c.name, env: clusterEnv(rc, k, quiet), k: k, nodes: rc.Masters(b), rdb: rc.TestClient(b)})
	}
	for _, m := range modes {
		startComponents(b, m.env, "kafka-monitor", m.name+"-crawler-1", m.name+"-crawler-2")
		m.pids = redisPIDs(b, m.nodes)
		m.used = make([]redisUse, len(m.nodes))
		m.crawl(b, "warm-up", seed, 1, len(testsite.Reachable(seed, 1, notFile, sites...)))
		m.idle = m.idleCPU(b, idleSpan)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, m := range modes {
			before := m.sample(b)
			start := time.Now()
			m.crawl(b, "cpu"+strconv.Itoa(i), seed, cpuMaxDepth, want)
			m.elapsed += time.Since(start)
			for j, after := range m.sample(b) {
				m.used[j].add(after, before[j])
			}
			m.pages += want
		}
	}
	b.StopTimer()
	reportRedisCPU(b, modes[0], modes[1], modes[2], modes[3])
}

// cpuMode is one mode of BenchmarkRedisCPUPerPage: its components'
// settings, broker and Redis processes (the one Redis, or the masters),
// and what they used.
type cpuMode struct {
	name    string
	env     map[string]string
	k       *harness.Kafka
	nodes   []*harness.Redis
	rdb     redis.UniversalClient
	pids    []int
	used    []redisUse
	pages   int
	elapsed time.Duration
	// idle is each node's CPU time per second of wall time with every
	// component running and no crawl (idleCPU).
	idle []float64
}

// idleSpan is how long idleCPU watches: long enough for a few of /proc's
// 10 ms ticks on the one Redis (about 2 ms/s idle).
const idleSpan = 8 * time.Second

// idleCPU is each node's CPU time per second over span with the mode's
// components running and no crawl (after a second for the last crawl's
// work to end): what Redis spends whatever the pages, the cluster's bus
// and crons included. The crawlers' polls of empty queues count in it,
// though during a crawl they partly give way to pops that find work, so
// subtracting it (reportRedisCPU's net figures) errs towards too little
// per page.
//
// It logs each node's commands and socket reads per second over the span:
// what the components ask of an idle Redis.
func (m *cpuMode) idleCPU(b *testing.B, span time.Duration) []float64 {
	b.Helper()
	time.Sleep(time.Second)
	before := m.sample(b)
	start := time.Now()
	time.Sleep(span)
	after := m.sample(b)
	secs := time.Since(start).Seconds()
	out := make([]float64, len(m.pids))
	for i := range m.pids {
		var u redisUse
		u.add(after[i], before[i])
		out[i] = u.run.Seconds() / secs
		b.Logf("%s idle: node %s: %.2f ms/s of CPU, %.1f slices/s (%.1f preempted), %.1f reads/s, commands per second: %s", m.name, m.nodes[i].Addr,
			out[i]*1e3, float64(u.slices)/secs, float64(u.preempted)/secs, float64(u.reads)/secs, perPageLine(u.calls, secs, 0, "%s %.1f"))
	}
	return out
}

// net is node i's CPU over m's crawls less what it spends idle over as
// long (idleCPU).
func (m *cpuMode) net(i int) time.Duration {
	return m.used[i].cpu - time.Duration(m.idle[i]*float64(m.elapsed))
}

// redisUse is a redis-server's CPU time, its socket reads (round trips,
// near enough) and its commands by name.
type redisUse struct {
	cpu time.Duration
	// run and slices are the time its threads ran and how often they were
	// put on a CPU (/proc/<pid>/task/*/schedstat, taskRun): run is cpu to
	// the nanosecond, slices its wake-ups, near enough.
	run    time.Duration
	slices int64
	// preempted counts the slices that ended with the thread still
	// runnable (nonvoluntary_ctxt_switches of /proc/<pid>/task/*/status):
	// the machine's other load, not Redis's work.
	preempted int64
	reads     int64
	calls     map[string]int64
	usec      map[string]int64 // Redis's time in each command (a script's includes the commands it runs)
}

// add adds the difference after - before.
func (u *redisUse) add(after, before redisUse) {
	u.cpu += after.cpu - before.cpu
	u.run += after.run - before.run
	u.slices += after.slices - before.slices
	u.preempted += after.preempted - before.preempted
	u.reads += after.reads - before.reads
	if u.calls == nil {
		u.calls = map[string]int64{}
	}
	for name, n := range after.calls {
		u.calls[name] += n - before.calls[name]
	}
	if u.usec == nil {
		u.usec = map[string]int64{}
	}
	for name, n := range after.usec {
		u.usec[name] += n - before.usec[name]
	}
}

func (u redisUse) total() int64 {
	var n int64
	for _, c := range u.calls {
		n += c
	}
	return n
}

// crawl feeds one crawl of seed to maxDepth and waits until its want pages
// are published and its ledger has nothing outstanding. Only the firehose
// is watched while it runs, so the wait adds nothing to Redis's work but
// the ledger reads at the end.
func (m *cpuMode) crawl(b *testing.B, crawlID, seed string, maxDepth, want int) {
	b.Helper()
	pages := readPages(b, m.k, crawlID)
	feed(b, m.env, fmt.Sprintf(`{"url": %q, "appid": "bench", "crawlid": %q, "spiderid": "link", "maxdepth": %d}`, seed, crawlID, maxDepth))
	harness.WaitFor(b, m.name+": every page of "+crawlID+" published", 600*time.Second, func() bool { return pages.distinct() >= want })
	c := ledger.Crawl{SpiderID: "link", AppID: "bench", CrawlID: crawlID}
	var last *ledger.Progress
	harness.WaitFor(b, m.name+": the ledger of "+crawlID+" with nothing outstanding", 60*time.Second, func() bool {
		last = m.progress(b, c)
		return last != nil && last.Seeds == 1 && last.Outstanding() == 0 && last.Queued == 0 && last.InFlight == 0
	})
	if last.Published != int64(want) || pages.total() != want {
		b.Fatalf("%s: crawl %s published %d pages (%d results), want %d", m.name, crawlID, last.Published, pages.total(), want)
	}
}

// progress is c's ledger: the one Redis's, or its shares summed over the
// masters (nil until a consistent sum is read).
func (m *cpuMode) progress(b *testing.B, c ledger.Crawl) *ledger.Progress {
	ctx := context.Background()
	cc, ok := m.rdb.(*redis.ClusterClient)
	if !ok {
		ps, err := ledger.Read(ctx, m.rdb, c)
		if err != nil {
			b.Fatal(err)
		}
		return ps[0]
	}
	shares, err := ledger.ClusterShares(ctx, cc, c.SpiderID, c.AppID, c.CrawlID)
	if err != nil {
		return nil
	}
	p, consistent, err := ledger.ReadSum(ctx, cc, c, shares[c])
	if err != nil || !consistent {
		return nil
	}
	return p
}

// sample reads each node's CPU time so far (/proc/<pid>/stat), its INFO
// stats total_reads_processed and its INFO commandstats.
func (m *cpuMode) sample(b *testing.B) []redisUse {
	b.Helper()
	out := make([]redisUse, len(m.nodes))
	for i, n := range m.nodes {
		cpu, err := procCPU(m.pids[i])
		if err != nil {
			b.Fatalf("CPU time of redis-server %s: %v", n.Addr, err)
		}
		reads, err := strconv.ParseInt(infoFields(b, n, "stats")["total_reads_processed"], 10, 64)
		if err != nil {
			b.Fatalf("INFO stats of %s: total_reads_processed: %v", n.Addr, err)
		}
		run, slices, preempted, err := taskRun(m.pids[i])
		if err != nil {
			b.Fatalf("run time of redis-server %s: %v", n.Addr, err)
		}
		calls, usec := commandStats(b, n)
		out[i] = redisUse{cpu: cpu, run: run, slices: slices, preempted: preempted, reads: reads, calls: calls, usec: usec}
	}
	return out
}

// reportRedisCPU reports BenchmarkRedisCPUPerPage's figures and logs each
// master's commands per page.
func reportRedisCPU(b *testing.B, single, cluster, replicas, oneMaster *cpuMode) {
	perPage := func(m *cpuMode, v float64) float64 { return v / float64(m.pages) }
	one := perPage(single, float64(single.used[0].cpu.Microseconds()))
	b.ReportMetric(one, "single-redis-cpu-µs/page")
	b.ReportMetric(perPage(single, float64(single.used[0].total())), "single-redis-cmds/page")
	b.ReportMetric(perPage(single, float64(single.used[0].reads)), "single-redis-reads/page")
	b.ReportMetric(float64(single.pages)/single.elapsed.Seconds(), "single-pages/s")
	reportCalls(b, "single-cmd-", single.used[0], single.pages)
	oneNet := perPage(single, float64(single.net(0).Microseconds()))
	b.ReportMetric(single.idle[0]*1e3, "single-redis-idle-cpu-ms/s")
	b.ReportMetric(oneNet, "single-redis-net-cpu-µs/page")
	b.ReportMetric(perPage(single, float64(single.used[0].slices)), "single-redis-slices/page")
	b.Logf("one Redis: %.1f µs/page (%.1f to the ns), %.2f slices/page (%.2f preempted), %.2f reads/page, commands per page: %s; Redis µs per page in commands: %s", one,
		perPage(single, float64(single.used[0].run.Microseconds())), perPage(single, float64(single.used[0].slices)), perPage(single, float64(single.used[0].preempted)), perPage(single, float64(single.used[0].reads)), callsLine(single.used[0], single.pages), usecLine(single.used[0], single.pages))
	// The cluster of one master: cluster mode in one process.
	u := oneMaster.used[0]
	oneMasterCPU := perPage(oneMaster, float64(u.cpu.Microseconds()))
	b.ReportMetric(oneMasterCPU, "one-master-cpu-µs/page")
	b.ReportMetric(oneMasterCPU/one, "one-master-per-single")
	b.ReportMetric(perPage(oneMaster, float64(oneMaster.net(0).Microseconds()))/oneNet, "one-master-net-per-single")
	b.ReportMetric(perPage(oneMaster, float64(u.reads)), "one-master-reads/page")
	b.ReportMetric(perPage(oneMaster, float64(u.slices)), "one-master-slices/page")
	b.ReportMetric(oneMaster.idle[0]*1e3, "one-master-idle-cpu-ms/s")
	b.ReportMetric(float64(oneMaster.pages)/oneMaster.elapsed.Seconds(), "one-master-pages/s")
	b.Logf("one master: %.1f µs/page (%.1f to the ns), %.2f slices/page (%.2f preempted), %.2f reads/page, commands per page: %s; Redis µs per page in commands: %s",
		oneMasterCPU, perPage(oneMaster, float64(u.run.Microseconds())), perPage(oneMaster, float64(u.slices)), perPage(oneMaster, float64(u.preempted)), perPage(oneMaster, float64(u.reads)), callsLine(u, oneMaster.pages), usecLine(u, oneMaster.pages))
	for _, m := range []*cpuMode{cluster, replicas} {
		prefix := ""
		if m == replicas {
			prefix = "replicas-"
		}
		var total, totalNet, busiestNet time.Duration
		var busiest redisUse
		var idle float64
		all := redisUse{}
		for i, u := range m.used {
			total += u.cpu
			totalNet += m.net(i)
			busiestNet = max(busiestNet, m.net(i))
			idle += m.idle[i]
			if u.cpu >= busiest.cpu {
				busiest = u
			}
			all.add(u, redisUse{})
		}
		if m == cluster {
			b.ReportMetric(idle*1e3, "masters-idle-cpu-ms/s")
			b.ReportMetric(perPage(m, float64(busiestNet.Microseconds()))/oneNet, "busiest-master-net-per-single")
			b.ReportMetric(perPage(m, float64(totalNet.Microseconds()))/oneNet, "masters-net-per-single")
		}
		b.ReportMetric(perPage(m, float64(busiest.cpu.Microseconds())), prefix+"busiest-master-cpu-µs/page")
		b.ReportMetric(perPage(m, float64(busiest.cpu.Microseconds()))/one, prefix+"busiest-master-per-single")
		b.ReportMetric(perPage(m, float64(total.Microseconds())), prefix+"masters-cpu-µs/page")
		b.ReportMetric(perPage(m, float64(total.Microseconds()))/one, prefix+"masters-per-single")
		if m == cluster {
			b.ReportMetric(perPage(m, float64(total.Microseconds()))/oneMasterCPU, "masters-per-one-master")
		}
		b.ReportMetric(perPage(m, float64(all.total())), prefix+"masters-cmds/page")
		b.ReportMetric(float64(m.pages)/m.elapsed.Seconds(), m.name+"-pages/s")
		if m == cluster {
			b.ReportMetric(perPage(m, float64(busiest.reads)), "busiest-master-reads/page")
			b.ReportMetric(perPage(m, float64(all.reads)), "masters-reads/page")
			b.ReportMetric(perPage(m, float64(all.slices)), "masters-slices/page")
			reportCalls(b, "cluster-cmd-", all, m.pages)
		}
		for i, u := range m.used {
			b.Logf("%s: master %s: %.1f µs/page (%.1f to the ns), %.2f slices/page (%.2f preempted), %.2f reads/page, commands per page: %s; Redis µs per page in commands: %s", m.name,
				m.nodes[i].Addr, perPage(m, float64(u.cpu.Microseconds())), perPage(m, float64(u.run.Microseconds())), perPage(m, float64(u.slices)), perPage(m, float64(u.preempted)), perPage(m, float64(u.reads)), callsLine(u, m.pages), usecLine(u, m.pages))
		}
	}
}

// reportCalls reports u's commands of at least 0.05 per page, each as
// <prefix><command>/page.
func reportCalls(b *testing.B, prefix string, u redisUse, pages int) {
	for name, n := range u.calls {
		if v := float64(n) / float64(pages); v >= 0.05 {
			b.ReportMetric(v, prefix+name+"/page")
		}
	}
}

// usecLine is Redis's microseconds per page in u's commands, the costliest
// first (those of at least 0.5 µs a page).
func usecLine(u redisUse, pages int) string {
	return perPageLine(u.usec, float64(pages), 0.5, "%s %.1f")
}

// callsLine is u's commands per page, the most frequent first.
func callsLine(u redisUse, pages int) string {
	return perPageLine(u.calls, float64(pages), 0, "%s %.2f")
}

// perPageLine is each of counts per page (per second: pages is then the
// seconds), the largest first, of those above least, each written with
// format (name, value).
func perPageLine(counts map[string]int64, pages float64, least float64, format string) string {
	names := make([]string, 0, len(counts))
	for name, n := range counts {
		if n > 0 && float64(n)/pages >= least {
			names = append(names, name)
		}
	}
	sort.Slice(names, func(i, j int) bool { return counts[names[i]] > counts[names[j]] })
	parts := make([]string, len(names))
	for i, name := range names {
		parts[i] = fmt.Sprintf(format, name, float64(counts[name])/pages)
	}
	return strings.Join(parts, ", ")
}

// redisPIDs are the process ids of nodes (INFO server's process_id).
func redisPIDs(tb testing.TB, nodes []*harness.Redis) []int {
	tb.Helper()
	pids := make([]int, len(nodes))
	for i, n := range nodes {
		v, ok := infoFields(tb, n, "server")["process_id"]
		pid, err := strconv.Atoi(v)
		if !ok || err != nil {
			tb.Fatalf("no process_id in INFO server of %s", n.Addr)
		}
		pids[i] = pid
	}
	return pids
}

// commandStats are the calls and the microseconds of each command INFO
// commandstats of n counts.
func commandStats(tb testing.TB, n *harness.Redis) (calls, usec map[string]int64) {
	tb.Helper()
	calls, usec = map[string]int64{}, map[string]int64{}
	for name, v := range infoFields(tb, n, "commandstats") {
		cmd, ok := strings.CutPrefix(name, "cmdstat_")
		if !ok {
			continue
		}
		for field := range strings.SplitSeq(v, ",") {
			k, x, _ := strings.Cut(field, "=")
			switch k {
			case "calls":
				calls[cmd], _ = strconv.ParseInt(x, 10, 64)
			case "usec":
				usec[cmd], _ = strconv.ParseInt(x, 10, 64)
			}
		}
	}
	return calls, usec
}

// infoFields are the name:value lines of n's INFO section.
func infoFields(tb testing.TB, n *harness.Redis, section string) map[string]string {
	tb.Helper()
	rdb := n.Client()
	defer rdb.Close()
	info, err := rdb.Info(context.Background(), section).Result()
	if err != nil {
		tb.Fatalf("INFO %s of %s: %v", section, n.Addr, err)
	}
	out := map[string]string{}
	for line := range strings.SplitSeq(info, "\r\n") {
		if name, v, ok := strings.Cut(line, ":"); ok {
			out[name] = v
		}
	}
	return out
}

// procCPU is the CPU time (utime + stime) process pid has used so far,
// from /proc/<pid>/stat, in clock ticks of 10 ms (Linux's USER_HZ).
func procCPU(pid int) (time.Duration, error) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	_, rest, _ := strings.Cut(string(raw), ") ") // after the command name, which may hold spaces
	fields := strings.Fields(rest)
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, raw)
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q, stime %q", pid, fields[11], fields[12])
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}

// taskRun is the time the threads of process pid have run so far and how
// often they were put on a CPU, summed over /proc/<pid>/task/*/schedstat
// (each: run time in ns, time waiting to run, slices run).
func taskRun(pid int) (run time.Duration, slices, preempted int64, err error) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, 0, 0, err
	}
	for _, t := range tasks {
		raw, err := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
		if err != nil {
			continue // a thread that ended meanwhile
		}
		f := strings.Fields(string(raw))
		if len(f) != 3 {
			return 0, 0, 0, fmt.Errorf("%s/%s/schedstat: %q", dir, t.Name(), raw)
		}
		r, err1 := strconv.ParseInt(f[0], 10, 64)
		n, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			return 0, 0, 0, fmt.Errorf("%s/%s/schedstat: %q", dir, t.Name(), raw)
		}
		run += time.Duration(r)
		slices += n
		status, err := os.ReadFile(dir + "/" + t.Name() + "/status")
		if err != nil {
			continue
		}
		for line := range strings.SplitSeq(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, "nonvoluntary_ctxt_switches:"); ok {
				n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				preempted += n
			}
		}
	}
	return run, slices, preempted, nil
}
