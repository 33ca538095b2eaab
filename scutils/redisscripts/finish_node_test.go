package redisscripts_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisscripts"
)

// nodeDomains are domains of cluster keys spread over every master of rc,
// at least two of them in distinct slots of one master (rediskeys.Cluster
// keys: a domain's keys in its slot), by master address.
func nodeDomains(t *testing.T, rc *harness.RedisCluster, n int) (domains []string, masterOf map[string]string) {
	t.Helper()
	masterOf = map[string]string{}
	perMaster := map[string]int{}
	for i := range n {
		d := fmt.Sprintf("n%d.com", i)
		domains = append(domains, d)
		masterOf[d] = rc.MasterOf(t, rediskeys.Cluster.Queue("link", d)).Addr
		perMaster[masterOf[d]]++
	}
	if len(perMaster) != 3 {
		t.Fatalf("%d domains on %d masters, want all 3", n, len(perMaster))
	}
	return domains, masterOf
}

// domainAck is a batch of finish.lua in domain's slot: one lease of owner
// o1 ended, its page's two links queued in the domain's queue, counted in
// the crawl's share of the domain; leases puts the lease in place.
func domainAck(t *testing.T, rdb redis.Cmdable, domain string) *redisscripts.Finish {
	t.Helper()
	l := rediskeys.Cluster
	base := l.Leases("link", domain)
	if err := rdb.ZAdd(ctx, base+":owners", redis.Z{Score: 4e9, Member: "o1"}).Err(); err != nil {
		t.Fatal(err)
	}
	rdb.HSet(ctx, base+":items", "o1:"+domain, "r")
	share := clusterCrawl.LedgerIn(l, domain)
	page := &redisscripts.FinishPage{Crawl: "app||c1", DupeFilter: l.DupeFilter("link", domain, "c1"), Fingerprint: "fp0" + domain,
		Groups: []redisscripts.FinishGroup{{Queue: l.Queue("link", domain), Channel: "link:queue-announce", Ledger: share, Score: -10,
			Requests: []redisscripts.FinishRequest{{Fingerprint: "fp1" + domain, Member: "a" + domain}, {Fingerprint: "fp2" + domain, Member: "b" + domain}}}}}
	f := finishBatch() // its expiries and stamp
	f.LeaseOwners, f.LeaseRecords, f.Pages = base+":owners", base+":items", nil
	f.Acks = []redisscripts.FinishAck{{LeaseID: "o1:" + domain, Owner: "o1", Page: page,
		Counts: []redisscripts.LedgerCount{{Ledger: share, Field: "done", N: 1}}}}
	return f
}

// domainAcks are the domainAck batches of domains.
func domainAcks(t *testing.T, rdb redis.Cmdable, domains []string) []*redisscripts.Finish {
	t.Helper()
	fs := make([]*redisscripts.Finish, len(domains))
	for i, d := range domains {
		fs[i] = domainAck(t, rdb, d)
	}
	return fs
}

// checkFinishedOnce checks that each domain's batch ran exactly once:
// its lease ended, its two links queued, and its share counts one done
// and two enqueued.
func checkFinishedOnce(t *testing.T, rdb redis.Cmdable, domains []string, res []redisscripts.FinishResult, errs []error) {
	t.Helper()
	for i, d := range domains {
		if errs[i] != nil {
			t.Errorf("%s: %v", d, errs[i])
			continue
		}
		if a := res[i].Acks; len(a) != 1 || a[0].State != redisscripts.AckFinished || a[0].Page.Status != redisscripts.PageQueued ||
			a[0].Page.Groups[0].Queued != 2 {
			t.Errorf("%s: %+v, want its lease ended now and 2 queued", d, res[i])
		}
		if n := rdb.ZCard(ctx, rediskeys.Cluster.Queue("link", d)).Val(); n != 2 {
			t.Errorf("%s: its queue holds %d, want 2", d, n)
		}
		counts := rdb.HGetAll(ctx, clusterCrawl.LedgerIn(rediskeys.Cluster, d).Hash).Val()
		if counts["done"] != "1" || counts["enqueued"] != "2" {
			t.Errorf("%s: its share counts %v, want done 1 and enqueued 2", d, counts)
		}
	}
}

// commandCalls is how many times each master ran cmd since its stats were
// reset.
func commandCalls(t *testing.T, rc *harness.RedisCluster, cmd string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, m := range rc.Masters(t) {
		info := m.Client().Info(ctx, "commandstats").Val()
		for line := range strings.SplitSeq(info, "\r\n") {
			if v, ok := strings.CutPrefix(line, "cmdstat_"+cmd+":calls="); ok {
				var n int
				fmt.Sscanf(v, "%d", &n)
				out[m.Addr] = n
			}
		}
	}
	return out
}

// RunByNode runs the batches of 9 domains on three masters with one run per
// master (one EVALSHA each, the scripts loaded), and each batch does what
// its own run of finish.lua would: its lease ended, its links queued and
// counted in its domain's share.
func TestRunByNodeRunsEachMastersBatchesInOneRun(t *testing.T) {
	rc := harness.StartRedisClusterWith(t, harness.RedisClusterOptions{NoReplicas: true})
	rdb := rc.TestClient(t)
	domains, masterOf := nodeDomains(t, rc, 9)
	fs := domainAcks(t, rdb, domains)
	for _, m := range rc.Masters(t) {
		mc := m.Client()
		if err := redisscripts.Load(ctx, mc, &redisscripts.Finish{}, &redisscripts.FinishNode{}); err != nil {
			t.Fatal(err)
		}
		mc.ConfigResetStat(ctx)
		mc.Close()
	}
	res, errs, fb := redisscripts.RunByNode(ctx, rdb, fs)
	if fb != (redisscripts.Fallback{}) {
		t.Errorf("fell back: %+v", fb)
	}
	checkFinishedOnce(t, rdb, domains, res, errs)
	want := map[string]int{}
	for _, addr := range masterOf {
		want[addr] = 1
	}
	if got := commandCalls(t, rc, "evalsha"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("EVALSHA calls per master %v, want one each", got)
	}
}

// A run of finish_node.lua given a batch whose keys another master serves
// writes nothing, not even the batches before it that its node serves,
// and says so (ErrNotServedHere): Redis checks only the first key's slot.
func TestFinishNodeWritesNothingWhenAKeyIsServedElsewhere(t *testing.T) {
	rc := harness.StartRedisClusterWith(t, harness.RedisClusterOptions{NoReplicas: true})
	rdb := rc.TestClient(t)
	domains, masterOf := nodeDomains(t, rc, 9)
	var here, there string
	for _, d := range domains {
		switch {
		case here == "":
			here = d
		case there == "" && masterOf[d] != masterOf[here]:
			there = d
		}
	}
	run := &redisscripts.FinishNode{Batches: []*redisscripts.Finish{domainAck(t, rdb, here), domainAck(t, rdb, there)}}
	if _, err := run.Run(ctx, rdb); !errors.Is(err, redisscripts.ErrNotServedHere) || !redisscripts.NotRun(err) {
		t.Fatalf("a run over two masters: %v, want ErrNotServedHere", err)
	}
	for _, d := range []string{here, there} {
		if n := rdb.Exists(ctx, rediskeys.Cluster.Queue("link", d), clusterCrawl.LedgerIn(rediskeys.Cluster, d).Hash).Val(); n != 0 {
			t.Errorf("%s: the refused run wrote its queue or its share", d)
		}
		if n := rdb.HLen(ctx, rediskeys.Cluster.Leases("link", d)+":items").Val(); n != 1 {
			t.Errorf("%s: the refused run ended its lease", d)
		}
	}
}

// With a slot map that puts every batch on one master (stale: a slot
// moved, a failover), the node run is refused by the master and every
// batch falls back to a run of its own, so each runs exactly once.
func TestRunByNodeFallsBackToOneRunPerBatchWhenTheNodeRefuses(t *testing.T) {
	rc := harness.StartRedisClusterWith(t, harness.RedisClusterOptions{NoReplicas: true})
	rdb := rc.TestClient(t)
	domains, _ := nodeDomains(t, rc, 9)
	fs := domainAcks(t, rdb, domains)
	stale := func(string) (string, error) { return "one", nil }
	res, errs, fb := redisscripts.RunByNodeWith(ctx, rdb, fs, stale)
	if fb != (redisscripts.Fallback{Batches: len(fs)}) {
		t.Errorf("fell back: %+v, want all %d batches", fb, len(fs))
	}
	checkFinishedOnce(t, rdb, domains, res, errs)
}

// After a failover (a manual one: the old master lives on as a replica and
// answers MOVED), a client whose slot map is stale sends a master's node
// run to the old master; go-redis follows the MOVED to the promoted
// replica, which serves every slot of the old master, and each batch runs
// exactly once (whether on the node run or fallen back).
func TestRunByNodeAfterAFailoverRunsEachBatchOnce(t *testing.T) {
	rc := harness.StartRedisCluster(t)
	setup := rc.TestClient(t)
	domains, masterOf := nodeDomains(t, rc, 9)
	old := masterOf[domains[0]]
	var mine []string // the domains of the old master: one node run
	for _, d := range domains {
		if masterOf[d] == old {
			mine = append(mine, d)
		}
	}
	fs := domainAcks(t, setup, mine)
	stale := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(rc.Seeds(), ",")})
	t.Cleanup(func() { stale.Close() })
	if m, err := stale.MasterForKey(ctx, fs[0].LeaseOwners); err != nil || m.Options().Addr != old {
		t.Fatalf("the client's map: %v, %v; want %s", m, err, old)
	}
	var oldNode, replica *harness.Redis
	for _, n := range rc.Nodes {
		info := n.TestClient(t).Info(ctx, "replication").Val()
		switch {
		case n.Addr == old:
			oldNode = n
		case strings.Contains(info, "role:slave") && strings.Contains(info, fmt.Sprintf("master_port:%d\r", portOf(t, old))):
			replica = n
		}
	}
	if replica == nil || oldNode == nil {
		t.Fatalf("no replica of %s", old)
	}
	if err := replica.TestClient(t).Do(ctx, "CLUSTER", "FAILOVER").Err(); err != nil {
		t.Fatal(err)
	}
	if !harness.Until(time.Minute, func() bool {
		return strings.Contains(replica.TestClient(t).Info(ctx, "replication").Val(), "role:master") &&
			strings.Contains(oldNode.TestClient(t).Info(ctx, "replication").Val(), "role:slave")
	}) {
		t.Fatal("the replica did not take over")
	}
	if err := oldNode.TestClient(t).Get(ctx, fs[0].LeaseOwners).Err(); !redis.HasErrorPrefix(err, "MOVED") {
		t.Fatalf("the old master answers %v, want MOVED", err)
	}
	res, errs, fb := redisscripts.RunByNode(ctx, stale, fs)
	checkFinishedOnce(t, setup, mine, res, errs)
	t.Logf("%d batches of the old master; fell back: %+v", len(mine), fb)
}

// portOf is the port of addr, host:port.
func portOf(t *testing.T, addr string) int {
	t.Helper()
	_, p, _ := strings.Cut(addr, ":")
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatalf("address %q: %v", addr, err)
	}
	return n
}
