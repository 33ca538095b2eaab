package fetch

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
)

// The fetcher's guard and proxy settings for the requests of a headless
// browser (crawler/render runs them through a proxy of its own that calls
// these): every connection the browser makes is checked as the crawler's
// own are.

// Allowed checks a page before a browser loads it, as Fetch checks its
// first hop: its URL, its host when written as an address or a localhost
// name (FETCH_BLOCK_PRIVATE), and, with ROBOTSTXT_OBEY, its robots.txt for
// userAgent ("": USER_AGENT). The errors are Fetch's (ErrForbiddenAddress,
// ErrRobotsDisallowed, ErrInvalidURL, ...).
func (f *Fetcher) Allowed(ctx context.Context, rawURL, userAgent string) error {
	u, err := parseTarget(rawURL)
	if err != nil {
		return err
	}
	if err := f.guard.checkHost(u.Hostname()); err != nil {
		return err
	}
	if f.cfg.ObeyRobots {
		return f.robots.check(ctx, u, cmp.Or(userAgent, f.cfg.UserAgent))
	}
	return nil
}

// RoundTrip sends one request of a browser (an absolute http URL, as a
// proxy receives it) as the crawler sends its own: through the proxy its
// settings choose, or to a guarded connection. It follows no redirect (the
// browser does). A refused address is an error wrapping
// ErrForbiddenAddress.
func (f *Fetcher) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := checkTarget(req.URL); err != nil {
		return nil, err
	}
	if err := f.guard.checkHost(req.URL.Hostname()); err != nil {
		return nil, err
	}
	h := &hop{}
	req = req.WithContext(withHop(req.Context(), h))
	var err error
	if h.proxy, err = f.proxy(req); err != nil {
		return nil, fmt.Errorf("choose a proxy for %s: %w", req.URL, err)
	}
	return f.transport.RoundTrip(req)
}

// DialTunnel connects to hostport ("host:port", a browser's CONNECT) as
// the crawler connects for an https URL there: through the http proxy its
// settings choose (by a CONNECT of its own), or by a guarded connection.
func (f *Fetcher) DialTunnel(ctx context.Context, hostport string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return nil, fmt.Errorf("%w: %q is not host:port", ErrInvalidURL, hostport)
	}
	if err := f.guard.checkHost(host); err != nil {
		return nil, err
	}
	target := &url.URL{Scheme: "https", Host: hostport}
	proxy, err := f.proxy(&http.Request{URL: target, Header: http.Header{}})
	if err != nil {
		return nil, fmt.Errorf("choose a proxy for %s: %w", hostport, err)
	}
	if proxy == nil {
		return f.dialer.DialContext(ctx, "tcp", hostport)
	}
	if proxy.Scheme != "http" {
		return nil, fmt.Errorf("tunnel to %s: the proxy %s is not an http proxy", hostport, proxy.Redacted())
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", proxyAddr(proxy))
	if err != nil {
		return nil, err
	}
	connect := &http.Request{Method: http.MethodConnect, URL: &url.URL{Opaque: hostport}, Host: hostport, Header: http.Header{}}
	if u := proxy.User; u != nil {
		pw, _ := u.Password()
		connect.SetBasicAuth(u.Username(), pw)
		connect.Header["Proxy-Authorization"] = connect.Header["Authorization"]
		delete(connect.Header, "Authorization")
	}
	if err := connect.Write(conn); err != nil {
		conn.Close()
		return nil, err
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, connect)
	if err != nil {
		conn.Close()
		return nil, err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || br.Buffered() > 0 {
		conn.Close()
		return nil, fmt.Errorf("tunnel to %s through %s: %s", hostport, proxy.Redacted(), resp.Status)
	}
	return conn, nil
}
