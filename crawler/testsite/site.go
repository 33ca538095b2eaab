// Package testsite is a deterministic web site served on loopback for the
// crawler's tests, the end-to-end suite (crawlers in separate processes crawl
// a site the test process hosts) and demos (cmd/testsite).
//
// Start one in a test with Start (closed on cleanup), or with New for other
// uses. Linux routes all of 127.0.0.0/8 to loopback, so sites on 127.0.0.1,
// 127.0.0.2, ... are different domains to the crawler (queue
// link:127.0.0.2.:queue): StartAt(tb, "127.0.0.2:0").
//
// # The link graph
//
// "/" links to the tree roots /page/1 .. /page/N (WithPages, default 3). A
// tree page /page/i/j/... at level L (the number of indices) links, in this
// order, to its parent (an absolute URL; "/" for level 1), to its children
// /page/i/j/.../1 .. /F when L < D (root-relative; the first child twice), and
// to itself as "#top" (WithTree(F, D), default fan-out 3 and depth 3). So a
// crawl seeded at "/" with maxdepth M fetches exactly the tree pages of level
// <= min(M, D) and, when M >= 1, what else "/" links to (when M >= 2, also
// the peers' pages):
//
//   - /page/1 again, and "/#top" (duplicates, for the duplicate filter);
//   - /allow/1, /allow/2, /deny/1, /deny/2 (HTML leaves, for allow/deny regexes);
//   - /private/1 (disallowed by the default robots.txt);
//   - files whose extensions Scrapy ignores: /files/report.pdf,
//     /files/photo.jpg, /files/archive.zip, /static/style.css, /files/IMAGE.PNG;
//   - the roots of other sites given to SetPeers (for allowed_domains).
//
// Links returns a page's links and Reachable computes the exact set of URLs a
// crawl requests, given the crawl's link filters; tests should use them rather
// than hard-code the graph.
//
// # Special pages
//
// /special links to an instance of each of these except robots.txt, /bomb,
// /links and /drip (so crawling it is slow: /hang hangs until the crawler's
// timeout):
//
//	/status/<code>       that status (200-599) with a small HTML body linking to "/"
//	/slow/<ms>           answers after ms milliseconds (at most 5 minutes)
//	/hang                never answers, until the client gives up or the site closes
//	/hang-body           sends headers and 9 of 1000 promised bytes, then hangs
//	/truncated-body      promises 1000 bytes, sends 100 and closes (unexpected EOF)
//	/reset               resets the connection without answering
//	/redirect?to=<url>   302 (or &code=301|303|307|308) to a path or absolute URL
//	/redirect-chain/<n>  n redirects (relative Location) ending at /redirect-chain/0
//	/loop/a, /loop/b     redirect to each other forever
//	/robots.txt          WithRobots; default "User-agent: *" / "Disallow: /private/"
//	/private/...         a page robots.txt disallows
//	/malformed           broken HTML that still holds links to /page/1, /page/2, /allow/1
//	/latin1              ISO-8859-1 body, charset in the Content-Type
//	/meta-charset        windows-1252 body, charset only in a <meta> tag
//	/shift-jis           Shift_JIS body, charset only in a <meta charset> tag
//	/binary              invalid UTF-8 served as text/html; charset=utf-8
//	/huge/<bytes>        a streamed body of that size (HugePrefix tells its content;
//	                     ?chunked=1 omits Content-Length)
//	/gzip, /deflate      compressed bodies (Content-Encoding gzip, deflate)
//	/bomb/<enc>/<MiB>    a compression bomb: MiB (1-1024) of zero bytes sent
//	                     compressed (enc gzip or deflate), about 1/800 of that
//	                     on the wire (Bomb)
//	/links/<n>           a page of n (0 to a million) distinct links, each to a
//	                     small page (LinkBombHref)
//	/drip                a body that never ends: one byte every ?every=<ms> (50)
//	/bad-gzip            claims Content-Encoding gzip but is not compressed
//	/set-cookie          sets a cookie (?name=&value=, default session=testsite;
//	                     ?next=<path> redirects there)
//	/echo-headers        the request's method, host, path and headers as JSON
//	/echo/<n>            n 0..EchoPages: an HTML page showing the request's method
//	                     (#method), body (#body) and headers (li.header[data-name]),
//	                     linking to /echo/<n+1>
//	/login               a form POST of user=alice&password=secret sets the auth
//	                     cookie (Path /account), a Secure and an expired cookie, and
//	                     answers 303 to /account/; anything else 401
//	/account/, /account/1..3  403 "Please log in" without the auth cookie; with it
//	                     a product page (h1.name, span.price, JSON-LD) linking to each
//	/logout              clears the auth cookie
//	/meta-refresh?to=<url>&delay=<s>  an HTML page whose <meta http-equiv="refresh">
//	                     names url after delay seconds (default 0); linked from
//	                     nowhere
//
// # Script pages
//
// /js/<n> (n ≥ 0, linked from nowhere) is a page whose HTML holds no link
// and no text: its script writes ScriptText(n) (p#js-text) and links to
// ScriptLinks(n), /js/<2n+1> and /js/<2n+2>, and asks for an image, a video
// and a web font (ScriptImage, ScriptMedia, ScriptFont; their paths answer
// 404, a hit shows they were requested). With ?fetch=<url> the script also
// fetches url and writes the answer (or the failure) into pre#fetched.
// With ?remember=<word> it writes what an earlier page left in its cookies,
// local and session storage into pre#remembered ("cookie=...;local=...;
// session=...", null for nothing), then leaves word in all three (cookie
// "remember") and writes what it reads back into pre#stored. span#done is written last.
//
// # Hit log
//
// Every request except those to /__hits is recorded before it is answered
// (Hits, HitsFor, Reset). GET /__hits serves the log as JSON (?path= filters)
// and DELETE /__hits empties it, for inspection from another process. The log
// keeps the latest WithMaxHits hits (default 100000).
package testsite

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// Site is a running test site. Its methods are safe for concurrent use.
type Site struct {
	opts     options
	ln       net.Listener
	srv      *http.Server
	addr     string
	hits     hitLog
	closing  chan struct{} // closed by Close: hanging and slow handlers return
	handlers sync.WaitGroup
	serveErr chan error

	mu       sync.Mutex
	peers    []string
	isClosed bool
}

type options struct {
	pages, fanout, depth int
	robotsStatus         int
	robotsBody           string
	maxHits              int
	routes               *http.ServeMux // extra handlers, consulted first
	holds                map[string]*Hold
}

// Option configures a site.
type Option func(*options)

// DefaultRobots is the robots.txt a site serves unless WithRobots says otherwise.
const DefaultRobots = "User-agent: *\nDisallow: /private/\n"

// WithPages sets how many tree roots (/page/1 .. /page/n) "/" links to (default 3, at least 1).
func WithPages(n int) Option { return func(o *options) { o.pages = n } }

// WithTree sets the tree's fan-out (children per page, default 3) and depth
// (deepest level, default 3), both at least 1.
func WithTree(fanout, depth int) Option {
	return func(o *options) { o.fanout, o.depth = fanout, depth }
}

// WithRobots sets /robots.txt's status and body (default 200, DefaultRobots).
func WithRobots(status int, body string) Option {
	return func(o *options) { o.robotsStatus, o.robotsBody = status, body }
}

// WithMaxHits sets how many hits the log keeps, the latest ones (default 100000).
func WithMaxHits(n int) Option { return func(o *options) { o.maxHits = n } }

// WithHandler serves h for pattern (http.ServeMux syntax, e.g. "/robots.txt"
// or "GET /custom/"), in front of the built-in pages, which it may replace.
// Requests to it are recorded in the hit log like any other.
func WithHandler(pattern string, h http.Handler) Option {
	return func(o *options) {
		if o.routes == nil {
			o.routes = http.NewServeMux()
		}
		o.routes.Handle(pattern, h)
	}
}

// Start serves a site on 127.0.0.1 (a free port) until the test ends.
func Start(tb testing.TB, opts ...Option) *Site {
	tb.Helper()
	return StartAt(tb, "127.0.0.1:0", opts...)
}

// StartAt serves a site on addr (e.g. "127.0.0.2:0") until the test ends.
func StartAt(tb testing.TB, addr string, opts ...Option) *Site {
	tb.Helper()
	s, err := New(addr, opts...)
	if err != nil {
		tb.Fatalf("start test site: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("close test site: %v", err)
		}
	})
	return s
}

// New serves a site on addr ("host:port"; port 0 picks a free one) until Close.
func New(addr string, opts ...Option) (*Site, error) {
	o := options{pages: 3, fanout: 3, depth: 3, robotsStatus: http.StatusOK, robotsBody: DefaultRobots, maxHits: 100000}
	for _, opt := range opts {
		opt(&o)
	}
	switch {
	case o.pages < 1:
		return nil, fmt.Errorf("test site: pages must be at least 1, got %d", o.pages)
	case o.fanout < 1 || o.depth < 1:
		return nil, fmt.Errorf("test site: fan-out and depth must be at least 1, got %d and %d", o.fanout, o.depth)
	case o.robotsStatus < 100 || o.robotsStatus > 599:
		return nil, fmt.Errorf("test site: robots.txt status %d is not an HTTP status", o.robotsStatus)
	case o.maxHits < 1:
		return nil, fmt.Errorf("test site: max hits must be at least 1, got %d", o.maxHits)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("test site: listen on %s: %w", addr, err)
	}
	s := &Site{
		opts:     o,
		ln:       ln,
		addr:     ln.Addr().String(),
		hits:     hitLog{max: o.maxHits},
		closing:  make(chan struct{}),
		serveErr: make(chan error, 1),
	}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() { s.serveErr <- s.srv.Serve(ln) }()
	return s, nil
}

// Addr is the site's "host:port".
func (s *Site) Addr() string { return s.addr }

// Host is the site's host name (the IP address it listens on).
func (s *Site) Host() string {
	host, _, _ := net.SplitHostPort(s.addr)
	return host
}

// URL returns the absolute URL of path ("/page/1", "/redirect?to=/"); path
// "" is the root.
func (s *Site) URL(path string) string {
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	return "http://" + s.addr + path
}

// SetPeers makes "/" link to the roots of these sites (absolute base URLs
// such as other.URL("/")), replacing earlier peers.
func (s *Site) SetPeers(urls ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.peers = append([]string(nil), urls...)
}

func (s *Site) peerLinks() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.peers...)
}

// Close stops the site: hanging and slow pages return at once, open
// connections are closed, and Close waits for every handler to finish.
func (s *Site) Close() error {
	s.mu.Lock()
	if s.isClosed {
		s.mu.Unlock()
		return nil
	}
	s.isClosed = true
	s.mu.Unlock()
	close(s.closing)
	err := s.srv.Close()
	s.handlers.Wait()
	if serr := <-s.serveErr; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}

// ServeHTTP records the hit, then answers: extra handlers first, then the
// built-in pages.
func (s *Site) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.isClosed {
		s.mu.Unlock()
		http.Error(w, "test site closed", http.StatusServiceUnavailable)
		return
	}
	s.handlers.Add(1)
	s.mu.Unlock()
	defer s.handlers.Done()
	if r.URL.Path == "/__hits" {
		s.serveHits(w, r)
		return
	}
	s.hits.record(r)
	s.hold(r)
	if s.opts.routes != nil {
		if _, pattern := s.opts.routes.Handler(r); pattern != "" {
			s.opts.routes.ServeHTTP(w, r) // the mux sets the request's path values
			return
		}
	}
	s.serve(w, r)
}

// wait blocks for d, or until the client goes away or the site closes; it
// reports whether the whole time passed.
func (s *Site) wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
	case <-s.closing:
	}
	return false
}

// hang blocks until the client goes away or the site closes, then drops
// the connection without finishing the response.
func (s *Site) hang(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-s.closing:
	}
	panic(http.ErrAbortHandler)
}
