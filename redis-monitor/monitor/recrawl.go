package monitor

import (
	"context"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
)

// recrawlLoop starts the re-crawl runs due (recrawl.Starter) every
// RECRAWL_INTERVAL until ctx ends. Several monitors run it at once: the
// start script lets exactly one of them start each run.
func (m *Monitor) recrawlLoop(ctx context.Context) {
	m.everyWithBackoff(ctx, m.recrawlEvery, "Failed to start re-crawl runs; retrying", func() error { return m.recrawlOnce(ctx) })
}

// recrawlOnce starts the runs due now and logs each started (and each
// schedule ended by its expiry).
func (m *Monitor) recrawlOnce(ctx context.Context) error {
	tried, err := m.starter.StartDue(ctx)
	if err != nil {
		return err
	}
	for _, t := range tried {
		extra := logfactory.Extra{"appid": t.Crawl.AppID, "crawlid": t.Crawl.CrawlID, "spiderid": t.Crawl.SpiderID, "run": t.Run}
		for _, p := range t.Problems {
			m.log.Error("A kept seed of a re-crawl schedule cannot be read; left out of the run", logfactory.Extra{"seed": p, "crawlid": t.Crawl.CrawlID})
		}
		switch t.Outcome {
		case "started":
			m.runsStarted.Add(1)
			extra["late_seconds"] = t.At.Sub(t.Due).Seconds()
			m.log.Info("Started a re-crawl run", extra)
		case "resumed":
			m.log.Info("Finished the start of a re-crawl run a monitor left half done", extra)
		case "expired":
			m.log.Info("A re-crawl schedule expired; no more runs", extra)
		}
	}
	return nil
}

// RunsStarted counts the re-crawl runs this monitor started.
func (m *Monitor) RunsStarted() int64 { return m.runsStarted.Load() }
