package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"

	"golang.org/x/time/rate"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/fetch"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider/links"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/trial"
	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin"
	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugins/scraper"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"

	_ "github.com/scrapycluster/scrapy-cluster-go/crawler/spiders/all" // the spiders a tried request may name
)

// The /try settings (ours). The fetch itself reads the crawler's download
// settings (fetch.Settings: DOWNLOAD_*, FETCH_*, ROBOTSTXT_*, USER_AGENT, ...).
var (
	TryRate  = settings.Float("TRY_RATE", 1.0, "`POST /try` requests per second the service fetches, over all clients; more are answered 429; 0 turns `/try` off").Ours()
	TryBurst = settings.Int("TRY_BURST", 5, "`POST /try` requests let through at once before `TRY_RATE` applies").Ours()
)

// Messages of /try's failures.
const (
	msgNotCrawl    = "Only a crawl request can be tried."
	msgTryOff      = "POST /try is turned off (TRY_RATE 0)."
	msgTryTooMany  = "Too many requests to /try; try again shortly."
	msgTryNotFetch = "The crawler would not have this page."
)

// newTrier builds /try's fetcher and rate limit from the settings.
func newTrier(s *settings.Settings) (*trial.Trier, *rate.Limiter, error) {
	fcfg, err := fetch.ConfigFromSettings(s)
	if err != nil {
		return nil, nil, err
	}
	r, burst := TryRate.From(s), TryBurst.From(s)
	if r < 0 || math.IsNaN(r) || burst < 1 {
		return nil, nil, fmt.Errorf("settings %s and %s: want a rate of 0 or more and a burst of 1 or more, got %v and %d",
			TryRate.Name(), TryBurst.Name(), r, burst)
	}
	return trial.New(fcfg, links.MaxPerPage.From(s)), rate.NewLimiter(rate.Limit(r), burst), nil
}

// try fetches a crawl request as a crawler would (package trial) and
// answers what the cluster would publish and follow. It queues and counts
// nothing. A request that is not a valid crawl request is answered 400 as
// /feed answers it; a page the crawler would not have (a refused address,
// robots.txt, no response) 422 with the crawler's reason.
func (svc *Service) try(w http.ResponseWriter, r *http.Request) {
	if svc.tryLimit.Limit() == 0 {
		writeFailure(w, http.StatusForbidden, msgTryOff, "")
		return
	}
	if !svc.tryLimit.Allow() {
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(1/float64(svc.tryLimit.Limit()))))))
		writeFailure(w, http.StatusTooManyRequests, msgTryTooMany, "")
		return
	}
	_, v, ok := svc.readRequest(w, r)
	if !ok {
		return
	}
	p, req, err := plugin.ValidateValue(svc.plugins, v)
	if err != nil {
		svc.badSchema(w, err.Error())
		return
	}
	if p.Plugin.Name() != (&scraper.Handler{}).Name() {
		writeFailure(w, http.StatusBadRequest, msgNotCrawl, "it is a request for "+p.Plugin.Name())
		return
	}
	_, cr, err := crawlrequest.FromFed(req)
	if err != nil {
		svc.badSchema(w, err.Error())
		return
	}
	svc.log.Info("'try' endpoint called", logfactory.Extra{"url": cr.URL, "appid": cr.AppID, "crawlid": cr.CrawlID})
	ctx, cancel := context.WithTimeout(r.Context(), svc.writeTimeout)
	defer cancel()
	res, err := svc.trier.Try(ctx, &cr)
	if err != nil {
		svc.tryFailed(w, err)
		return
	}
	data, err := json.Marshal(res)
	if err != nil {
		writeFailure(w, http.StatusInternalServerError, msgUnknownError, err.Error())
		return
	}
	writeData(w, data)
}

// tryFailed answers a request the crawler would get no page of: 422 with
// the crawler's drop reason when it has one ("private_address", ...), or
// the error.
func (svc *Service) tryFailed(w http.ResponseWriter, err error) {
	cause := err.Error()
	if reason := fetch.DropReason(err); reason != "" {
		cause = reason + ": " + cause
	} else if fetch.IsRetryable(err) || errors.Is(err, context.DeadlineExceeded) {
		cause = "no_response: " + cause
	}
	svc.log.Info("'try' fetched nothing", logfactory.Extra{"error": cause})
	writeFailure(w, http.StatusUnprocessableEntity, msgTryNotFetch, cause)
}
