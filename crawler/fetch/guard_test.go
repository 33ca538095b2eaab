package fetch_test

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/fetch"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/testsite"
)

// guarded is quick() with the address guard as it is by default, letting
// through only the networks given.
func guarded(allowed ...string) fetch.Config {
	return quick(func(c *fetch.Config) {
		c.AllowedNetworks = nil
		for _, n := range allowed {
			c.AllowedNetworks = append(c.AllowedNetworks, netip.MustParsePrefix(n))
		}
	})
}

// assertRefused checks that err is a refusal of an internal address: not
// retryable, dropped as "private_address", naming the URL.
func assertRefused(t *testing.T, rawURL string, res *fetch.Result, err error) {
	t.Helper()
	if !errors.Is(err, fetch.ErrForbiddenAddress) || res != nil {
		t.Fatalf("%s: got %v, %v; want %v", rawURL, res, err, fetch.ErrForbiddenAddress)
	}
	if fetch.IsRetryable(err) || fetch.DropReason(err) != "private_address" {
		t.Fatalf("%s: retryable %v, drop reason %q", rawURL, fetch.IsRetryable(err), fetch.DropReason(err))
	}
	if !strings.Contains(err.Error(), rawURL) || !strings.Contains(err.Error(), "refused: private address") {
		t.Fatalf("%s: error %q does not name the URL and the refusal", rawURL, err)
	}
}

// internalHosts are URL hosts that are internal addresses, in the forms a
// URL can write them. None is ever connected to: the tests that use them
// go through a proxy on loopback, or are loopback.
var internalHosts = []struct{ host, what string }{
	{"127.0.0.1", "loopback"},
	{"127.0.0.99", "loopback, not only 127.0.0.1"},
	{"127.0.0.1.", "loopback with a trailing dot"},
	{"localhost", "the loopback name"},
	{"LocalHost.", "the loopback name in capitals, with a trailing dot"},
	{"api.localhost", "a name under localhost"},
	{"127.1", "loopback in two parts"},
	{"127.0.1", "loopback in three parts"},
	{"2130706433", "loopback as one decimal number"},
	{"0x7f000001", "loopback as one hex number"},
	{"0x7f.1", "loopback with a hex part"},
	{"0177.0.0.1", "loopback with an octal part"},
	{"017700000001", "loopback as one octal number"},
	{"[::1]", "IPv6 loopback"},
	{"[0:0:0:0:0:0:0:1]", "IPv6 loopback written out"},
	{"[::ffff:127.0.0.1]", "IPv4-mapped loopback"},
	{"[::ffff:7f00:1]", "IPv4-mapped loopback in hex"},
	{"[::127.0.0.1]", "IPv4-compatible loopback"},
	{"[64:ff9b::127.0.0.1]", "loopback through NAT64"},
	{"0.0.0.0", "the unspecified address, which reaches the local host"},
	{"0", "the unspecified address as a number"},
	{"[::]", "the IPv6 unspecified address"},
	{"10.0.0.1", "RFC 1918 10/8"},
	{"172.16.0.1", "RFC 1918 172.16/12"},
	{"172.31.255.254", "RFC 1918 172.16/12, its end"},
	{"192.168.1.1", "RFC 1918 192.168/16"},
	{"167772161", "10.0.0.1 as a number"},
	{"012.0.0.1", "10.0.0.1 with an octal part"},
	{"[::ffff:10.0.0.1]", "IPv4-mapped private"},
	{"[::ffff:c0a8:101]", "IPv4-mapped 192.168.1.1 in hex"},
	{"[fc00::1]", "IPv6 unique local fc00::/7"},
	{"[fd12:3456::1]", "IPv6 unique local fd00::/8"},
	{"169.254.169.254", "the cloud metadata service, link-local"},
	{"0xa9.0xfe.0xa9.0xfe", "link-local in hex"},
	{"[::ffff:169.254.169.254]", "IPv4-mapped link-local"},
	{"[fe80::1]", "IPv6 link-local"},
	{"[fe80::1%25eth0]", "IPv6 link-local with a zone"},
	{"100.64.0.1", "shared address space (CGNAT)"},
	{"100.127.255.254", "shared address space, its end"},
	{"224.0.0.1", "multicast"},
	{"239.255.255.250", "multicast (SSDP)"},
	{"[ff02::1]", "IPv6 multicast"},
	{"255.255.255.255", "broadcast"},
	{"240.0.0.1", "reserved"},
	{"[fec0::1]", "IPv6 site-local"},
}

// refusingProxy is an HTTP proxy on loopback that records what it is
// asked and answers 502.
type refusingProxy struct {
	mu   sync.Mutex
	urls []string
	url  *url.URL
}

func startRefusingProxy(t *testing.T) *refusingProxy {
	t.Helper()
	p := &refusingProxy{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.urls = append(p.urls, r.RequestURI)
		p.mu.Unlock()
		http.Error(w, "the test proxy forwards nothing", http.StatusBadGateway)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	p.url = &url.URL{Scheme: "http", Host: ln.Addr().String()}
	return p
}

func (p *refusingProxy) asked() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.urls...)
}

func TestInternalHostsAreRefusedBeforeTheProxyIsAsked(t *testing.T) {
	proxy := startRefusingProxy(t)
	for _, obeyRobots := range []bool{false, true} {
		cfg := guarded()
		cfg.ObeyRobots = obeyRobots
		cfg.Proxy = http.ProxyURL(proxy.url) // everything, loopback included
		f := newFetcher(t, cfg)
		for _, tt := range internalHosts {
			rawURL := "http://" + tt.host + "/internal-secret"
			res, err := f.Fetch(context.Background(), fetch.Request{URL: rawURL})
			assertRefused(t, rawURL, res, err)
		}
	}
	if asked := proxy.asked(); len(asked) != 0 {
		t.Fatalf("the proxy was asked for %q", asked)
	}
	// A name goes to the proxy, which resolves it and must refuse internal
	// addresses itself; the proxy's own loopback address is not refused.
	res := mustFetch(t, newFetcher(t, func() fetch.Config {
		cfg := guarded()
		cfg.Proxy = http.ProxyURL(proxy.url)
		return cfg
	}()), fetch.Request{URL: "http://intranet.test/"})
	if res.Status != http.StatusBadGateway || len(proxy.asked()) != 1 || proxy.asked()[0] != "http://intranet.test/" {
		t.Fatalf("through the proxy: %d, proxy asked %q", res.Status, proxy.asked())
	}
}

func TestLoopbackIsRefusedInEveryFormAndNothingIsSent(t *testing.T) {
	site := testsite.Start(t)
	_, port, _ := net.SplitHostPort(site.Addr())
	f := newFetcher(t, guarded())
	for _, host := range []string{"127.0.0.1", "localhost", "127.1", "2130706433", "0x7f.1", "0177.0.0.1",
		"[::ffff:127.0.0.1]", "[::1]", "0.0.0.0", "[::]", "127.0.0.1."} {
		rawURL := "http://" + net.JoinHostPort(strings.Trim(host, "[]"), port) + "/page/1"
		res, err := f.Fetch(context.Background(), fetch.Request{URL: rawURL})
		assertRefused(t, rawURL, res, err)
	}
	if hits := site.Hits(); len(hits) != 0 {
		t.Fatalf("the site was sent %d requests: %+v", len(hits), hits)
	}
	// The zero Config refuses too; with the guard off the same site is fetched.
	zero := fetch.Config{Timeout: quick().Timeout, Proxy: noProxy}
	res, err := newFetcher(t, zero).Fetch(context.Background(), fetch.Request{URL: site.URL("/page/1")})
	assertRefused(t, site.URL("/page/1"), res, err)
	zero.AllowPrivate = true
	off := newFetcher(t, zero)
	for _, host := range []string{"127.0.0.1", "localhost"} {
		if res := mustFetch(t, off, fetch.Request{URL: "http://" + net.JoinHostPort(host, port) + "/page/1"}); res.Status != http.StatusOK {
			t.Fatalf("guard off, %s: %d", host, res.Status)
		}
	}
}

// fakeDNS answers A queries for every name with addr, over the stream
// connections Go's resolver dials through Resolver.Dial.
func fakeDNS(t *testing.T, addr netip.Addr) *net.Resolver {
	t.Helper()
	serve := func(conn net.Conn) {
		defer conn.Close()
		for {
			var size [2]byte
			if _, err := io.ReadFull(conn, size[:]); err != nil {
				return
			}
			query := make([]byte, binary.BigEndian.Uint16(size[:]))
			if _, err := io.ReadFull(conn, query); err != nil {
				return
			}
			var p dnsmessage.Parser
			h, err := p.Start(query)
			if err != nil {
				return
			}
			q, err := p.Question()
			if err != nil {
				return
			}
			b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionAvailable: true})
			b.EnableCompression()
			_ = b.StartQuestions()
			_ = b.Question(q)
			_ = b.StartAnswers()
			if q.Type == dnsmessage.TypeA {
				_ = b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60}, dnsmessage.AResource{A: addr.As4()})
			}
			answer, err := b.Finish()
			if err != nil {
				t.Errorf("fake DNS: %v", err)
				return
			}
			binary.BigEndian.PutUint16(size[:], uint16(len(answer)))
			if _, err := conn.Write(append(size[:], answer...)); err != nil {
				return
			}
		}
	}
	return &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
		client, server := net.Pipe()
		go serve(server)
		return client, nil
	}}
}

func TestANameThatResolvesInsideIsRefusedWhenDialled(t *testing.T) {
	site := testsite.Start(t)
	_, port, _ := net.SplitHostPort(site.Addr())
	rawURL := "http://intranet.example.com:" + port + "/page/1"
	resolver := fakeDNS(t, netip.MustParseAddr("127.0.0.1"))

	f := newFetcher(t, guarded())
	fetch.SetResolver(f, resolver)
	res, err := f.Fetch(context.Background(), fetch.Request{URL: rawURL})
	assertRefused(t, rawURL, res, err)
	if !strings.Contains(err.Error(), "127.0.0.1 is a loopback address") {
		t.Errorf("error %q does not name the address dialled", err)
	}
	if hits := site.Hits(); len(hits) != 0 {
		t.Fatalf("the site was sent %d requests", len(hits))
	}
	// The same name, resolved the same way, with loopback allowed.
	allowed := newFetcher(t, guarded("127.0.0.0/8"))
	fetch.SetResolver(allowed, resolver)
	if res := mustFetch(t, allowed, fetch.Request{URL: rawURL}); res.Status != http.StatusOK {
		t.Fatalf("allowed: %d", res.Status)
	}
}

func TestRedirectsToInternalAddressesAreRefused(t *testing.T) {
	site := testsite.Start(t)                     // 127.0.0.1, allowed
	inside := testsite.StartAt(t, "127.0.0.99:0") // not allowed
	_, port, _ := net.SplitHostPort(inside.Addr())
	f := newFetcher(t, guarded("127.0.0.1/32"))
	for _, target := range []string{
		inside.URL("/internal-secret"),
		"http://2130706531:" + port + "/internal-secret", // 127.0.0.99
		"http://0x7f.0.0.99:" + port + "/internal-secret",
		"http://[::ffff:127.0.0.99]:" + port + "/internal-secret",
	} {
		rawURL := site.URL("/redirect?to=" + url.QueryEscape(target))
		res, err := f.Fetch(context.Background(), fetch.Request{URL: rawURL})
		assertRefused(t, rawURL, res, err)
	}
	if hits := inside.Hits(); len(hits) != 0 {
		t.Fatalf("the internal site was sent %d requests", len(hits))
	}
	if hits := site.HitsFor("/redirect"); len(hits) != 4 {
		t.Fatalf("the public site saw %d redirects, want 4", len(hits))
	}
}

func TestRobotsTxtOnAnInternalAddressIsNeverFetched(t *testing.T) {
	inside := testsite.StartAt(t, "127.0.0.2:0", testsite.WithRobots(http.StatusOK, "User-agent: *\nDisallow: /\n"))
	// The allowed site's robots.txt redirects to the internal one.
	site := testsite.Start(t, testsite.WithHandler("/robots.txt", http.RedirectHandler(inside.URL("/robots.txt"), http.StatusFound)))
	f := newFetcher(t, obeying(func(c *fetch.Config) {
		c.AllowedNetworks = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	}))
	res, err := f.Fetch(context.Background(), fetch.Request{URL: inside.URL("/page/1")})
	assertRefused(t, inside.URL("/page/1"), res, err)
	// A robots.txt that cannot be had allows everything.
	mustFetch(t, f, fetch.Request{URL: site.URL("/page/1")})
	if len(site.HitsFor("/robots.txt")) != 1 || len(site.HitsFor("/page/1")) != 1 {
		t.Fatalf("the allowed site's hits: %+v", site.Hits())
	}
	if hits := inside.Hits(); len(hits) != 0 {
		t.Fatalf("the internal site was sent %d requests: %+v", len(hits), hits)
	}
}

func TestAllowedNetworksLetExactlyThemThrough(t *testing.T) {
	two := testsite.StartAt(t, "127.0.0.2:0")
	three := testsite.StartAt(t, "127.0.0.3:0")
	six := testsite.StartAt(t, "[::1]:0")
	for _, tt := range []struct {
		allowed []string
		fetched map[*testsite.Site]bool
	}{
		{nil, map[*testsite.Site]bool{}},
		{[]string{"127.0.0.2/32"}, map[*testsite.Site]bool{two: true}},
		{[]string{"127.0.0.2/31"}, map[*testsite.Site]bool{two: true, three: true}},
		{[]string{"127.0.0.3/32", "::1/128"}, map[*testsite.Site]bool{three: true, six: true}},
		{[]string{"::ffff:127.0.0.2/128"}, map[*testsite.Site]bool{two: true}},
		{[]string{"10.0.0.0/8", "fd00::/8"}, map[*testsite.Site]bool{}},
	} {
		f := newFetcher(t, guarded(tt.allowed...))
		for _, site := range []*testsite.Site{two, three, six} {
			res, err := f.Fetch(context.Background(), fetch.Request{URL: site.URL("/page/1")})
			if tt.fetched[site] {
				if err != nil || res.Status != http.StatusOK {
					t.Errorf("allowed %v: %s refused: %v", tt.allowed, site.Addr(), err)
				}
			} else if !errors.Is(err, fetch.ErrForbiddenAddress) {
				t.Errorf("allowed %v: %s: %v, want a refusal", tt.allowed, site.Addr(), err)
			}
		}
	}
}
