package ledger_test

import (
	"slices"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// On a Redis Cluster a crawl's shares are found on every master and
// summed; a stop holds the crawl's completion until its answer is out: a
// completer does not claim the finished, ended crawl before ReleaseCluster,
// then claims it as stopped; a crawl already complete is not held again.
func TestClusterEndHoldsTheCompletionUntilReleased(t *testing.T) {
	rc := harness.StartRedisCluster(t)
	c := rc.TestClient(t)
	domains := seedClusterCrawl(t, c, 6) // 3 seeds in each

	shares, err := ledger.ClusterShares(ctx, c, crawl.SpiderID, crawl.AppID, "")
	if err != nil || !slices.Equal(shares[crawl], domains) || len(shares) != 1 {
		t.Fatalf("ClusterShares: %v %v, want the crawl in %v", shares, err, domains)
	}
	ps, err := ledger.ReadCluster(ctx, c, shares)
	if err != nil || ps[crawl] == nil || ps[crawl].Seeds != 18 || ps[crawl].Queued != 18 || ps[crawl].InFlight != 0 {
		t.Fatalf("ReadCluster: %+v %v, want 18 seeds queued", ps[crawl], err)
	}

	now := time.Now()
	ended, err := ledger.EndCluster(ctx, c, crawl, ledger.PurgedStop, "stop:1", now, now.Add(time.Minute))
	if err != nil || !ended {
		t.Fatalf("EndCluster: %v %v, want the crawl ended", ended, err)
	}
	for _, d := range domains {
		doneIn(t, c, d, 3) // its requests purged
		// The shares record who ended the crawl; the marker alone holds
		// completers off, so no share keeps a hold nobody would clear.
		share, err := c.HGetAll(ctx, crawl.LedgerIn(rediskeys.Cluster, d).Hash).Result()
		if err != nil || share[ledger.FieldEndedBy] != "stop" || share[ledger.FieldCompleting] != "" {
			t.Fatalf("share of %s after the stop: %v %v, want ended_by stop and no completing", d, share, err)
		}
	}
	comp := ledger.NewClusterCompleter(c, "m1", time.Hour)
	comp.Quiet = time.Hour // an ended crawl does not wait for it
	if fs, err := comp.Claim(ctx); err != nil || len(fs) != 0 {
		t.Fatalf("a completer claimed %d held crawls (%v), want none", len(fs), err)
	}
	if ended, err := ledger.EndCluster(ctx, c, crawl, ledger.PurgedExpire, "expire:1", now, now.Add(time.Minute)); err != nil || ended {
		t.Fatalf("another action ended the held crawl: %v %v", ended, err)
	}
	if err := ledger.ReleaseCluster(ctx, c, crawl, "stop:1"); err != nil {
		t.Fatal(err)
	}
	fs, err := comp.Claim(ctx)
	if err != nil || len(fs) != 1 || fs[0].Progress.Reason() != "stopped" || fs[0].Progress.EndedBy != "stop" {
		t.Fatalf("after the release: %v %v, want the crawl claimed as stopped", fs, err)
	}
	if err := comp.Finish(ctx, fs[0]); err != nil {
		t.Fatal(err)
	}
	if ended, err := ledger.EndCluster(ctx, c, crawl, ledger.PurgedStop, "stop:2", now, now.Add(time.Minute)); err != nil || ended {
		t.Fatalf("a completed crawl was ended again: %v %v", ended, err)
	}
	ps, err = ledger.ReadCluster(ctx, c, shares)
	if err != nil || ps[crawl].State != ledger.StateComplete || ps[crawl].EndedBy != "stop" {
		t.Fatalf("ReadCluster after the completion: %+v %v", ps[crawl], err)
	}
}
