package engine

import (
	"cmp"
	"context"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/fetch"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/render"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/scheduler"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/admin"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
)

// handleRender crawls a render request as handle crawls others, with the
// page loaded in the pool's browser: the same checks before (the guard on
// its host, robots.txt), the same fates after (a timeout or a browser that
// failed is retried, a refused address counted as refused:private_address),
// and the result marked rendered. A crawler without a pool puts the
// request in its render queue, where it belongs, uncounted.
func (e *Engine) handleRender(ctx context.Context, item *scheduler.Item, spec crawlrequest.RenderSpec, specErr error, tally *ledger.Tally, extra logfactory.Extra) {
	req, crawl := item.Request, item.Crawl()
	if e.pool == nil {
		if e.untilDone(ctx, "move a render request to its render queue", func() error { return e.sched.Reroute(ctx, item) }) {
			e.log.Info("A render request was in a domain queue; moved to its render queue", extra)
		}
		return
	}
	if specErr != nil {
		e.counters.Dropped.Add(1)
		tally.Dropped(crawl, ledger.DroppedUncrawlable)
		e.metrics.drop(ledger.DroppedUncrawlable)
		e.log.Warning("The request's render field cannot be read; dropped", withError(extra, specErr))
		e.done(ctx, item, tally)
		return
	}
	res, err := e.render(ctx, req, spec, crawl)
	if !e.fetched(ctx, item, tally, extra, res, err) {
		return
	}
	resp := &spider.Response{
		Request: req, URL: res.URL, Status: res.Status, StatusText: res.StatusText,
		Header: res.Header, RequestHeader: res.RequestHeader, Body: res.Body, Truncated: res.Truncated,
		MaxLinks: e.maxLinks,
	}
	out := e.parse(ctx, resp, extra)
	e.extracted(req, out.Pages, extra)
	for _, p := range out.Pages {
		if p.Extra == nil {
			p.Extra = map[string]any{}
		}
		p.Extra[render.ResultField] = true
	}
	e.refer(resp, out.Requests)
	e.counters.Pages.Add(1)
	e.publish(ctx, item, out, tally, extra)
}

// render checks req's page as a fetch's first hop is checked (its host,
// robots.txt), then renders it, counted as a fetch. Each page has a clean
// tab, as in a context of its own, unless its crawl asked for a session
// ("session": true): then pages of the crawl may share a tab's state
// (render.Request.Session). Pages of two crawls never do.
func (e *Engine) render(ctx context.Context, req *crawlrequest.Request, spec crawlrequest.RenderSpec, crawl ledger.Crawl) (*fetch.Result, error) {
	start := time.Now()
	ua := cmp.Or(req.UserAgent, e.fetchCfg.UserAgent)
	var tabSession string
	if shape, err := req.Shape(); err == nil && shape.Session {
		tabSession = crawl.Member()
	}
	var res *fetch.Result
	err := e.fetcher.Allowed(ctx, req.URL, ua)
	if err == nil {
		res, err = e.pool.Render(ctx, render.Request{URL: req.URL, UserAgent: ua, Spec: spec, Session: tabSession}, int(e.fetchCfg.MaxSize))
	}
	e.metrics.fetched(start, res, err)
	return res, err
}

// ServeAdmin adds the rendering pool's state to /readyz: not ready when
// its last browser failed to start, or once it is closed.
func (e *Engine) ServeAdmin(a *admin.Server) {
	if e.pool != nil {
		a.AddCheck(admin.Check{Name: "render", Probe: e.pool.Probe})
	}
}
