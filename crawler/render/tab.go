package render

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/css"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/emulation"
	cdpfetch "github.com/chromedp/cdproto/fetch"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/storage"
	"github.com/chromedp/chromedp"
)

// A tab is a page of a browser kept open between renders (opening one — a
// browser context, a target, its renderer — costs more than most renders):
// in a browser context of its own, with its listeners and domains set up
// once. One render at a time uses it. It goes from a page to the next page
// of the same session (Request.Session: a crawl) as the page left it; before
// a page of another session, or of none, it is wiped (wipe): back to
// about:blank, the cookies of its browser context and the storage of every
// origin it reached cleared, its history reset, so that no page sees what a
// page of another crawl left. Its HTTP cache is off and service workers
// bypassed, so nothing is served from a previous page. A tab whose render
// failed, or whose wipe did, is closed (its browser context disposed of),
// never reused.
type tab struct {
	ctx    context.Context // the tab's chromedp context
	cancel context.CancelFunc
	ua     string // its user agent override ("": the browser's)
	// session is the Request.Session of its last page, "" once wiped.
	session string
	doc     mainDocument

	mu      sync.Mutex
	origins []string // the origins the current page made requests to
}

// wipeTimeout bounds a tab's wipe; past it the tab is closed instead.
const wipeTimeout = 10 * time.Second

// openTab opens a tab in b, within ctx's deadline (its end closes the tab
// being opened).
func (p *Pool) openTab(ctx context.Context, b *browserProc) (*tab, error) {
	tctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext())
	t := &tab{ctx: tctx, cancel: cancel}
	// The target lives as long as the context of its first Run: tctx, not
	// ctx; ctx's end cancels it while it opens.
	stop := context.AfterFunc(ctx, cancel)
	err := p.setup(t)
	if !stop() || err != nil {
		t.close()
		return nil, errors.Join(err, context.Cause(ctx))
	}
	return t, nil
}

// setup opens t's target and listens to it: the main frame's responses,
// the origins of its requests, and the blocked resource types, failed
// before they are sent; its cache off, service workers bypassed.
func (p *Pool) setup(t *tab) error {
	if err := chromedp.Do(t.ctx); err != nil { // opens the target
		return err
	}
	t.doc.frame = cdp.FrameID(chromedp.FromContext(t.ctx).Target.TargetID)
	err := chromedp.Listen(t.ctx, func(ev any) {
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			t.reached(ev.Request.URL)
		case *network.EventResponseReceived:
			if ev.Type == network.ResourceTypeDocument && ev.FrameID == t.doc.frame {
				t.doc.mu.Lock()
				t.doc.response = ev.Response
				t.doc.mu.Unlock()
			}
		case *cdpfetch.EventRequestPaused:
			p.metrics.blocked.Inc()
			go func() {
				_, _ = chromedp.Call(t.ctx, cdpfetch.FailRequest,
					cdpfetch.FailRequestParams{RequestID: ev.RequestID, ErrorReason: network.ErrorReasonBlockedByClient})
			}()
		}
	})
	if err != nil {
		return err
	}
	// chromedp enables the DOM, CSS and Log domains of every target it
	// attaches: the pool uses none of them (it reads the DOM with a
	// script), and each costs every page events and round trips (the DOM
	// domain a getDocument at each new document).
	for _, disable := range []cdp.Command[cdp.Empty, cdp.Empty]{css.Disable, dom.Disable, cdplog.Disable} {
		if _, err := chromedp.Call(t.ctx, disable, cdp.Empty{}); err != nil {
			return fmt.Errorf("%s: %w", disable.Method, err)
		}
	}
	if _, err := chromedp.Call(t.ctx, network.Enable, network.EnableParams{}); err != nil {
		return err
	}
	if _, err := chromedp.Call(t.ctx, network.SetCacheDisabled, network.SetCacheDisabledParams{CacheDisabled: true}); err != nil {
		return err
	}
	if _, err := chromedp.Call(t.ctx, network.SetBypassServiceWorker, network.SetBypassServiceWorkerParams{Bypass: true}); err != nil {
		return err
	}
	if len(p.cfg.Block) > 0 {
		if _, err := chromedp.Call(t.ctx, cdpfetch.Enable, cdpfetch.EnableParams{Patterns: blockPatterns(p.cfg.Block)}); err != nil {
			return err
		}
	}
	return nil
}

// reached notes the origin of a request of t's page, for its wipe.
func (t *tab) reached(rawURL string) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return
	}
	origin := u.Scheme + "://" + u.Host
	t.mu.Lock()
	if !slices.Contains(t.origins, origin) {
		t.origins = append(t.origins, origin)
	}
	t.mu.Unlock()
}

// userAgent sets the user agent of t's next page, when it changes.
func (t *tab) userAgent(ctx context.Context, ua string) error {
	if ua == t.ua {
		return nil
	}
	if _, err := chromedp.Call(ctx, emulation.SetUserAgentOverride, emulation.SetUserAgentOverrideParams{UserAgent: ua}); err != nil {
		return err
	}
	t.ua = ua
	return nil
}

// wipe readies t for a page of any crawl: the page left for about:blank
// (its scripts end), then the cookies of its browser context, the storage
// (local and session storage, IndexedDB, cache storage, service workers,
// ...) of every origin it reached and its history cleared.
func (t *tab) wipe(parent context.Context) error {
	ctx, cancel := context.WithTimeout(t.ctx, wipeTimeout)
	defer cancel()
	defer context.AfterFunc(parent, cancel)()
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		return fmt.Errorf("leave the page: %w", err)
	}
	t.mu.Lock()
	origins := t.origins
	t.origins = nil
	t.mu.Unlock()
	// The page is gone: the clearing commands go at once, answered together.
	steps := []func() error{
		func() error {
			_, err := chromedp.Call(ctx, network.ClearBrowserCookies, cdp.Empty{})
			return wrapErr("clear the cookies", err)
		},
		func() error {
			_, err := chromedp.Call(ctx, page.ResetNavigationHistory, cdp.Empty{})
			return wrapErr("reset the history", err)
		},
	}
	for _, o := range origins {
		steps = append(steps, func() error {
			_, err := chromedp.Call(ctx, storage.ClearDataForOrigin, storage.ClearDataForOriginParams{Origin: o, StorageTypes: "all"})
			return wrapErr("clear the storage of "+o, err)
		})
	}
	errs := make([]error, len(steps))
	var wg sync.WaitGroup
	for i, step := range steps {
		wg.Go(func() { errs[i] = step() })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	t.doc.mu.Lock()
	t.doc.response = nil
	t.doc.mu.Unlock()
	t.session = ""
	return nil
}

// wrapErr is err said with what failed, nil for nil.
func wrapErr(what string, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// close closes t's target and disposes of its browser context, bounded.
func (t *tab) close() {
	t.cancel()
}

// takeTab is a tab of b for a page of session (Request.Session), within
// ctx's deadline: an idle tab whose last page was of the same session, as
// that page left it; else an idle tab wiped (a wiped one first, else one
// of another session, wiped now); else a new one.
func (p *Pool) takeTab(ctx context.Context, b *browserProc, session string) (*tab, error) {
	for {
		t := p.idleTab(b, session)
		if t == nil {
			break
		}
		if t.session == "" || t.session == session {
			return t, nil
		}
		if err := t.wipe(ctx); err == nil {
			return t, nil
		}
		t.close()
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
	}
	p.metrics.tabs.Inc()
	return p.openTab(ctx, b)
}

// idleTab takes b's idle tab best for session: one of session, else a
// wiped one, else any; nil when b has none.
func (p *Pool) idleTab(b *browserProc, session string) *tab {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(b.idle) == 0 {
		return nil
	}
	best := len(b.idle) - 1
	for i, t := range b.idle {
		if session != "" && t.session == session {
			best = i
			break
		}
		if t.session == "" {
			best = i
		}
	}
	t := b.idle[best]
	b.idle = slices.Delete(b.idle, best, best+1)
	return t
}

// returnTab keeps t for b's next page: as its page left it when the page
// had a session (the next page of that session may have it as it is; any
// other is wiped first), else wiped now. It closes t instead when the page
// failed, the wipe did or b takes no more pages.
func (p *Pool) returnTab(b *browserProc, t *tab, failed bool, session string) {
	t.session = session
	if !failed && (session != "" || t.wipe(context.Background()) == nil) {
		p.mu.Lock()
		keep := !b.retired && !b.broken && p.all[b]
		if keep {
			b.idle = append(b.idle, t)
		}
		p.mu.Unlock()
		if keep {
			return
		}
	}
	t.close()
}
