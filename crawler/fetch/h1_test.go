package fetch_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/fetch"
)

// rawServer is a TCP server that answers each connection with serve and
// counts the connections it accepted and those the client closed.
type rawServer struct {
	ln       net.Listener
	accepted atomic.Int32
	closed   atomic.Int32 // connections the client closed (serve saw EOF)
}

// startRaw serves each connection with serve, which returns when the
// connection should end: with true when it saw the client close it.
func startRaw(t *testing.T, serve func(conn net.Conn, br *bufio.Reader) bool) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{ln: ln}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			s.accepted.Add(1)
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
			wg.Go(func() {
				defer conn.Close()
				if serve(conn, bufio.NewReader(conn)) {
					s.closed.Add(1)
				}
			})
		}
	})
	return s
}

func (s *rawServer) url(path string) string { return "http://" + s.ln.Addr().String() + path }

// answerOne is startRaw for servers that read one request per connection
// before answering it with answer.
func answerOne(t *testing.T, answer func(conn net.Conn, br *bufio.Reader) bool) *rawServer {
	return startRaw(t, func(conn net.Conn, br *bufio.Reader) bool { return !readRequest(br) || answer(conn, br) })
}

// readRequest reads one request's head; false when the client closed
// the connection.
func readRequest(br *bufio.Reader) bool {
	req, err := http.ReadRequest(br)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, req.Body)
	return true
}

// untilClosed reads the connection until the client closes it (true) or
// the test's deadline for it passes.
func untilClosed(conn net.Conn, br *bufio.Reader) bool {
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, err := br.ReadByte()
	return errors.Is(err, io.EOF)
}

// A kept connection the server closed while it idled is found out when
// the next request gets nothing back: the request goes again on a new
// connection and succeeds.
func TestAKeptConnectionTheServerClosedIsReplaced(t *testing.T) {
	srv := answerOne(t, func(conn net.Conn, br *bufio.Reader) bool {
		_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
		return false // and close it, without a word
	})
	f := newFetcher(t, quick())
	for i := range 3 {
		if res := mustFetch(t, f, fetch.Request{URL: srv.url("/")}); string(res.Body) != "hello" {
			t.Fatalf("fetch %d: %q", i, res.Body)
		}
	}
	if n := srv.accepted.Load(); n != 3 {
		t.Fatalf("%d connections, want 3", n)
	}
}

// A connection whose body was not read to its end (cut at
// DOWNLOAD_MAXSIZE) is closed, never reused; one read to its end is.
func TestACutBodyClosesItsConnection(t *testing.T) {
	srv := startRaw(t, func(conn net.Conn, br *bufio.Reader) bool {
		for readRequest(br) {
			_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"+strings.Repeat("x", 100))
		}
		return true
	})
	f := newFetcher(t, quick(func(c *fetch.Config) { c.MaxSize = 10 }))
	for range 2 {
		if res := mustFetch(t, f, fetch.Request{URL: srv.url("/")}); !res.Truncated || len(res.Body) != 10 {
			t.Fatalf("%d bytes, truncated %v", len(res.Body), res.Truncated)
		}
	}
	waitFor(t, "the client to close both connections", func() bool { return srv.closed.Load() == 2 })
	if n := srv.accepted.Load(); n != 2 {
		t.Fatalf("%d connections, want 2", n)
	}
	whole := newFetcher(t, quick())
	for range 3 {
		mustFetch(t, whole, fetch.Request{URL: srv.url("/")})
	}
	if n := srv.accepted.Load(); n != 3 {
		t.Fatalf("%d connections after 3 whole bodies on one, want 3 in all", n)
	}
}

// Idle connections are closed after the idle timeout, and no more than
// MaxConnsPerHost are kept.
func TestIdleConnectionsAreBoundedAndTimeOut(t *testing.T) {
	var arrived sync.WaitGroup
	arrived.Add(4)
	srv := answerOne(t, func(conn net.Conn, br *bufio.Reader) bool {
		arrived.Done()
		arrived.Wait() // all four requests in flight at once, on four connections
		_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		return untilClosed(conn, br)
	})
	f := newFetcher(t, quick(func(c *fetch.Config) { c.MaxConnsPerHost = 2 }))
	fetch.SetIdleTimeout(f, 300*time.Millisecond)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if _, err := f.Fetch(context.Background(), fetch.Request{URL: srv.url("/")}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	// Two went back to the pool, two were closed at once; then the two idle
	// ones time out.
	waitFor(t, "two connections closed", func() bool { return srv.closed.Load() >= 2 })
	waitFor(t, "the idle connections to time out", func() bool { return srv.closed.Load() == 4 })
}

// Headers beyond 1 MiB fail the fetch, as net/http's limit did.
func TestHugeResponseHeadersAreRefused(t *testing.T) {
	srv := answerOne(t, func(conn net.Conn, br *bufio.Reader) bool {
		_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\n")
		line := "X-Filler: " + strings.Repeat("y", 1000) + "\r\n"
		for range 2000 {
			if _, err := io.WriteString(conn, line); err != nil {
				return true
			}
		}
		return false
	})
	f := newFetcher(t, quick())
	_, err := f.Fetch(context.Background(), fetch.Request{URL: srv.url("/")})
	if err == nil || !strings.Contains(err.Error(), "headers exceeded") {
		t.Fatalf("2 MB of headers: %v", err)
	}
}

// Informational responses (103 Early Hints, 100 Continue) before the
// response are skipped; too many of them fail the fetch.
func TestInformationalResponsesAreSkipped(t *testing.T) {
	var hints atomic.Int32
	hints.Store(2)
	srv := answerOne(t, func(conn net.Conn, br *bufio.Reader) bool {
		for range hints.Load() {
			_, _ = io.WriteString(conn, "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n")
		}
		_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\npage")
		return untilClosed(conn, br)
	})
	f := newFetcher(t, quick())
	if res := mustFetch(t, f, fetch.Request{URL: srv.url("/")}); res.Status != 200 || string(res.Body) != "page" {
		t.Fatalf("%d %q", res.Status, res.Body)
	}
	hints.Store(6)
	f = newFetcher(t, quick())
	if _, err := f.Fetch(context.Background(), fetch.Request{URL: srv.url("/")}); err == nil || !strings.Contains(err.Error(), "informational") {
		t.Fatalf("6 informational responses: %v", err)
	}
}

// https goes over TLS, as HTTP/1.1, and its connections are reused.
func TestHTTPSIsHTTP1OverTLS(t *testing.T) {
	var protos sync.Map
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		protos.Store(r.Proto, true)
		fmt.Fprintf(w, "secure %s", r.URL.Path)
	}))
	srv.EnableHTTP2 = true
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	var conns atomic.Int32
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	defer srv.Close()
	f := newFetcher(t, quick())
	fetch.TrustRoots(f, srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs)
	for range 3 {
		if res := mustFetch(t, f, fetch.Request{URL: srv.URL + "/a"}); string(res.Body) != "secure /a" {
			t.Fatalf("%q", res.Body)
		}
	}
	if _, ok := protos.Load("HTTP/1.1"); !ok {
		t.Fatal("not HTTP/1.1")
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d connections for 3 fetches, want 1", n)
	}
}
