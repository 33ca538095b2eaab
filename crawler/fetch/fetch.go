package fetch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http/httpproxy"
)

// Request is what to fetch.
type Request struct {
	// URL is the absolute http or https URL.
	URL string
	// UserAgent replaces Config.UserAgent for this request ("": the default).
	UserAgent string
	// Cookie is the Cookie header to send ("": none), to URL's host only.
	Cookie string
	// Validators are conditional request headers (If-None-Match,
	// If-Modified-Since) for URL itself: sent on the first hop only, as
	// they name URL's last response (a re-crawl's; nil: none).
	Validators http.Header
}

// Result is a response, whatever its status.
type Result struct {
	// URL is the final URL, after redirects.
	URL string
	// Status is the HTTP status code; StatusText its text ("Not Found").
	Status     int
	StatusText string
	// Header is the response's header (without the Content-Encoding that
	// was decoded).
	Header http.Header
	// RequestHeader is exactly what was sent with the final request.
	RequestHeader http.Header
	// Body is the body, decompressed, at most Config.MaxSize bytes.
	Body []byte
	// Truncated reports that Body was cut at Config.MaxSize.
	Truncated bool
}

// Fetcher downloads pages. It is safe for concurrent use.
type Fetcher struct {
	cfg       Config
	guard     *guard
	proxy     func(*http.Request) (*url.URL, error)
	dialer    *net.Dialer // for everything but proxies: guarded
	transport *http.Transport
	header    http.Header // the headers every request starts with
	robots    *robotsCache
	stop      context.CancelFunc
}

// New returns a Fetcher for cfg; zero fields take their defaults (see Config).
func New(cfg Config) *Fetcher {
	cfg = cfg.withDefaults()
	proxy := cfg.Proxy
	if proxy == nil {
		fromEnv := httpproxy.FromEnvironment().ProxyFunc()
		proxy = func(r *http.Request) (*url.URL, error) { return fromEnv(r.URL) }
	}
	g := newGuard(cfg)
	// The Fetch's deadline bounds connecting. The proxy, chosen by the
	// operator, may be anywhere; every other connection is guarded.
	toProxy := &net.Dialer{KeepAlive: 30 * time.Second}
	dialer := &net.Dialer{KeepAlive: 30 * time.Second}
	if !g.off {
		dialer.Control = g.control
	}
	transport := &http.Transport{
		// fetch decides on the proxy (and checks what it can before a proxy
		// is asked); the transport only reads the decision.
		Proxy: func(r *http.Request) (*url.URL, error) {
			if h := hopOf(r.Context()); h != nil {
				return h.proxy, nil
			}
			return nil, nil
		},
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if h := hopOf(ctx); h != nil && h.proxy != nil && addr == proxyAddr(h.proxy) {
				return toProxy.DialContext(ctx, network, addr)
			}
			return dialer.DialContext(ctx, network, addr)
		},
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           max(cfg.MaxConns, cfg.MaxConnsPerHost),
		MaxIdleConnsPerHost:    cfg.MaxConnsPerHost,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    cfg.Timeout,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: 1 << 20,
		DisableCompression:     true, // we ask for gzip,deflate and decode within the size limit
	}
	header := make(http.Header, len(cfg.DefaultHeaders)+2)
	for name, value := range cfg.DefaultHeaders {
		if value != "" {
			header.Set(name, value)
		}
	}
	header.Set("Accept-Encoding", "gzip,deflate")
	base, stop := context.WithCancel(context.Background())
	f := &Fetcher{
		cfg:       cfg,
		guard:     g,
		proxy:     proxy,
		dialer:    dialer,
		transport: transport,
		header:    header,
		stop:      stop,
	}
	f.robots = newRobotsCache(f, base)
	return f
}

// Config returns the configuration in use, defaults filled in.
func (f *Fetcher) Config() Config { return f.cfg }

// Close cancels robots.txt loads in flight and closes idle connections.
// Fetches in flight are not interrupted; cancel their contexts for that.
func (f *Fetcher) Close() {
	f.stop()
	f.transport.CloseIdleConnections()
}

// Fetch downloads req.URL. Every response is a Result; an error means no
// response was had (see IsRetryable). Errors wrap the causes listed in
// errors.go, and ctx's error when ctx ended first.
func (f *Fetcher) Fetch(ctx context.Context, req Request) (*Result, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, f.cfg.Timeout, ErrTimeout)
	defer cancel()
	res, err := f.fetch(ctx, req.URL, cmp.Or(req.UserAgent, f.cfg.UserAgent), req.Cookie, req.Validators, f.cfg.ObeyRobots, f.cfg.MaxSize)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", req.URL, f.explain(ctx, err))
	}
	return res, nil
}

// explain turns an error that came from ctx ending into ErrTimeout (our
// deadline) or ctx's error (the caller's).
func (f *Fetcher) explain(ctx context.Context, err error) error {
	if ctx.Err() == nil || permanent(err) {
		return err
	}
	if cause := context.Cause(ctx); errors.Is(cause, ErrTimeout) {
		return fmt.Errorf("%w after %v", ErrTimeout, f.cfg.Timeout)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%w (%w)", ctx.Err(), err)
}

// fetch runs the redirect loop: one request per hop, the host and
// robots.txt (when robots is set) checked per hop, cookie only to the first
// hop's host, validators on the first hop only.
func (f *Fetcher) fetch(ctx context.Context, rawURL, userAgent, cookie string, validators http.Header, robots bool, maxSize int64) (*Result, error) {
	u, err := parseTarget(rawURL)
	if err != nil {
		return nil, err
	}
	origin := u.Hostname()
	visited := map[string]bool{withoutFragment(u): true}
	for redirects := 0; ; redirects++ {
		// Before robots.txt and before any proxy is asked: nothing is sent
		// for a host that is an internal address.
		if err := f.guard.checkHost(u.Hostname()); err != nil {
			return nil, err
		}
		if robots {
			if err := f.robots.check(ctx, u, userAgent); err != nil {
				return nil, err
			}
		}
		header := f.header.Clone()
		header.Set("User-Agent", userAgent)
		if cookie != "" && strings.EqualFold(u.Hostname(), origin) {
			header.Set("Cookie", cookie)
		}
		if redirects == 0 {
			for k, v := range validators {
				header[k] = v
			}
		}
		h := &hop{}
		req := (&http.Request{Method: http.MethodGet, URL: u, Header: header, Host: u.Host}).WithContext(withHop(ctx, h))
		if h.proxy, err = f.proxy(req); err != nil {
			return nil, fmt.Errorf("choose a proxy for %s: %w", u, err)
		}
		// The transport, not an http.Client: fetch follows redirects itself
		// (cookies, robots.txt, loops and addresses are checked per hop),
		// and there is no cookie jar, so no cookie outlives its request.
		resp, err := f.transport.RoundTrip(req)
		if err != nil {
			return nil, err
		}
		if loc := resp.Header.Get("Location"); loc != "" && isRedirect(resp.StatusCode) && !f.cfg.DisableRedirects {
			drain(resp.Body)
			next, err := u.Parse(loc)
			if err != nil {
				return nil, fmt.Errorf("redirect to %q: %w", loc, ErrInvalidURL)
			}
			if err := checkTarget(next); err != nil {
				return nil, fmt.Errorf("redirect to %q: %w", loc, err)
			}
			if redirects == f.cfg.MaxRedirects {
				return nil, fmt.Errorf("%w: more than %d", ErrTooManyRedirects, f.cfg.MaxRedirects)
			}
			key := withoutFragment(next)
			if visited[key] {
				return nil, fmt.Errorf("%w: %s leads back to %s", ErrRedirectLoop, u, key)
			}
			visited[key] = true
			u = next
			continue
		}
		body, truncated, err := readBody(resp, maxSize)
		if err != nil {
			return nil, fmt.Errorf("read body: %w", err)
		}
		return &Result{
			URL:           u.String(),
			Status:        resp.StatusCode,
			StatusText:    statusText(resp),
			Header:        resp.Header,
			RequestHeader: header,
			Body:          body,
			Truncated:     truncated,
		}, nil
	}
}

func parseTarget(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidURL, err)
	}
	return u, checkTarget(u)
}

func checkTarget(u *url.URL) error {
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
	case "":
		return fmt.Errorf("%w: %q is not absolute", ErrInvalidURL, u.String())
	default:
		return fmt.Errorf("%w %q", ErrUnsupportedScheme, u.Scheme)
	}
	if u.Hostname() == "" {
		return fmt.Errorf("%w: %q has no host", ErrInvalidURL, u.String())
	}
	return nil
}

func withoutFragment(u *url.URL) string {
	c := *u
	c.Fragment, c.RawFragment = "", ""
	return c.String()
}

func isRedirect(code int) bool {
	switch code {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// drain reads a little of a body we do not want, so its connection can be
// reused, and closes it.
func drain(body io.ReadCloser) {
	_, _ = io.CopyN(io.Discard, body, 64<<10)
	_ = body.Close()
}

// statusText is the standard text of the status, else the server's reason phrase.
func statusText(resp *http.Response) string {
	if t := http.StatusText(resp.StatusCode); t != "" {
		return t
	}
	return strings.TrimSpace(strings.TrimPrefix(resp.Status, strconv.Itoa(resp.StatusCode)))
}
