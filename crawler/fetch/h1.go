package fetch

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http/httpguts"
)

// The crawler's own HTTP/1.1 client, for every request sent without a
// proxy. It writes the request and reads the response on the calling
// goroutine: net/http's Transport runs a reader and a writer goroutine per
// connection and hands every request and response across channels, which
// cost the crawler about a fifth of its CPU per page. It is built on the
// standard library's parsers (http.ReadResponse reads the status line,
// headers, Content-Length, chunked and HEAD responses, but for a plain
// response with its head in one read, which readHead reads as it would;
// writeRequest writes Request.Write's bytes, through it but for a plain
// GET or HEAD), dials with the guarded dialer (every address checked) and
// speaks HTTP/1.1 only, over TLS for https (ALPN http/1.1). Keep-alive
// connections are reused per scheme and host:port; a connection goes back
// to the pool only when its response was read to its end, neither side
// asked to close it and nothing else arrived on it. Idle connections are
// bounded (MaxConnsPerHost per host, max(MaxConns, MaxConnsPerHost) in all,
// as net/http's pool was) and closed after idleTimeout.

const (
	// idleTimeout is how long an idle connection is kept.
	idleTimeout = 90 * time.Second
	// maxHeaderBytes bounds a response's status line and headers (1xx
	// responses each have as much), as net/http's MaxResponseHeaderBytes did.
	maxHeaderBytes = 1 << 20
	// max1xx is how many informational responses may precede one.
	max1xx = 5
	// connBufferSize is a connection's read and write buffer.
	connBufferSize = 4 << 10
)

// errHeaderTooLong is a response whose headers exceed maxHeaderBytes.
var errHeaderTooLong = fmt.Errorf("server response headers exceeded %d bytes; aborted", maxHeaderBytes)

// h1Conn is one connection of the client.
type h1Conn struct {
	key  poolKey
	conn net.Conn // *tls.Conn for https
	lr   limitedReader
	br   *bufio.Reader
	bw   *bufio.Writer
	idle time.Time // when it went back to the pool
}

// limitedReader reads the connection, at most n bytes (while reading
// headers); read counts the bytes read since it was last reset.
type limitedReader struct {
	conn net.Conn
	n    int64
	read int64
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, errHeaderTooLong
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.conn.Read(p)
	l.n -= int64(n)
	l.read += int64(n)
	return n, err
}

// h1Client holds the idle connections.
type h1Client struct {
	dialer      *net.Dialer
	tlsConfig   *tls.Config // cloned per connection, with its ServerName
	maxPerHost  int
	maxIdle     int
	idleTimeout time.Duration

	mu     sync.Mutex
	idle   map[poolKey][]*h1Conn // per key, oldest first
	nIdle  int
	sweep  *time.Timer // pending sweep of expired connections; nil: none
	closed bool
}

func newH1Client(dialer *net.Dialer, cfg Config) *h1Client {
	return &h1Client{dialer: dialer, tlsConfig: &tls.Config{NextProtos: []string{"http/1.1"}}, maxPerHost: cfg.MaxConnsPerHost, maxIdle: max(cfg.MaxConns, cfg.MaxConnsPerHost),
		idleTimeout: idleTimeout, idle: make(map[poolKey][]*h1Conn)}
}

// poolKey is what the pool keeps connections by: a URL's scheme and
// host:port, in lower case.
type poolKey struct{ scheme, hostport string }

// connKey is the pool key of req's URL, and the host:port to dial. A URL
// whose host already is host:port (the port given, a host without ':')
// is its own host:port, with no string built.
func connKey(req *http.Request) (key poolKey, hostport string) {
	scheme := strings.ToLower(req.URL.Scheme)
	host, port := req.URL.Hostname(), req.URL.Port()
	if port == "" {
		port = "80"
		if scheme == "https" {
			port = "443"
		}
	}
	if h := req.URL.Host; len(h) == len(host)+1+len(port) && strings.HasPrefix(h, host) && h[len(host)] == ':' &&
		strings.HasSuffix(h, port) && !strings.Contains(host, ":") {
		hostport = h // what net.JoinHostPort(host, port) gives
	} else {
		hostport = net.JoinHostPort(host, port)
	}
	return poolKey{scheme: scheme, hostport: strings.ToLower(hostport)}, hostport
}

// roundTrip sends req (http or https, no proxy) and reads the response's
// head. The response's Body must be closed: it returns the connection to
// the pool when the body was read to its end, else closes it. ctx's
// deadline bounds every read and write; its end interrupts them.
func (c *h1Client) roundTrip(req *http.Request) (*http.Response, error) {
	if err := checkHeader(req.Header); err != nil {
		return nil, err
	}
	ctx := req.Context()
	key, hostport := connKey(req)
	trace := httptrace.ContextClientTrace(ctx)
	for attempt := 0; ; attempt++ {
		pc, reused, idleFor := c.get(key, attempt > 0)
		if pc == nil {
			var err error
			if pc, err = c.dial(ctx, req, key, hostport); err != nil {
				return nil, explainIO(ctx, err)
			}
		}
		if trace != nil && trace.GotConn != nil {
			trace.GotConn(httptrace.GotConnInfo{Conn: pc.conn, Reused: reused, WasIdle: reused, IdleTime: idleFor})
		}
		resp, retry, err := c.exchange(ctx, pc, req)
		if err == nil {
			return resp, nil
		}
		pc.conn.Close()
		// A kept connection the server had closed meanwhile: nothing came
		// back. Send again on a new one, as net/http does, when that is
		// safe (the request is idempotent).
		if !reused || !retry || attempt > 0 || !idempotent(req) || ctx.Err() != nil {
			return nil, explainIO(ctx, err)
		}
		if req.GetBody != nil {
			if req.Body, err = req.GetBody(); err != nil {
				return nil, err
			}
		}
	}
}

// exchange writes req on pc and reads the response's head. retry reports
// that the server sent nothing back.
func (c *h1Client) exchange(ctx context.Context, pc *h1Conn, req *http.Request) (resp *http.Response, retry bool, err error) {
	deadline, _ := ctx.Deadline()
	_ = pc.conn.SetDeadline(deadline) // zero: none
	stop := context.AfterFunc(ctx, func() { _ = pc.conn.SetDeadline(time.Unix(1, 0)) })
	if err := writeRequest(pc.bw, req); err != nil {
		stop()
		return nil, true, err
	}
	if err := pc.bw.Flush(); err != nil {
		stop()
		return nil, true, err
	}
	pc.lr.read = 0
	for range max1xx + 1 {
		pc.lr.n = maxHeaderBytes
		var plain bool
		if resp, plain, err = readHead(pc.br, req); err == nil && !plain {
			resp, err = http.ReadResponse(pc.br, req)
		}
		if err != nil {
			stop()
			return nil, pc.lr.read == 0 && pc.br.Buffered() == 0, err
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
		resp = nil // 100 Continue, 103 Early Hints: the response follows
	}
	pc.lr.n = math.MaxInt64
	if resp == nil {
		stop()
		return nil, false, fmt.Errorf("more than %d informational (1xx) responses", max1xx)
	}
	resp.Request = req
	keep := !resp.Close && !req.Close && resp.StatusCode != http.StatusSwitchingProtocols
	resp.Body = &h1Body{c: c, pc: pc, ctx: ctx, body: resp.Body, stop: stop, keep: keep,
		sized: resp.Body == http.NoBody || (len(resp.TransferEncoding) == 0 && resp.ContentLength >= 0), size: resp.ContentLength}
	return resp, false, nil
}

// writeRequest writes req's head as req.Write does, byte for byte. A GET
// or HEAD without a body and without httptrace's write hooks, to an ASCII
// host, with a User-Agent header of its own (every request of the
// fetcher), is written here: the request line, Host, User-Agent, then the
// other headers sorted by name, each value trimmed of surrounding white
// space. That is what Request.Write writes for it, without its formatting,
// header sorter and transfer writer (about a tenth of this client's
// allocations per fetch). Everything else goes to req.Write.
func writeRequest(w *bufio.Writer, req *http.Request) error {
	if req.Method != http.MethodGet && req.Method != http.MethodHead || req.Body != nil || req.ContentLength != 0 || req.Close ||
		len(req.TransferEncoding) > 0 || req.Trailer != nil || req.Host == "" {
		return req.Write(w)
	}
	if t := httptrace.ContextClientTrace(req.Context()); t != nil && (t.WroteHeaderField != nil || t.WroteRequest != nil) {
		return req.Write(w)
	}
	ua, hasUA := req.Header["User-Agent"]
	host, ruri := req.Host, req.URL.RequestURI()
	if !hasUA || !isPrintableASCII(host) || strings.IndexByte(host, '%') >= 0 || !httpguts.ValidHostHeader(host) ||
		!isPrintableASCII(ruri) {
		return req.Write(w)
	}
	var keysBuf [16]string
	keys := keysBuf[:0]
	for k := range req.Header {
		switch k {
		case "Host", "User-Agent", "Content-Length", "Transfer-Encoding", "Trailer":
			continue
		}
		if !httpguts.ValidHeaderFieldName(k) {
			return req.Write(w) // it leaves such a header out
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	w.WriteString(req.Method)
	w.WriteByte(' ')
	w.WriteString(ruri)
	w.WriteString(" HTTP/1.1\r\nHost: ")
	w.WriteString(host)
	w.WriteString("\r\n")
	if len(ua) > 0 {
		if v := headerValue(ua[0]); v != "" {
			w.WriteString("User-Agent: ")
			w.WriteString(v)
			w.WriteString("\r\n")
		}
	}
	for _, k := range keys {
		for _, v := range req.Header[k] {
			w.WriteString(k)
			w.WriteString(": ")
			w.WriteString(headerValue(v))
			w.WriteString("\r\n")
		}
	}
	_, err := w.WriteString("\r\n")
	return err
}

// headerValue is a header value as Request.Write writes it: newlines as
// spaces, surrounding white space trimmed.
func headerValue(v string) string {
	if strings.ContainsAny(v, "\r\n") {
		v = newlineToSpace.Replace(v)
	}
	return textproto.TrimString(v)
}

// newlineToSpace is net/http's headerNewlineToSpace.
var newlineToSpace = strings.NewReplacer("\n", " ", "\r", " ")

// isPrintableASCII reports that s has no control characters, DEL or
// non-ASCII bytes.
func isPrintableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// explainIO turns the I/O timeout our deadlines cause into ctx's end
// (DOWNLOAD_TIMEOUT or the caller's): the connection's deadline (and the
// dialer's) is ctx's, and may pass a moment before ctx's own timer fires.
func explainIO(ctx context.Context, err error) error {
	if _, ok := ctx.Deadline(); (ok || ctx.Err() != nil) && (errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded)) {
		<-ctx.Done()
		return fmt.Errorf("%w (%w)", context.Cause(ctx), err)
	}
	return err
}

// idempotent reports whether req may be sent twice.
func idempotent(req *http.Request) bool {
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	return false
}

// checkHeader refuses what net/http's Transport refuses to send.
func checkHeader(h http.Header) error {
	for name, values := range h {
		if !httpguts.ValidHeaderFieldName(name) {
			return fmt.Errorf("net/http: invalid header field name %q", name)
		}
		for _, v := range values {
			if !httpguts.ValidHeaderFieldValue(v) {
				return fmt.Errorf("net/http: invalid header field value for %q", name)
			}
		}
	}
	return nil
}

// dial connects to hostport with the guarded dialer, and for https does
// the TLS handshake (HTTP/1.1 by ALPN), within ctx.
func (c *h1Client) dial(ctx context.Context, req *http.Request, key poolKey, hostport string) (*h1Conn, error) {
	conn, err := c.dialer.DialContext(ctx, "tcp", hostport)
	if err != nil {
		return nil, err
	}
	if strings.EqualFold(req.URL.Scheme, "https") {
		cfg := c.tlsConfig.Clone()
		cfg.ServerName = req.URL.Hostname()
		tc := tls.Client(conn, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			return nil, err
		}
		conn = tc
	}
	pc := &h1Conn{key: key, conn: conn, lr: limitedReader{conn: conn}}
	pc.br = bufio.NewReaderSize(&pc.lr, connBufferSize)
	pc.bw = bufio.NewWriterSize(conn, connBufferSize)
	return pc, nil
}

// get takes key's most recently used idle connection (none when fresh is
// set), closing those that idled too long.
func (c *h1Client) get(key poolKey, fresh bool) (pc *h1Conn, reused bool, idleFor time.Duration) {
	if fresh {
		return nil, false, 0
	}
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	conns := c.idle[key]
	for len(conns) > 0 {
		pc = conns[len(conns)-1]
		conns[len(conns)-1] = nil
		conns = conns[:len(conns)-1]
		c.nIdle--
		if idleFor = now.Sub(pc.idle); idleFor < c.idleTimeout {
			if len(conns) == 0 && len(c.idle) <= c.maxIdle {
				// Kept empty for the connection's return (put), which then
				// does not allocate a new list; sweepIdle deletes it. At most
				// maxIdle such, beside those with connections.
				c.idle[key] = conns
			} else {
				c.setIdle(key, conns)
			}
			return pc, true, idleFor
		}
		pc.conn.Close()
	}
	c.setIdle(key, conns)
	return nil, false, 0
}

func (c *h1Client) setIdle(key poolKey, conns []*h1Conn) {
	if len(conns) == 0 {
		delete(c.idle, key)
	} else {
		c.idle[key] = conns
	}
}

// put returns pc to the pool, or closes it when the pool is full or closed.
func (c *h1Client) put(pc *h1Conn) {
	pc.idle = time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || len(c.idle[pc.key]) >= c.maxPerHost || c.nIdle >= c.maxIdle {
		pc.conn.Close()
		return
	}
	c.idle[pc.key] = append(c.idle[pc.key], pc)
	c.nIdle++
	if c.sweep == nil {
		c.sweep = time.AfterFunc(c.idleTimeout, c.sweepIdle)
	}
}

// sweepIdle closes the connections that idled too long and comes back
// while any are left.
func (c *h1Client) sweepIdle() {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sweep = nil
	if c.closed {
		return
	}
	oldest := now
	for key, conns := range c.idle {
		kept := conns[:0]
		for _, pc := range conns {
			if now.Sub(pc.idle) >= c.idleTimeout {
				pc.conn.Close()
				c.nIdle--
				continue
			}
			kept = append(kept, pc)
			if pc.idle.Before(oldest) {
				oldest = pc.idle
			}
		}
		clear(conns[len(kept):])
		c.setIdle(key, kept)
	}
	if c.nIdle > 0 {
		c.sweep = time.AfterFunc(oldest.Add(c.idleTimeout).Sub(now), c.sweepIdle)
	}
}

// close closes the idle connections; connections in use are closed when
// their responses end.
func (c *h1Client) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for key, conns := range c.idle {
		for _, pc := range conns {
			pc.conn.Close()
		}
		delete(c.idle, key)
	}
	c.nIdle = 0
	if c.sweep != nil {
		c.sweep.Stop()
		c.sweep = nil
	}
}

// h1Body is a response's body. Close never reads on: a body not read to
// its end closes its connection.
type h1Body struct {
	c      *h1Client
	pc     *h1Conn
	ctx    context.Context
	body   io.ReadCloser // http.ReadResponse's
	stop   func() bool   // stops ctx's interruption
	keep   bool          // neither side asked to close the connection
	sized  bool          // the body's end is known without reading on (Content-Length, or none)
	size   int64
	read   int64
	eof    bool
	closed bool
}

func (b *h1Body) Read(p []byte) (int, error) {
	if b.closed {
		return 0, errors.New("read on a closed response body")
	}
	n, err := b.body.Read(p)
	b.read += int64(n)
	if err == io.EOF {
		b.eof = true
	} else if err != nil {
		b.keep = false
		err = explainIO(b.ctx, err)
	}
	return n, err
}

// Close returns the connection to the pool when the whole body was read
// (a sized body read to its length counts), else closes it.
func (b *h1Body) Close() error {
	if b.closed {
		return nil
	}
	b.closed = true
	if !b.eof && b.sized && (b.body == http.NoBody || b.read == b.size) {
		// Reading on costs nothing here: the body knows it has ended.
		var probe [1]byte
		n, err := b.body.Read(probe[:])
		b.eof = n == 0 && err == io.EOF
	}
	interrupted := !b.stop()
	if b.keep && b.eof && !interrupted && b.pc.br.Buffered() == 0 {
		b.c.put(b.pc)
	} else {
		b.pc.conn.Close()
	}
	return nil
}
