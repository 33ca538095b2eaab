package fetch

import (
	"bytes"
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
	// Method is the HTTP method ("": GET). A redirect by 301, 302 or 303
	// continues as a GET without the body (HEAD stays HEAD), as browsers
	// do; 307 and 308 repeat the method and body.
	Method string
	// Body is sent with the request (nil: none).
	Body []byte
	// Header replaces the fetcher's headers of the same names, User-Agent
	// and Cookie included (they win over UserAgent and Cookie). Cookie and
	// Authorization go to URL's host only, the others to every hop.
	Header http.Header
	// Jar, when set, gives each hop the cookies it holds for the hop's URL
	// (after any Cookie) and takes the cookies each response sets.
	Jar http.CookieJar
	// Referer is the Referer header to send ("": none), on every hop
	// except one from an https Referer to an http URL.
	Referer string
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
	dialer    *net.Dialer     // for everything but proxies: guarded
	transport *http.Transport // through a proxy, and a browser's requests
	h1        *h1Client       // every other request
	header    http.Header     // the headers every request starts with
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
		h1:        newH1Client(dialer, cfg),
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
	f.h1.close()
}

// Fetch downloads req.URL. Every response is a Result; an error means no
// response was had (see IsRetryable). Errors wrap the causes listed in
// errors.go, and ctx's error when ctx ended first.
func (f *Fetcher) Fetch(ctx context.Context, req Request) (*Result, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, f.cfg.Timeout, ErrTimeout)
	defer cancel()
	req.UserAgent = cmp.Or(req.Header.Get("User-Agent"), req.UserAgent, f.cfg.UserAgent)
	res, err := f.fetch(ctx, req, f.cfg.ObeyRobots, f.cfg.MaxSize)
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
// robots.txt (when robots is set) checked per hop, req.UserAgent the
// User-Agent to send, req.Referer to every hop but an http one from an
// https referer, req.Validators on the first hop only.
func (f *Fetcher) fetch(ctx context.Context, req Request, robots bool, maxSize int64) (*Result, error) {
	u, err := parseTarget(req.URL)
	if err != nil {
		return nil, err
	}
	origin := u.Hostname()
	method, body := cmp.Or(req.Method, http.MethodGet), req.Body
	var visited map[string]bool // the URLs of the hops, made at the first redirect
	for redirects := 0; ; redirects++ {
		// Before robots.txt and before any proxy is asked: nothing is sent
		// for a host that is an internal address.
		if err := f.guard.checkHost(u.Hostname()); err != nil {
			return nil, err
		}
		if robots {
			if err := f.robots.check(ctx, u, req.UserAgent); err != nil {
				return nil, err
			}
		}
		header := f.hopHeader(u, strings.EqualFold(u.Hostname(), origin), &req)
		if redirects == 0 {
			for k, v := range req.Validators {
				header[k] = v
			}
		}
		h := &hop{}
		hreq := (&http.Request{Method: method, URL: u, Header: header, Host: u.Host}).WithContext(withHop(ctx, h))
		setBody(hreq, body)
		if h.proxy, err = f.proxy(hreq); err != nil {
			return nil, fmt.Errorf("choose a proxy for %s: %w", u, err)
		}
		// Our HTTP/1.1 client (h1.go), or net/http's transport through a
		// proxy; not an http.Client: fetch follows redirects itself
		// (cookies, robots.txt, loops and addresses are checked per hop).
		// Only a request's Jar keeps cookies beyond their response.
		var resp *http.Response
		if h.proxy == nil {
			resp, err = f.h1.roundTrip(hreq)
		} else {
			resp, err = f.transport.RoundTrip(hreq)
		}
		if err != nil {
			return nil, err
		}
		if req.Jar != nil {
			if set := resp.Cookies(); len(set) > 0 {
				req.Jar.SetCookies(u, set)
			}
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
			if visited == nil {
				visited = map[string]bool{withoutFragment(u): true}
			}
			key := withoutFragment(next)
			if visited[key] {
				return nil, fmt.Errorf("%w: %s leads back to %s", ErrRedirectLoop, u, key)
			}
			visited[key] = true
			u = next
			method, body = redirectMethod(resp.StatusCode, method, body)
			continue
		}
		var content []byte
		var truncated bool
		if method == http.MethodHead { // no body, whatever the length said
			_ = resp.Body.Close()
		} else if content, truncated, err = readBody(resp, maxSize); err != nil {
			return nil, fmt.Errorf("read body: %w", err)
		}
		final := req.URL // u.String() when u is the URL as given, and that is how it prints
		if redirects > 0 || !printsAsItself(final) {
			final = u.String()
		}
		return &Result{
			URL:           final,
			Status:        resp.StatusCode,
			StatusText:    statusText(resp),
			Header:        resp.Header,
			RequestHeader: header,
			Body:          content,
			Truncated:     truncated,
		}, nil
	}
}

// hopHeader is the header of one hop to u: the defaults, the User-Agent,
// the request's Cookie (to its own host only), its Header over them (its
// Cookie and Authorization to its own host only), then the Jar's cookies.
func (f *Fetcher) hopHeader(u *url.URL, ownHost bool, req *Request) http.Header {
	header := f.header.Clone()
	header.Set("User-Agent", req.UserAgent)
	if req.Cookie != "" && ownHost {
		header.Set("Cookie", req.Cookie)
	}
	if req.Referer != "" && (u.Scheme == "https" || !strings.HasPrefix(req.Referer, "https:")) {
		header.Set("Referer", req.Referer)
	}
	for name, values := range req.Header {
		if ownHost || (name != "Cookie" && name != "Authorization") {
			header[name] = values
		}
	}
	if req.Jar != nil {
		if cookies := req.Jar.Cookies(u); len(cookies) > 0 {
			parts := make([]string, 0, len(cookies)+1)
			if c := header.Get("Cookie"); c != "" {
				parts = append(parts, c)
			}
			for _, c := range cookies {
				parts = append(parts, c.Name+"="+c.Value)
			}
			header.Set("Cookie", strings.Join(parts, "; "))
		}
	}
	return header
}

// setBody gives r body to send (and to send again, should the transport
// retry on a fresh connection).
func setBody(r *http.Request, body []byte) {
	if len(body) == 0 {
		return
	}
	r.ContentLength = int64(len(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	r.Body, _ = r.GetBody()
}

// redirectMethod is the method and body of the request a redirect leads
// to: 307 and 308 repeat them; 301, 302 and 303 continue as a GET without
// a body (a HEAD as a HEAD), as browsers and Go's http.Client do.
func redirectMethod(status int, method string, body []byte) (string, []byte) {
	if status == http.StatusTemporaryRedirect || status == http.StatusPermanentRedirect {
		return method, body
	}
	if method == http.MethodHead {
		return method, nil
	}
	return http.MethodGet, nil
}

func parseTarget(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidURL, err)
	}
	return u, checkTarget(u)
}

// printsAsItself reports whether url.Parse(s).String() is s, for a kind
// of URL it can tell without parsing: http:// or https://, a host of
// lower-case letters, digits, '.' and '-' with an optional port of
// digits, and a path (possibly none) of letters, digits and "/-._~". No
// query, fragment, user, escape or upper-case host.
func printsAsItself(s string) bool {
	rest, ok := strings.CutPrefix(s, "http://")
	if !ok {
		if rest, ok = strings.CutPrefix(s, "https://"); !ok {
			return false
		}
	}
	i := 0
	for i < len(rest) && (rest[i] >= 'a' && rest[i] <= 'z' || rest[i] >= '0' && rest[i] <= '9' || rest[i] == '.' || rest[i] == '-') {
		i++
	}
	if i == 0 {
		return false
	}
	if i < len(rest) && rest[i] == ':' {
		j := i + 1
		for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
			j++
		}
		if j == i+1 {
			return false
		}
		i = j
	}
	if i < len(rest) && rest[i] != '/' {
		return false
	}
	for ; i < len(rest); i++ {
		c := rest[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '/' || c == '-' || c == '.' || c == '_' || c == '~') {
			return false
		}
	}
	return true
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
