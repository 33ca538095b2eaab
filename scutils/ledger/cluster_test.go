package ledger_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// seedClusterCrawl queues 3 seeds of crawl in each of n domains of a Redis
// Cluster, through the cluster layout, and returns the domains.
func seedClusterCrawl(t *testing.T, c *redis.ClusterClient, n int) []string {
	t.Helper()
	var seeds []ledger.Seed
	var domains []string
	for i := range 3 * n {
		d := fmt.Sprintf("d%02d.com", i%n)
		if i < n {
			domains = append(domains, d)
		}
		seeds = append(seeds, ledger.Seed{Queue: rediskeys.Cluster.Queue("link", d), Score: -1, Member: fmt.Sprint(i), Crawl: crawl, Domain: d})
	}
	pipe := c.Pipeline()
	ledger.QueueSeedsIn(ctx, pipe, rediskeys.Cluster, seeds, time.Now(), time.Hour)
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	return domains
}

// doneIn counts n requests of crawl done in domain's share, as a crawler's
// acknowledgement would.
func doneIn(t *testing.T, c *redis.ClusterClient, domain string, n int64) {
	t.Helper()
	if err := c.HIncrBy(ctx, crawl.LedgerIn(rediskeys.Cluster, domain).Hash, ledger.FieldDone, n).Err(); err != nil {
		t.Fatal(err)
	}
}

// A crawl's ledger on a Redis Cluster is found on every master and read
// as the sum of its 20 domains' shares; two completers racing claim its
// crawl-complete exactly once, only once nothing is outstanding in any
// shard.
func TestClusterCrawlCompletesOnceAcrossShards(t *testing.T) {
	rc := harness.StartRedisCluster(t)
	c := rc.TestClient(t)
	domains := seedClusterCrawl(t, c, 20)

	shares, err := ledger.ActiveShares(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if got := shares.Domains(crawl); len(got) != 20 {
		t.Fatalf("the crawl's shares are in %d domains, want 20: %v", len(got), got)
	}
	p, consistent, err := ledger.ReadSum(ctx, c, crawl, domains)
	if err != nil || !consistent {
		t.Fatalf("ReadSum: %v, consistent %v", err, consistent)
	}
	if p.Seeds != 60 || p.Outstanding() != 60 {
		t.Fatalf("the sum has %d seeds, %d outstanding; want 60, 60", p.Seeds, p.Outstanding())
	}

	completers := []*ledger.ClusterCompleter{
		ledger.NewClusterCompleter(c, "m1", time.Hour), ledger.NewClusterCompleter(c, "m2", time.Hour),
	}
	claimAll := func() int {
		var wg sync.WaitGroup
		var mu sync.Mutex
		total := 0
		for _, comp := range completers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 5 {
					fs, err := comp.Claim(ctx)
					if err != nil {
						t.Error(err)
						return
					}
					for _, f := range fs {
						if f.Crawl != crawl || f.Progress.Outstanding() != 0 || f.Progress.Seeds != 60 {
							t.Errorf("claimed %+v with %+v", f.Crawl, f.Progress)
						}
						if err := comp.Finish(ctx, f); err != nil {
							t.Error(err)
						}
					}
					mu.Lock()
					total += len(fs)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		return total
	}
	for i, d := range domains {
		if i < len(domains)-1 {
			doneIn(t, c, d, 3)
		} else {
			doneIn(t, c, d, 2) // one request still in flight in the last domain
		}
	}
	if n := claimAll(); n != 0 {
		t.Fatalf("%d crawl-completes with one request outstanding in one shard", n)
	}
	doneIn(t, c, domains[len(domains)-1], 1)
	if n := claimAll(); n != 1 {
		t.Fatalf("%d crawl-completes from two racing completers, want 1", n)
	}
	if n := claimAll(); n != 0 {
		t.Fatalf("%d more crawl-completes after the first", n)
	}
	shares, err = ledger.ActiveShares(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if len(shares[crawl]) != 0 {
		t.Fatalf("the completed crawl is still active in %v", shares.Domains(crawl))
	}
	p, _, err = ledger.ReadSum(ctx, c, crawl, domains)
	if err != nil || p.State != ledger.StateComplete {
		t.Fatalf("after completion the summed ledger is %+v (%v), want complete", p, err)
	}
}

// A completer that dies holding its claim is taken over once the claim's
// deadline passes, and the crawl-complete goes out.
func TestClusterCompletionClaimOfADeadCompleterIsTakenOver(t *testing.T) {
	rc := harness.StartRedisCluster(t)
	c := rc.TestClient(t)
	for _, d := range seedClusterCrawl(t, c, 3) {
		doneIn(t, c, d, 3)
	}
	dead := ledger.NewClusterCompleter(c, "dead", time.Hour)
	dead.ClaimTTL = 100 * time.Millisecond
	fs, err := dead.Claim(ctx)
	if err != nil || len(fs) != 1 {
		t.Fatalf("the first completer claimed %d (%v), want 1", len(fs), err)
	}
	live := ledger.NewClusterCompleter(c, "live", time.Hour)
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := live.Claim(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 1 {
			if err := live.Finish(ctx, got[0]); err != nil {
				t.Fatal(err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the dead completer's claim was never taken over")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := dead.Finish(ctx, fs[0]); err == nil {
		t.Fatal("the dead completer finished a claim taken over")
	}
}

// A completer whose Finish lands late, after a re-crawl's next run started
// in one of the crawl's domains (its share dropped and made afresh, marked
// run 2, back in the domain's active set), ends the completed run's shares
// only: run 2's share keeps its active entry and is not marked completed.
func TestALateFinishLeavesTheNextRunsShareAlone(t *testing.T) {
	rc := harness.StartRedisCluster(t)
	c := rc.TestClient(t)
	domains := seedClusterCrawl(t, c, 3)
	for _, d := range domains {
		if err := c.HSet(ctx, crawl.LedgerIn(rediskeys.Cluster, d).Hash, ledger.FieldRun, 1).Err(); err != nil {
			t.Fatal(err)
		}
		doneIn(t, c, d, 3)
	}
	comp := ledger.NewClusterCompleter(c, "m1", time.Hour)
	fs, err := comp.Claim(ctx)
	if err != nil || len(fs) != 1 {
		t.Fatalf("Claim: %d claimed (%v), want run 1 of the crawl", len(fs), err)
	}

	next := crawl.LedgerIn(rediskeys.Cluster, domains[0])
	pipe := c.Pipeline()
	pipe.Del(ctx, next.Hash)
	pipe.HSet(ctx, next.Hash, ledger.FieldRun, 2, ledger.FieldSeeds, 1)
	pipe.ZAdd(ctx, next.Active, redis.Z{Score: float64(time.Now().Unix()), Member: next.Member})
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if err := comp.Finish(ctx, fs[0]); err != nil {
		t.Fatal(err)
	}

	for i, d := range domains {
		l := crawl.LedgerIn(rediskeys.Cluster, d)
		completed, err := c.HExists(ctx, l.Hash, ledger.FieldCompleted).Result()
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.ZScore(ctx, l.Active, l.Member).Result()
		active := err == nil
		if i == 0 && (completed || !active) {
			t.Errorf("run 2's share in %s: completed %v, active %v; want it left alone", d, completed, active)
		}
		if i > 0 && (!completed || active) {
			t.Errorf("run 1's share in %s: completed %v, active %v; want completed, not active", d, completed, active)
		}
	}
}
