package engine

import (
	"context"
	"html"
	"net/http"
	"strings"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/fetch"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/scheduler"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/recrawl"
)

// fresh is what the engine knows of a request of a scheduled crawl
// (scutils/recrawl): its schedule and run and, from run 2 on, what is
// remembered of its page. A nil *fresh is a request of a crawl without a
// schedule: crawled as ever.
type fresh struct {
	spec  recrawl.Spec
	run   int
	page  *recrawl.Page // nil: nothing remembered (or run 1)
	links []string      // the page's remembered links ("url\ttext")
	// needLinks: the page is below the crawl's maxdepth, so its links are
	// followed; a 304 can stand for it only when its links are remembered.
	needLinks, haveLinks bool
	changed              bool
}

// freshOf reads what is remembered of req's page: nothing for run 1 and
// for a crawl without a schedule (every run 1 fetches in full).
func (e *Engine) freshOf(ctx context.Context, req *crawlrequest.Request) *fresh {
	spec, run, ok := recrawl.Of(req)
	if !ok {
		return nil
	}
	f := &fresh{spec: spec, run: run, needLinks: req.CurDepth < req.MaxDepth, changed: true}
	if run < 2 {
		return f
	}
	page, err := e.memory.Get(ctx, e.spider.Name(), req.URL)
	if err == nil && page != nil && f.needLinks {
		f.links, f.haveLinks, err = e.memory.Links(ctx, e.spider.Name(), req.URL)
	}
	if err != nil {
		e.log.Warning("Could not read the remembered page; fetching it in full", logfactory.Extra{"url": req.URL, "error": err.Error()})
		return f
	}
	f.page = page
	return f
}

// validators are the conditional headers to send: none for run 1, for a
// page not remembered, or for a page whose links are needed but not kept.
func (f *fresh) validators() http.Header {
	if f == nil || f.page == nil || (f.needLinks && !f.haveLinks) {
		return nil
	}
	return f.page.Validators()
}

// skip reports whether an adaptive re-run leaves the page alone this run:
// it was unchanged lately and is not due, and its links, if needed, are
// remembered.
func (f *fresh) skip() bool {
	return f != nil && f.spec.Adaptive && !f.page.Due(f.run) && (!f.needLinks || f.haveLinks)
}

// notModified reports whether res is a 304 to the conditional request.
func (f *fresh) notModified(res *fetch.Result) bool {
	return f.validators() != nil && res.Status == http.StatusNotModified
}

// remembered is the spider's output for a page known unchanged without its
// body: the spider parses a page made of the remembered links (so its
// filters and follow-ups are as for the full page), and the result is
// resp's own (its status, headers, an empty body) with those links.
func (e *Engine) remembered(ctx context.Context, resp *spider.Response, f *fresh, extra logfactory.Extra) spider.Output {
	var b strings.Builder
	b.WriteString("<html><body>\n")
	for _, l := range f.links {
		u, text, _ := strings.Cut(l, "\t")
		b.WriteString(`<a href="` + html.EscapeString(u) + `">` + html.EscapeString(text) + "</a>\n")
	}
	b.WriteString("</body></html>\n")
	made := *resp
	made.Status, made.StatusText, made.Body = http.StatusOK, "OK", []byte(b.String())
	made.Header = http.Header{"Content-Type": {"text/html; charset=utf-8"}}
	out := e.parse(ctx, &made, extra)
	page := spider.NewPage(resp)
	if len(out.Pages) > 0 {
		page.Links = out.Pages[0].Links
		out.Pages[0] = page
	} else {
		out.Pages = []*spider.Page{page}
	}
	return out
}

// observe notes whether the page changed (a 304 or the same body: not;
// run 1 and every other answer: yes), remembers the 200's validators,
// body fingerprint and links for the next runs (one round trip; a failure
// only costs the next run a full fetch), and marks the results with run
// and changed.
func (e *Engine) observe(ctx context.Context, req *crawlrequest.Request, f *fresh, res *fetch.Result, out spider.Output) {
	if f == nil {
		return
	}
	next := &recrawl.Page{}
	switch {
	case f.notModified(res):
		f.changed = false
		*next = *f.page
	case res.Status == http.StatusOK:
		next.Body = recrawl.BodyPrint(res.Body)
		next.ETag = res.Header.Get("ETag")
		next.LastModified, _ = http.ParseTime(res.Header.Get("Last-Modified"))
		f.changed = f.page == nil || f.page.Body != next.Body
	default:
		next = nil // nothing to remember of a 404, a 500, ...
	}
	if next != nil {
		f.adapt(next, e.adaptiveMax)
		var links []string
		if f.needLinks && len(out.Pages) > 0 && res.Status == http.StatusOK {
			links = make([]string, 0, len(out.Pages[0].Links))
			for _, l := range out.Pages[0].Links {
				links = append(links, l.URL+"\t"+strings.NewReplacer("\t", " ", "\n", " ").Replace(l.Text))
			}
		}
		if err := e.memory.Put(ctx, e.spider.Name(), req.URL, next, links); err != nil {
			e.log.Warning("Could not remember the page for the next run", logfactory.Extra{"url": req.URL, "error": err.Error()})
		}
	}
	for _, p := range out.Pages {
		if p.Extra == nil {
			p.Extra = map[string]any{}
		}
		p.Extra[recrawl.FieldRun] = f.run
		p.Extra[fieldChanged] = f.changed
	}
}

// fieldChanged is the results' field saying whether the page changed
// since the crawl's last run.
const fieldChanged = "changed"

// adapt sets when to check the page next (recrawl.Page.Schedule).
func (f *fresh) adapt(p *recrawl.Page, most int) {
	p.Schedule(f.page, f.run, f.changed, f.spec.Adaptive, most)
}

// withhold reports whether the page's results stay unpublished: emit
// "changed" and the page did not change in a run after the first.
func (f *fresh) withhold() bool {
	return f != nil && f.run >= 2 && !f.changed && f.spec.Emit == recrawl.EmitChanged
}

// skipFresh ends a request an adaptive re-run leaves alone: not fetched,
// not published, counted skipped_fresh, its remembered links followed.
func (e *Engine) skipFresh(ctx context.Context, item *scheduler.Item, f *fresh, tally *ledger.Tally, extra logfactory.Extra) {
	req := item.Request
	var out spider.Output
	if f.needLinks {
		resp := &spider.Response{Request: req, URL: req.URL, Status: http.StatusNotModified, StatusText: "Not Modified", Header: http.Header{}}
		out = e.remembered(ctx, resp, f, extra)
		out.Pages = nil
	}
	tally.SkippedFresh(item.Crawl())
	if e.sched.Fetched(ctx, item) != nil {
		return
	}
	e.log.Debug("Page fresh enough for this run; not fetched", extra)
	e.finish(ctx, item, tally, out)
}

// noteUnchanged counts an unchanged page and, when its results are
// withheld, ends its request with its follow-ups queued; it reports
// whether it did.
func (e *Engine) noteUnchanged(ctx context.Context, item *scheduler.Item, f *fresh, tally *ledger.Tally, out spider.Output) bool {
	if f == nil || f.run < 2 || f.changed {
		return false
	}
	tally.Unchanged(item.Crawl())
	if !f.withhold() {
		return false
	}
	tally.Withheld(item.Crawl())
	e.finish(ctx, item, tally, out)
	return true
}
