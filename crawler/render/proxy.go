package render

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/fetch"
)

// refusedHeader marks the answer the guard proxy gives in place of a
// refused request: its value is the ledger's reason (private_address).
const refusedHeader = "X-Scrapy-Cluster-Refused"

// Dialer is what the guard proxy sends the browser's requests through: the
// crawler's fetcher (fetch.Fetcher), so that they pass its guard
// (FETCH_BLOCK_PRIVATE, FETCH_ALLOWED_NETWORKS) and go through its proxy
// settings.
type Dialer interface {
	RoundTrip(*http.Request) (*http.Response, error)
	DialTunnel(ctx context.Context, hostport string) (net.Conn, error)
}

// guardProxy is an HTTP proxy on a loopback port that only the browsers
// of the pool use (Chromium's --proxy-server): plain requests are sent with
// Dialer.RoundTrip, CONNECT tunnels made with Dialer.DialTunnel. What the
// guard refuses gets a 403 marked with refusedHeader (a tunnel: a 403
// before any byte of it), counted by refused.
type guardProxy struct {
	dialer  Dialer
	refused func(reason string)
	ln      net.Listener
	srv     *http.Server
	wg      sync.WaitGroup
}

func startGuardProxy(d Dialer, refused func(reason string)) (*guardProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &guardProxy{dialer: d, refused: refused, ln: ln}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
	p.wg.Go(func() { _ = p.srv.Serve(ln) })
	return p, nil
}

// addr is the proxy's host:port.
func (p *guardProxy) addr() string { return p.ln.Addr().String() }

func (p *guardProxy) close() {
	_ = p.srv.Close()
	p.wg.Wait()
}

// hopByHop are the headers a proxy does not pass on (RFC 9110 7.6.1).
var hopByHop = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func (p *guardProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		p.tunnel(w, r)
		return
	}
	if !r.URL.IsAbs() {
		http.Error(w, "this proxy takes absolute URLs only", http.StatusBadRequest)
		return
	}
	out := r.Clone(r.Context())
	out.RequestURI = ""
	for _, h := range hopByHop {
		out.Header.Del(h)
	}
	for _, h := range strings.Split(r.Header.Get("Connection"), ",") {
		out.Header.Del(strings.TrimSpace(h))
	}
	resp, err := p.dialer.RoundTrip(out)
	if err != nil {
		p.fail(w, err)
		return
	}
	defer resp.Body.Close()
	for _, h := range hopByHop {
		resp.Header.Del(h)
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// fail answers a request that was not sent: refused by the guard (403,
// marked and counted), or that failed (502).
func (p *guardProxy) fail(w http.ResponseWriter, err error) {
	if errors.Is(err, fetch.ErrForbiddenAddress) {
		p.refused(reasonPrivateAddress)
		w.Header().Set(refusedHeader, reasonPrivateAddress)
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	http.Error(w, err.Error(), http.StatusBadGateway)
}

// reasonPrivateAddress is the ledger's word for a refused address.
const reasonPrivateAddress = "private_address"

func (p *guardProxy) tunnel(w http.ResponseWriter, r *http.Request) {
	conn, err := p.dialer.DialTunnel(r.Context(), r.Host)
	if err != nil {
		p.fail(w, err)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		conn.Close()
		http.Error(w, "cannot tunnel", http.StatusInternalServerError)
		return
	}
	client, buf, err := hj.Hijack()
	if err != nil {
		conn.Close()
		return
	}
	if _, err := client.Write([]byte("HTTP/1.1 200 Connection Established\r\n\r\n")); err != nil {
		conn.Close()
		client.Close()
		return
	}
	if n := buf.Reader.Buffered(); n > 0 {
		b, _ := buf.Reader.Peek(n)
		_, _ = conn.Write(b)
	}
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(conn, client)
	go pipe(client, conn)
	<-done // either side ended: end both
	conn.Close()
	client.Close()
	<-done
}
