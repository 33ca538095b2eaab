package render

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/fetch"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/wirejson"
)

// mainDocument is the last response of the page's main frame (after its
// redirects), as the browser saw it.
type mainDocument struct {
	mu       sync.Mutex
	frame    cdp.FrameID
	response *network.Response
}

func (m *mainDocument) get() *network.Response {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.response
}

// renderIn renders req in a tab of b (an idle one, wiped, or a new one),
// within ctx's deadline: wait_for and wait_ms end a reserve before it, so
// that the DOM is read in time. The tab is kept for b's next page when the
// page succeeded, closed when it failed.
func (p *Pool) renderIn(ctx context.Context, b *browserProc, req Request, maxSize int) (*fetch.Result, error) {
	t, err := p.takeTab(ctx, b, req.Session)
	if err != nil {
		return nil, fmt.Errorf("open a page: %w", err)
	}
	res, err := p.renderOn(ctx, t, req, maxSize)
	p.returnTab(b, t, err != nil, req.Session)
	return res, err
}

// renderOn renders req in t, every step within ctx's deadline (the
// caller's end ends the page too).
func (p *Pool) renderOn(ctx context.Context, t *tab, req Request, maxSize int) (*fetch.Result, error) {
	deadline, _ := ctx.Deadline()
	reserve := min(time.Second, time.Until(deadline)/5)
	pctx, stop := context.WithDeadline(t.ctx, deadline)
	defer stop()
	stopCaller := context.AfterFunc(ctx, stop)
	defer stopCaller()
	t.doc.mu.Lock()
	t.doc.response = nil // an earlier page's, in a tab not wiped
	t.doc.mu.Unlock()
	if err := t.userAgent(pctx, req.UserAgent); err != nil {
		return nil, fmt.Errorf("set the user agent: %w", err)
	}
	if err := chromedp.Do(pctx, chromedp.Navigate(req.URL)); err != nil {
		if r := t.doc.get(); r != nil && r.Headers[refusedHeader] != nil {
			return nil, fmt.Errorf("%w: %s", fetch.ErrForbiddenAddress, req.URL)
		}
		return nil, fmt.Errorf("load %s: %w", req.URL, err)
	}
	if r := t.doc.get(); r != nil && r.Headers[refusedHeader] != nil {
		return nil, fmt.Errorf("%w: %s (or a redirect from it)", fetch.ErrForbiddenAddress, req.URL)
	}
	waitCtx, cancelWait := context.WithDeadline(pctx, deadline.Add(-reserve))
	if req.Spec.WaitFor != "" {
		// Not there by the deadline: the page is published as it is.
		waitFor(waitCtx, req.Spec.WaitFor)
	}
	if req.Spec.Wait > 0 {
		_ = chromedp.Do(waitCtx, chromedp.Sleep(req.Spec.Wait))
	}
	cancelWait()
	// The DOM and the location in one round trip (location and its
	// toString cannot be replaced by the page's scripts).
	dom, err := chromedp.Run(pctx, chromedp.EvaluateAsDevTools[[]string](
		`[document.documentElement ? document.documentElement.outerHTML : "", document.location.toString()]`))
	if err != nil || len(dom) != 2 {
		return nil, fmt.Errorf("read the DOM of %s: %w (%d values)", req.URL, err, len(dom))
	}
	html, location := dom[0], dom[1]
	return result(req, t.doc.get(), location, html, maxSize), nil
}

// waitFor waits, within ctx, until the page's document has an element
// matching the CSS selector sel: checked in the page every 50 ms by a
// script (chromedp's WaitReady would need the DOM domain, whose events for
// every page cost the browser and the crawler more than the check), again
// in the next document when the page navigates meanwhile. A selector that
// is not valid CSS never matches.
func waitFor(ctx context.Context, sel string) {
	check := `new Promise(function (resolve) {
  var sel = ` + string(wirejson.AppendString(nil, sel, wirejson.Go)) + `;
  (function check() {
    var found = false;
    try { found = document.querySelector(sel) !== null; } catch (e) {}
    if (found) { resolve(true); } else { setTimeout(check, 50); }
  })();
})`
	for ctx.Err() == nil {
		found, err := chromedp.Run(ctx, chromedp.Evaluate[bool](check, chromedp.EvalAwaitPromise))
		if err == nil && found {
			return
		}
		// The document went (a navigation): look in the next one.
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// result is the crawl result of a rendered page: the DOM as its body (cut
// at maxSize), the main document's status and headers.
func result(req Request, r *network.Response, location, html string, maxSize int) *fetch.Result {
	res := &fetch.Result{URL: location, Status: http.StatusOK, StatusText: "OK", Header: http.Header{}, RequestHeader: http.Header{}}
	if res.URL == "" || res.URL == "about:blank" {
		res.URL = req.URL
	}
	if r != nil {
		res.Status, res.StatusText = int(r.Status), statusText(int(r.Status), r.StatusText)
		for k, v := range r.Headers {
			if s, ok := v.(string); ok {
				for _, line := range splitLines(s) {
					res.Header.Add(k, line)
				}
			}
		}
		for k, v := range r.RequestHeaders {
			if s, ok := v.(string); ok {
				res.RequestHeader.Set(k, s)
			}
		}
	}
	body := []byte(html)
	if maxSize > 0 && len(body) > maxSize {
		body, res.Truncated = body[:maxSize], true
	}
	res.Body = body
	return res
}

// splitLines splits a header value the way CDP joins repeated headers.
func splitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}
