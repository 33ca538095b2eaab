package engine

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/fetch"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/scheduler"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/wirejson"
)

// The queue member fields the engine adds to the requests it derives
// (extra fields: the original's crawlers ignore them).
const (
	// fieldReferer is the Referer to send with the request: the page it
	// was found on, under REFERRER_POLICY (null: none).
	fieldReferer = "referer"
	// fieldRedirectTimes counts the meta refreshes that led to the
	// request (Scrapy's redirect_times).
	fieldRedirectTimes = "redirect_times"
)

// refererOf is the Referer r carries ("" none).
func refererOf(r *crawlrequest.Request) string {
	raw, ok := r.Extra(fieldReferer)
	if !ok {
		return ""
	}
	s, _ := wirejson.Unquote(string(raw))
	return s
}

// setReferer gives r the Referer ref ("" none: null, since r may carry its
// parent's).
func setReferer(r *crawlrequest.Request, ref string) {
	raw := []byte("null")
	if ref != "" {
		raw = wirejson.AppendString(nil, ref, wirejson.Go)
	}
	_ = r.SetExtra(fieldReferer, raw) // an extra field's name, and JSON
}

// refer gives the requests found on the page of resp their Referer, as
// Scrapy's RefererMiddleware does for every spider's requests.
func (e *Engine) refer(resp *spider.Response, reqs []*crawlrequest.Request) {
	if !e.referer.Enabled() {
		return
	}
	for _, r := range reqs {
		setReferer(r, e.referer.For(resp.URL, resp.Header, r.URL))
	}
}

// followMetaRefresh replaces a page that refreshes to another URL within
// METAREFRESH_MAXDELAY seconds by that URL, as Scrapy's
// MetaRefreshMiddleware does: the target is queued as a request of the
// same crawl at the same depth and priority (through the duplicate
// filter), the page itself is not published, and its ledger count is
// dropped:meta_refresh. A request that came through REDIRECT_MAX_TIMES
// refreshes already is published as it is. It reports whether the page
// was replaced.
func (e *Engine) followMetaRefresh(ctx context.Context, item *scheduler.Item, tally *ledger.Tally, res *fetch.Result, extra logfactory.Extra) bool {
	if !e.metaRefresh {
		return false
	}
	target, delay, ok := fetch.MetaRefresh(res)
	if !ok || delay >= e.metaRefreshMax.Seconds() {
		return false
	}
	req := item.Request
	times := 0
	if raw, ok := req.Extra(fieldRedirectTimes); ok {
		times, _ = strconv.Atoi(string(raw))
	}
	if times >= e.fetchCfg.MaxRedirects {
		extra["redirect_times"] = times
		e.log.Warning("Not following the page's meta refresh: REDIRECT_MAX_TIMES reached; publishing the page", extra)
		return false
	}
	next := req.Clone()
	next.URL, next.RetryTimes = target, 0
	_ = next.SetExtra(fieldRedirectTimes, json.RawMessage(strconv.Itoa(times+1)))
	if e.referer.Enabled() {
		setReferer(next, e.referer.For(res.URL, res.Header, target))
	}
	tally.Dropped(item.Crawl(), ledger.DroppedMetaRefresh)
	fields := logfactory.Extra{"target": target, "delay": delay}
	for k, v := range extra {
		fields[k] = v
	}
	e.log.Info("Followed the page's meta refresh: its target is queued instead of the page", fields)
	e.finish(ctx, item, tally, spider.Output{Requests: []*crawlrequest.Request{next}})
	return true
}
