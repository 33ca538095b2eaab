package server

import (
	"fmt"
	"net/http"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/recrawl"
)

const (
	msgNoSchedule    = "The crawl has no re-crawl schedule"
	msgScheduleEnded = "The crawl's re-crawl schedule has ended already"
)

// cancelAnswer is POST /recrawl/cancel's data: the crawl and its schedule,
// ended.
type cancelAnswer struct {
	SpiderID string        `json:"spiderid"`
	AppID    string        `json:"appid"`
	CrawlID  string        `json:"crawlid"`
	Recrawl  *recrawl.Info `json:"recrawl"`
}

// recrawlCancel ends a crawl's re-crawl schedule alone: POST
// /recrawl/cancel {"appid", "crawlid"[, "spiderid"]} (spiderid "link"
// unless given). The run in progress goes on to its end and its
// crawl-complete; no later run starts. 404 for a crawl the cluster does
// not know, 409 for one without a schedule or whose schedule has ended.
func (svc *Service) recrawlCancel(w http.ResponseWriter, r *http.Request) {
	obj, ok := svc.readValid(w, r, svc.cancelSchema, "recrawl/cancel")
	if !ok {
		return
	}
	c := ledger.Crawl{SpiderID: "link", AppID: obj["appid"].(string), CrawlID: obj["crawlid"].(string)}
	if s, ok := obj["spiderid"].(string); ok {
		c.SpiderID = s
	}
	schedule, _, err := svc.front.Schedule(r.Context(), c, nil)
	if err != nil {
		svc.redisFailed(w, r, "read a crawl's schedule", err)
		return
	}
	if schedule == nil {
		svc.noSchedule(w, r, c)
		return
	}
	ended, err := recrawl.CancelSchedule(r.Context(), svc.rdb, c)
	if err == nil {
		schedule, err = recrawl.Read(r.Context(), svc.rdb, c)
	}
	if err != nil {
		svc.redisFailed(w, r, "cancel a crawl's schedule", err)
		return
	}
	if !ended {
		by := "it ended"
		if schedule != nil && schedule.EndedBy != "" {
			by = "a " + schedule.EndedBy + " ended it"
		}
		writeFailure(w, http.StatusConflict, msgScheduleEnded,
			fmt.Sprintf("The schedule of crawl %q of app %q for spider %q is not active: %s.", c.CrawlID, c.AppID, c.SpiderID, by))
		return
	}
	svc.log.Info("Cancelled a re-crawl schedule", logfactory.Extra{"spiderid": c.SpiderID, "appid": c.AppID, "crawlid": c.CrawlID})
	svc.writeJSONData(w, cancelAnswer{SpiderID: c.SpiderID, AppID: c.AppID, CrawlID: c.CrawlID, Recrawl: schedule})
}

// noSchedule answers the cancel of a crawl without a schedule: 404 when
// the cluster does not know the crawl (no ledger, no queued request), else 409.
func (svc *Service) noSchedule(w http.ResponseWriter, r *http.Request, c ledger.Crawl) {
	progress, err := svc.front.Progress(r.Context(), c)
	if err != nil {
		svc.redisFailed(w, r, "read a crawl's ledger", err)
		return
	}
	pending := 0
	if progress == nil {
		if _, pending, err = svc.front.Domains(r.Context(), c); err != nil {
			svc.redisFailed(w, r, "scan the domain queues", err)
			return
		}
	}
	if progress == nil && pending == 0 {
		writeFailure(w, http.StatusNotFound, msgNoCrawl,
			fmt.Sprintf("No crawl %q of app %q for spider %q has a ledger or queued requests.", c.CrawlID, c.AppID, c.SpiderID))
		return
	}
	writeFailure(w, http.StatusConflict, msgNoSchedule,
		fmt.Sprintf("Crawl %q of app %q for spider %q was fed without a recrawl object (or its ended schedule expired).", c.CrawlID, c.AppID, c.SpiderID))
}
