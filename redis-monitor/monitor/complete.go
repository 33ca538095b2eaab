package monitor

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/lifecycle"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisconn"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// completer is ledger.Completer, or with a Redis Cluster
// ledger.ClusterCompleter (the crawl's shares summed over every master, its
// crawl-complete claimed once on its completion marker). Their claims last
// claimTTL.
type completer interface {
	Claim(ctx context.Context) ([]ledger.Finished, error)
	Finish(ctx context.Context, f ledger.Finished) error
}

// claimTTL is how long a completer's claim keeps the other monitors off a
// crawl: ledger.NewCompleter's and NewClusterCompleter's default.
const claimTTL = 30 * time.Second

// newCompleter is the completer of the key layout l, with quiet as its
// LEDGER_COMPLETE_QUIET.
func newCompleter(rdb redis.UniversalClient, l rediskeys.Layout, owner string, ttl, quiet time.Duration) (completer, error) {
	if !l.IsCluster() {
		c := ledger.NewCompleter(rdb, owner, ttl)
		c.Quiet, c.ClaimTTL = quiet, claimTTL
		return c, nil
	}
	cc, err := redisconn.ClusterClient(rdb)
	if err != nil {
		return nil, err
	}
	c := ledger.NewClusterCompleter(cc, owner, ttl)
	c.Quiet, c.ClaimTTL = quiet, claimTTL
	return c, nil
}

// completeLoop publishes a crawl-complete for every crawl whose ledger says
// nothing is left (ledger.Completer), every LEDGER_COMPLETE_INTERVAL until
// ctx ends. Several monitors run it at once: a crawl is claimed by one of
// them, published, then finished, so each completion goes out once. work is
// the context a publish in hand finishes under after ctx ends.
func (m *Monitor) completeLoop(ctx, work context.Context) {
	if err := ledger.LoadScripts(ctx, m.rdb); err != nil {
		// Claim and the purges load them again when Redis is back.
		m.log.Warning("Could not load the ledger scripts", logfactory.Extra{"error": err.Error()})
	}
	m.everyWithBackoff(ctx, m.completeEvery, "Failed to look for finished crawls; retrying", func() error { return m.completeOnce(ctx, work) })
}

// everyWithBackoff runs once every interval until ctx ends; after an error it
// logs failed (with the error and the wait) and waits twice as long each
// time, up to 5 s, until once succeeds again.
func (m *Monitor) everyWithBackoff(ctx context.Context, interval time.Duration, failed string, once func() error) {
	backoff := interval
	for {
		wait := interval
		if err := once(); err != nil {
			if ctx.Err() != nil {
				return
			}
			m.log.Error(failed, logfactory.Extra{"error": err.Error(), "retry_in": backoff.String()})
			wait, backoff = backoff, min(backoff*2, 5*time.Second)
		} else {
			backoff = interval
		}
		if !lifecycle.Sleep(ctx, wait) {
			return
		}
	}
}

// completeOnce claims the finished crawls and publishes their
// crawl-complete messages. A publish gets until its claim is about to lapse
// (two thirds of the claim's time): while Kafka is away it is retried until
// then, and if it still fails the claim lapses and the crawl is claimed and
// published again later, by this monitor or another; it is never dropped.
func (m *Monitor) completeOnce(ctx, work context.Context) error {
	claimed := time.Now()
	finished, err := m.completer.Claim(ctx)
	if err != nil {
		return err
	}
	deadline := claimed.Add(claimTTL * 2 / 3)
	for _, f := range finished {
		pctx, cancel := context.WithDeadline(work, deadline)
		err := m.publish(pctx, f.Message(time.Now()))
		cancel()
		extra := logfactory.Extra{"appid": f.Crawl.AppID, "crawlid": f.Crawl.CrawlID, "spiderid": f.Crawl.SpiderID, "reason": f.Progress.Reason()}
		if err != nil {
			extra["error"] = err.Error()
			m.log.Warning("Failed to send crawl-complete to kafka; it will be sent again", extra)
			return nil // Kafka is away: the other claims lapse and are retried too
		}
		if err := m.completer.Finish(context.WithoutCancel(ctx), f); err != nil {
			// Published but not marked: it may be published again once the claim lapses.
			extra["error"] = err.Error()
			m.log.Error("Sent crawl-complete but could not mark the crawl completed", extra)
			continue
		}
		m.completed.Add(1)
		m.log.Info("Sent crawl-complete to kafka", extra)
	}
	return nil
}

// Completed counts the crawl-complete messages this monitor published.
func (m *Monitor) Completed() int64 { return m.completed.Load() }
