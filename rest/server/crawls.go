package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/domainqueues"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/recrawl"
)

// The /crawls listing's page size: CrawlsDefaultLimit when the request
// names none, at most CrawlsMaxLimit.
const (
	CrawlsDefaultLimit = 50
	CrawlsMaxLimit     = 500
)

const (
	msgBadQuery     = "Invalid query parameter."
	msgNoCrawl      = "Could not find the crawl"
	msgNoCrawlAppID = "The appid query parameter is required."
)

// crawlsAnswer is GET /crawls's data.
type crawlsAnswer struct {
	Crawls []ledger.Entry `json:"crawls"`
	Total  int64          `json:"total"`
	Offset int            `json:"offset"`
	Limit  int            `json:"limit"`
}

// crawlAnswer is GET /crawls/<crawlid>'s data: the crawl's progress (null
// for a crawl without a ledger, fed by the original's Kafka Monitor) and
// what each domain queue holds of it, as the info answer's domains.
type crawlAnswer struct {
	SpiderID     string                              `json:"spiderid"`
	AppID        string                              `json:"appid"`
	CrawlID      string                              `json:"crawlid"`
	Progress     *ledger.Progress                    `json:"progress"`
	TotalPending int                                 `json:"total_pending"`
	Domains      map[string]*domainqueues.DomainInfo `json:"domains"`
	// Recrawl and Runs are a scheduled crawl's schedule and its runs, each
	// with its own counts (absent for a crawl without a schedule).
	Recrawl *recrawl.Info     `json:"recrawl,omitempty"`
	Runs    []ledger.RunEntry `json:"runs,omitempty"`
}

// crawls lists crawls with their progress, newest first: GET
// /crawls[?appid=<appid>][&offset=<n>][&limit=<n>].
func (svc *Service) crawls(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	svc.log.Info("'crawls' endpoint called", logfactory.Extra{"query": r.URL.RawQuery})
	if cause := unknownParams(q, "appid", "offset", "limit"); cause != "" {
		svc.badQuery(w, cause)
		return
	}
	offset, cause := intParam(q, "offset", 0, 0, 1<<30)
	if cause != "" {
		svc.badQuery(w, cause)
		return
	}
	limit, cause := intParam(q, "limit", CrawlsDefaultLimit, 1, CrawlsMaxLimit)
	if cause != "" {
		svc.badQuery(w, cause)
		return
	}
	entries, total, err := svc.front.List(r.Context(), q.Get("appid"), offset, limit)
	if err != nil {
		svc.redisFailed(w, r, "list crawls", err)
		return
	}
	svc.writeJSONData(w, crawlsAnswer{Crawls: entries, Total: total, Offset: offset, Limit: limit})
}

// crawl answers one crawl's progress and domains: GET
// /crawls/<crawlid>?appid=<appid>[&spiderid=<spiderid>] (spiderid "link"
// unless given).
func (svc *Service) crawl(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	crawlID := r.PathValue("crawlid")
	svc.log.Info("'crawl' endpoint called", logfactory.Extra{"crawlid": crawlID, "query": r.URL.RawQuery})
	if cause := unknownParams(q, "appid", "spiderid"); cause != "" {
		svc.badQuery(w, cause)
		return
	}
	appID := q.Get("appid")
	if appID == "" {
		writeFailure(w, http.StatusBadRequest, msgNoCrawlAppID, "")
		return
	}
	spiderID := "link"
	if q.Has("spiderid") {
		spiderID = q.Get("spiderid")
	}
	c := ledger.Crawl{SpiderID: spiderID, AppID: appID, CrawlID: crawlID}
	progress, err := svc.front.Progress(r.Context(), c)
	if err != nil {
		svc.redisFailed(w, r, "read a crawl's ledger", err)
		return
	}
	domains, pending, err := svc.front.Domains(r.Context(), c)
	if err != nil {
		svc.redisFailed(w, r, "scan the domain queues", err)
		return
	}
	if progress == nil && pending == 0 {
		writeFailure(w, http.StatusNotFound, msgNoCrawl,
			fmt.Sprintf("No crawl %q of app %q for spider %q has a ledger or queued requests.", crawlID, appID, spiderID))
		return
	}
	schedule, runs, err := svc.front.Schedule(r.Context(), c, progress)
	if err != nil {
		svc.redisFailed(w, r, "read a crawl's schedule", err)
		return
	}
	svc.writeJSONData(w, crawlAnswer{
		SpiderID: spiderID, AppID: appID, CrawlID: crawlID,
		Progress: progress, TotalPending: pending, Domains: domains,
		Recrawl: schedule, Runs: runs,
	})
}

// unknownParams names the query parameters not among known ("" if none).
func unknownParams(q url.Values, known ...string) string {
	var unknown []string
	for k := range q {
		found := false
		for _, n := range known {
			found = found || k == n
		}
		if !found {
			unknown = append(unknown, strconv.Quote(k))
		}
	}
	if len(unknown) == 0 {
		return ""
	}
	return fmt.Sprintf("Unknown query parameter %s; known: %s.", strings.Join(unknown, ", "), strings.Join(known, ", "))
}

// intParam reads an integer query parameter within [lo, hi], def when
// absent; the cause is "" when it is fine.
func intParam(q url.Values, name string, def, lo, hi int) (int, string) {
	if !q.Has(name) {
		return def, ""
	}
	n, err := strconv.Atoi(q.Get(name))
	if err != nil || n < lo || n > hi {
		return 0, fmt.Sprintf("%s must be an integer from %d to %d, got %q.", name, lo, hi, q.Get(name))
	}
	return n, ""
}

func (svc *Service) badQuery(w http.ResponseWriter, cause string) {
	svc.log.Warning(msgBadQuery, logfactory.Extra{"cause": cause})
	writeFailure(w, http.StatusBadRequest, msgBadQuery, cause)
}

// redisFailed answers a request Redis could not serve.
func (svc *Service) redisFailed(w http.ResponseWriter, r *http.Request, doing string, err error) {
	if r.Context().Err() == nil {
		svc.redisLost(err)
		svc.log.Error("Failed to "+doing+" in Redis", logfactory.Extra{"error": err.Error()})
	}
	writeFailure(w, http.StatusInternalServerError, msgNoRedis, "")
}

// writeJSONData answers SUCCESS with v as data.
func (svc *Service) writeJSONData(w http.ResponseWriter, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		svc.log.Error("Failed to encode an answer", logfactory.Extra{"error": err.Error()})
		writeFailure(w, http.StatusInternalServerError, msgUnknownError, "")
		return
	}
	writeData(w, data)
}
