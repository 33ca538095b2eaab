package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/engine"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
)

// SCHEDULER_PERSIST reaches the engine through the scheduler's Config: false
// clears the spider's queues and filters when the crawler stops (true, the
// default, keeps them: TestShutdownReturnsUnfinishedRequestsToTheirQueue).
func TestSchedulerPersistFalseClearsTheQueuesWhenTheCrawlerStops(t *testing.T) {
	e := newEnv(t, map[string]string{"SCHEDULER_PERSIST": "false", "SHUTDOWN_GRACE": "0.2", "DOWNLOAD_TIMEOUT": "30"})
	e.seed(t, crawl(e.site.URL("/slow/20000"), "slow", 0))
	harness.WaitFor(t, "the slow page in flight", 10*time.Second, func() bool { return len(e.site.HitsFor("/slow/20000")) == 1 })
	ctx := context.Background()
	// A crawl's duplicate filter, as its follow-ups would make it.
	if err := e.rdb.SAdd(ctx, "link:dupefilter:slow", "fingerprint").Err(); err != nil {
		t.Fatal(err)
	}
	e.stopEngine(t) // returns the slow request to its queue, then clears
	for _, pattern := range []string{"link:*:queue", "link:dupefilter:*"} {
		if left := e.rdb.Keys(ctx, pattern).Val(); len(left) != 0 {
			t.Errorf("%q left after a stop with SCHEDULER_PERSIST false", left)
		}
	}
	if !strings.Contains(e.log.String(), "Clearing crawl queues") {
		t.Error("the crawler did not say it clears its queues")
	}
}

// A rendering crawler whose settings are bad does not start: the error
// names the setting.
func TestBadRenderSettingsAreRefusedAtStart(t *testing.T) {
	s := testSettings(t, "127.0.0.1:1", map[string]string{"RENDER_ENABLED": "true", "RENDER_BLOCK": "image,scripts"})
	_, err := engine.New(context.Background(), s, harness.Logger(t, logfactory.Settings("SC_").Config(s), &harness.OutputBuffer{}), redisServer.TestClient(t))
	if err == nil || !strings.Contains(err.Error(), "setting RENDER_BLOCK") {
		t.Fatalf("engine.New with RENDER_BLOCK image,scripts: %v, want the setting's refusal", err)
	}
}
