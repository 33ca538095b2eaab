package fetch

import (
	"bytes"
	"cmp"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
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
	dialer := &net.Dialer{KeepAlive: 30 * time.Second} // the Fetch's deadline bounds connecting
	transport := &http.Transport{
		Proxy:                  proxy,
		DialContext:            dialer.DialContext,
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
	res, err := f.fetch(ctx, req.URL, cmp.Or(req.UserAgent, f.cfg.UserAgent), req.Cookie, f.cfg.ObeyRobots, f.cfg.MaxSize)
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

// fetch runs the redirect loop: one request per hop, robots.txt checked per
// hop when robots is set, cookie only to the first hop's host.
func (f *Fetcher) fetch(ctx context.Context, rawURL, userAgent, cookie string, robots bool, maxSize int64) (*Result, error) {
	u, err := parseTarget(rawURL)
	if err != nil {
		return nil, err
	}
	origin := u.Hostname()
	visited := map[string]bool{withoutFragment(u): true}
	for redirects := 0; ; redirects++ {
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
		req := (&http.Request{Method: http.MethodGet, URL: u, Header: header, Host: u.Host}).WithContext(ctx)
		// The transport, not an http.Client: fetch follows redirects itself
		// (cookies, robots.txt and loops are checked per hop), and there is
		// no cookie jar, so no cookie outlives its request.
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

// readBody reads at most maxSize bytes of the body (after decoding gzip or
// deflate) and closes it.
func readBody(resp *http.Response, maxSize int64) ([]byte, bool, error) {
	defer resp.Body.Close()
	raw, truncated, err := readLimited(resp.Body, resp.ContentLength, maxSize)
	if err != nil { // a response cut short is not a page: retry it
		return nil, false, err
	}
	encoding := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding")))
	var zr io.Reader
	switch encoding {
	case "gzip", "x-gzip":
		gz, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return raw, truncated, nil // not gzip after all: keep it as it came
		}
		zr = gz
	case "deflate":
		// RFC 9110 deflate is zlib-wrapped; some servers send it raw.
		if z, err := zlib.NewReader(bytes.NewReader(raw)); err == nil {
			zr = z
		} else {
			zr = flate.NewReader(bytes.NewReader(raw))
		}
	default:
		return raw, truncated, nil
	}
	decoded, cut, err := readLimited(zr, -1, maxSize)
	switch {
	case err == nil:
	case truncated && errors.Is(err, io.ErrUnexpectedEOF):
		// The compressed body was cut at maxSize: keep what it held.
	default:
		return raw, truncated, nil // corrupt: keep it as it came
	}
	resp.Header.Del("Content-Encoding")
	return decoded, truncated || cut, nil
}

// readLimited reads r up to its end or limit+1 bytes, whichever comes
// first, and returns at most limit bytes and whether there were more (on an
// error, what was read before it); size is the expected length (-1:
// unknown), a hint for the buffer.
func readLimited(r io.Reader, size, limit int64) ([]byte, bool, error) {
	hint := int64(512)
	if size >= 0 {
		hint = min(size, limit) + 1 // +1: the read that finds EOF needs no growth
	}
	b := make([]byte, 0, min(hint, 1<<20))
	lr := io.LimitReader(r, limit+1)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := lr.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return b[:min(int64(len(b)), limit)], false, err
		}
	}
	if int64(len(b)) > limit {
		return b[:limit], true, nil
	}
	return b, false, nil
}
