package console

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/recrawl"
)

// scheduleData is a scheduled crawl's schedule and runs, as its page
// shows them: the same the REST service's GET /crawls/<crawlid> answers
// under recrawl and runs.
type scheduleData struct {
	*recrawl.Info
	RunList []runRow
}

// Active reports whether runs are still to come: the schedule can be
// cancelled.
func (s *scheduleData) Active() bool { return s.State == "active" }

// NextRun is when the next run is due, epoch seconds (0: none follows).
func (s *scheduleData) NextRun() float64 {
	if s.NextRunAt == nil {
		return 0
	}
	return float64(*s.NextRunAt)
}

// runRow is one run of a scheduled crawl.
type runRow struct {
	ledger.RunEntry
	// Done and Total make its progress: done / (seeds + enqueued).
	Done, Total int64
}

// Finished is when the run completed, epoch seconds (0: it goes on).
func (r runRow) Finished() float64 {
	if r.Completed == nil {
		return 0
	}
	return *r.Completed
}

// readSchedule reads cr's schedule and its runs (current: the crawl's
// ledger, the run in progress or the last); nil for a crawl without one.
func readSchedule(ctx context.Context, c *Console, cr ledger.Crawl, current *ledger.Progress) (*scheduleData, error) {
	info, runs, err := c.front.Schedule(ctx, cr, current)
	if info == nil {
		return nil, err
	}
	d := &scheduleData{Info: info}
	for _, r := range runs {
		row := runRow{RunEntry: r}
		if p := r.Progress; p != nil {
			row.Done, row.Total = p.Done, p.Seeds+p.Enqueued
		}
		d.RunList = append(d.RunList, row)
	}
	return d, err
}

// cancelSchedule ends the crawl's schedule alone through the service's
// POST /recrawl/cancel: the run in progress goes on, no later run starts.
func (c *Console) cancelSchedule(r *http.Request, cr ledger.Crawl) *flash {
	body, _ := json.Marshal(map[string]string{"appid": cr.AppID, "crawlid": cr.CrawlID, "spiderid": cr.SpiderID})
	f := flashFrom("Cancel the schedule", c.callAPI(r, "/recrawl/cancel", body))
	if f.OK {
		f.Message = "Cancelled: no later run starts; the run in progress goes on to its end."
	}
	return f
}
