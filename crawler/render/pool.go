package render

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	cdpfetch "github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/fetch"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
)

// Request is one page to render.
type Request struct {
	// URL is the page.
	URL string
	// UserAgent is sent for the page and everything it loads ("": the
	// browser's own).
	UserAgent string
	// Spec is how to render it (its request's render field).
	Spec crawlrequest.RenderSpec
	// Session is the crawl the page belongs to: a tab whose last page was
	// of the same session renders it as that page left the tab (its
	// cookies, storage, history), with no wipe between; a page of another
	// session, or with none (""), gets a wiped tab.
	Session string
}

// Pool renders pages in headless Chromium: up to Config.Concurrency at
// once, each in a tab of its own browser context (an incognito profile),
// wiped between pages of two crawls (tab), in a browser replaced after Config.Recycle
// pages or as soon as it crashes or stops answering. Browsers start when first needed.
// It is safe for concurrent use.
type Pool struct {
	cfg     Config
	proxy   *guardProxy
	slots   chan struct{}
	metrics *Metrics

	mu       sync.Mutex
	current  *browserProc
	all      map[*browserProc]bool // running, current or draining
	closed   bool
	started  bool           // a browser was started before
	startErr error          // the last browser start's, nil once one started
	closing  sync.WaitGroup // browsers being closed
}

// browserProc is one Chromium process and the pages it renders.
type browserProc struct {
	ctx         context.Context // the browser's chromedp context
	cancel      context.CancelFunc
	allocCancel context.CancelFunc
	pid         int
	started     int  // pages started in it
	active      int  // pages rendering in it now
	retired     bool // takes no more pages: closed when the last ends
	broken      bool
	idle        []*tab // tabs kept for its next pages (p.mu)
}

// New starts a pool's guard proxy; its browsers start when needed. Every
// request the browsers make goes through d (the crawler's fetcher: its
// guard and proxy settings). labels are the metrics' (the spider).
func New(cfg Config, d Dialer, labels prometheus.Labels) (*Pool, error) {
	p := &Pool{cfg: cfg, slots: make(chan struct{}, cfg.Concurrency), all: map[*browserProc]bool{}, metrics: newMetrics(labels)}
	proxy, err := startGuardProxy(d, p.metrics.refuse)
	if err != nil {
		return nil, fmt.Errorf("start the rendering proxy: %w", err)
	}
	p.proxy = proxy
	return p, nil
}

// Metrics are the pool's metrics.
func (p *Pool) Metrics() *Metrics { return p.metrics }

// State is what /readyz says of the pool.
type State struct {
	Browsers, PagesInUse, Concurrency int
	Closed                            bool
}

// State reports the browsers running and the pages rendering.
func (p *Pool) State() State {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := State{Browsers: len(p.all), Concurrency: p.cfg.Concurrency, Closed: p.closed}
	for b := range p.all {
		s.PagesInUse += b.active
	}
	return s
}

// Close kills every browser (its whole process group) and removes their
// profiles; renders in flight fail. The pool renders nothing after it.
func (p *Pool) Close() {
	p.mu.Lock()
	p.closed = true
	for b := range p.all {
		p.closeLocked(b)
	}
	p.current = nil
	p.mu.Unlock()
	p.closing.Wait()
	p.proxy.close()
}

// ErrClosed is Render's error after Close.
var ErrClosed = errors.New("render: the browser pool is closed")

// ErrPageFailed wraps the errors of a render that may succeed when tried
// again: the page could not be loaded (a connection refused, reset, ...),
// the browser crashed or stopped answering, the timeout passed. A page the
// guard refuses is fetch.ErrForbiddenAddress instead.
var ErrPageFailed = errors.New("render failed")

// IsRetryable reports whether a render failed in a way worth retrying.
func IsRetryable(err error) bool { return errors.Is(err, ErrPageFailed) }

// ResultField is the crawl result's field that says a page was rendered
// (true; ordinary results have none).
const ResultField = "rendered"

// Probe is the pool's readiness: an error when it is closed or its last
// browser did not start.
func (p *Pool) Probe(context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.closed:
		return ErrClosed
	case p.startErr != nil:
		return p.startErr
	}
	return nil
}

// Render loads req.URL in a tab (wiped unless its last page was of
// req.Session) and returns the rendered
// DOM as the body, with the main document's final URL, status and headers.
// req.Spec.Timeout bounds everything (waiting for a browser included):
// past it the render fails with fetch.ErrTimeout, except that a wait_for
// selector that never appears ends its wait a little before the deadline
// and the page is published as it is then. A page refused by the guard
// fails with fetch.ErrForbiddenAddress; one that cannot be loaded with the
// browser's error. The body is cut at maxSize bytes (DOWNLOAD_MAXSIZE).
func (p *Pool) Render(ctx context.Context, req Request, maxSize int) (*fetch.Result, error) {
	timeout := req.Spec.Timeout
	if timeout <= 0 {
		timeout = crawlrequest.DefaultRenderTimeout
	}
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, fetch.ErrTimeout)
	defer cancel()
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, explain(ctx, ctx.Err(), timeout)
	}
	defer func() { <-p.slots }()
	b, err := p.acquire()
	if err != nil {
		return nil, fmt.Errorf("render: %w", err)
	}
	start := time.Now()
	p.metrics.inUse.Inc()
	res, err := p.renderIn(ctx, b, req, maxSize)
	p.metrics.inUse.Dec()
	p.metrics.duration.Observe(time.Since(start).Seconds())
	p.release(b, err != nil && !errors.Is(err, fetch.ErrForbiddenAddress))
	if err != nil {
		return nil, explain(ctx, err, timeout)
	}
	p.metrics.rendered.Inc()
	return res, nil
}

// explain turns an error that came from the render's deadline into
// fetch.ErrTimeout, and marks the errors worth a retry (ErrPageFailed).
func explain(ctx context.Context, err error, timeout time.Duration) error {
	switch {
	case errors.Is(err, fetch.ErrForbiddenAddress):
		return fmt.Errorf("render: %w", err)
	case ctx.Err() != nil && errors.Is(context.Cause(ctx), fetch.ErrTimeout):
		return fmt.Errorf("render: %w: %w after %v (%w)", ErrPageFailed, fetch.ErrTimeout, timeout, err)
	}
	return fmt.Errorf("render: %w: %w", ErrPageFailed, err)
}

// acquire is the browser for the next page: the current one, or a new one
// when there is none, it is broken or it has had its Recycle pages.
func (p *Pool) acquire() (*browserProc, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrClosed
	}
	replacing := p.current != nil || p.started
	if b := p.current; b != nil && (b.broken || b.started >= p.cfg.Recycle || b.ctx.Err() != nil) {
		b.retired = true
		if b.active == 0 {
			p.closeLocked(b)
		}
		p.current = nil
	}
	if p.current == nil {
		b, err := p.startBrowser()
		p.startErr = err
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrPageFailed, err)
		}
		if replacing {
			p.metrics.restarts.Inc()
		}
		p.current, p.all[b], p.started = b, true, true
	}
	b := p.current
	b.started++
	b.active++
	return b, nil
}

// release ends a page in b; after a failed page b is checked, and killed
// when it no longer answers (a crash or a hang), so that the next page
// gets a new browser.
func (p *Pool) release(b *browserProc, failed bool) {
	if failed && !b.answers() {
		p.mu.Lock()
		b.broken = true
		p.mu.Unlock()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	b.active--
	if b.broken && p.current == b {
		p.current = nil
		b.retired = true
	}
	if b.retired && b.active == 0 {
		p.closeLocked(b)
	}
}

// answers reports whether b's browser answers within a few seconds.
func (b *browserProc) answers() bool {
	if b.ctx.Err() != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	_, err := chromedp.CallBrowser(ctx, browser.GetVersion, cdp.Empty{})
	return err == nil
}

// closeLocked kills b's process group and removes its profile, in the
// background (Close waits for it); p.mu is held.
func (p *Pool) closeLocked(b *browserProc) {
	if !p.all[b] {
		return
	}
	delete(p.all, b)
	b.idle = nil // closed with the browser
	p.closing.Go(func() {
		if b.pid > 0 {
			_ = syscall.Kill(-b.pid, syscall.SIGKILL) // its own group (Setpgid)
		}
		b.cancel()
		b.allocCancel() // waits for the process; kills leftovers using its profile; removes it
	})
}

// startBrowser starts a headless Chromium whose every request goes
// through the guard proxy: in its own process group (killed whole on
// close), killed by the kernel when the crawler dies (Pdeathsig; chromedp
// starts it from a goroutine locked to its OS thread for the browser's
// life, as Pdeathsig fires when the starting thread ends), with a new
// temporary profile that chromedp removes when it ends.
func (p *Pool) startBrowser() (*browserProc, error) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(p.cfg.Browser),
		chromedp.ProxyServer("http://"+p.proxy.addr()),
		// Chromium sends loopback addresses past the proxy unless told.
		chromedp.Flag("proxy-bypass-list", "<-loopback>"),
		chromedp.Flag("disable-dev-shm-usage", true),
		// Not for a headless crawler: the back-forward cache (a page left
		// stays alive), each window's WebUI omnibox popups (two renderers
		// per tab), site isolation (a renderer per site a page reaches,
		// swapped at each navigation; a tab holds one page of a context
		// without cookies at a time), and RenderDocument (a new frame host
		// and renderer frame for every document, same-site ones included:
		// without it a navigation within a site reuses the frame, as
		// Chromium did before; a fifth less processor time per page on the
		// script pages, whose wipe to about:blank and next page are two
		// navigations).
		chromedp.Flag("disable-features", "Translate,OptimizationHints,MediaRouter,DialMediaRouteProvider,BackForwardCache,"+
			"WebUIOmniboxPopup,WebUIOmniboxAimPopup,WebUIOmniboxFullPopup,IsolateOrigins,site-per-process,SpareRendererForSitePerProcess,"+
			"RenderDocument"),
		chromedp.Flag("disable-site-isolation-trials", true),
		chromedp.Flag("js-flags", "--max-old-space-size=256"),
		// The network service in the browser process, not a process of
		// its own (chromedp's default names the feature's old name,
		// NetworkServiceInProcess, which Chromium no longer knows): one
		// process and its messages fewer per request; every request
		// still goes through the guard proxy.
		chromedp.Flag("enable-features", "NetworkService,NetworkServiceInProcess2"),
		// The compositor on each renderer's main thread, not a thread of
		// its own: a quarter less processor time per page on the script
		// pages (no frame hops between threads for pages nobody watches);
		// frames, animation frames and observers work as before.
		chromedp.Flag("disable-threaded-compositing", true),
		// No popups: a popup would belong to no render, and nobody would
		// wipe or close it between crawls. The headless shell refuses
		// every new window with block-new-web-contents; Chromium's
		// headless mode, which does not know that switch, with its popup
		// blocker (chromedp's defaults turn it off), which refuses
		// window.open without a user's gesture, and no page is rendered
		// with one.
		chromedp.Flag("block-new-web-contents", true),
		chromedp.Flag("disable-popup-blocking", false),
		chromedp.ModifyCmdFunc(func(cmd *exec.Cmd) {
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		}),
	)
	if p.cfg.NoSandbox || os.Geteuid() == 0 { // Chromium refuses its sandbox as root
		opts = append(opts, chromedp.NoSandbox)
	}
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, bcancel := chromedp.NewContext(actx)
	// The first Run on bctx itself starts the browser (one on a derived
	// context would tie the browser to it); a timer bounds the start.
	stuck := time.AfterFunc(60*time.Second, bcancel)
	err := chromedp.Do(bctx)
	stuck.Stop()
	if err != nil {
		bcancel()
		acancel()
		return nil, fmt.Errorf("start the browser %s (setting %s): %w", p.cfg.Browser, Browser.Name(), err)
	}
	b := &browserProc{ctx: bctx, cancel: bcancel, allocCancel: acancel}
	if c := chromedp.FromContext(bctx); c != nil && c.Browser != nil && c.Browser.Process() != nil {
		b.pid = c.Browser.Process().Pid
	}
	return b, nil
}

// blockPatterns are the Fetch domain's request patterns that stop the
// blocked resource types before they are sent.
func blockPatterns(types []string) []*cdpfetch.RequestPattern {
	var ps []*cdpfetch.RequestPattern
	for _, t := range types {
		rt := map[string]network.ResourceType{"image": network.ResourceTypeImage, "media": network.ResourceTypeMedia,
			"font": network.ResourceTypeFont, "stylesheet": network.ResourceTypeStylesheet}[t]
		ps = append(ps, &cdpfetch.RequestPattern{URLPattern: "*", ResourceType: rt, RequestStage: cdpfetch.RequestStageRequest})
	}
	return ps
}

// statusText is the standard text of a status, else the server's.
func statusText(code int, server string) string {
	if t := http.StatusText(code); t != "" {
		return t
	}
	return server
}
