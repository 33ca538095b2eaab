package fetch_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"log"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/netip"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/fetch"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/testsite"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

// loopback are the networks the tests' sites are on, which the address
// guard refuses unless told otherwise.
var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}

// quick is a configuration with short timeouts for tests, allowed to
// reach sites on loopback.
func quick(mod ...func(*fetch.Config)) fetch.Config {
	cfg := fetch.DefaultConfig()
	cfg.Timeout = 5 * time.Second
	cfg.Proxy = noProxy
	cfg.AllowedNetworks = loopback
	for _, m := range mod {
		m(&cfg)
	}
	return cfg
}

func noProxy(*http.Request) (*url.URL, error) { return nil, nil }

func newFetcher(t testing.TB, cfg fetch.Config) *fetch.Fetcher {
	t.Helper()
	f := fetch.New(cfg)
	t.Cleanup(f.Close)
	return f
}

func mustFetch(t *testing.T, f *fetch.Fetcher, req fetch.Request) *fetch.Result {
	t.Helper()
	res, err := f.Fetch(context.Background(), req)
	if err != nil {
		t.Fatalf("fetch %s: %v", req.URL, err)
	}
	return res
}

func echoOf(t *testing.T, res *fetch.Result) testsite.Echo {
	t.Helper()
	var echo testsite.Echo
	if err := json.Unmarshal(res.Body, &echo); err != nil {
		t.Fatalf("echo body %q: %v", res.Body, err)
	}
	return echo
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	harness.WaitFor(t, what, 10*time.Second, cond)
}

func TestFetchSendsTheDefaultHeadersAndReportsExactlyWhatWasSent(t *testing.T) {
	site := testsite.Start(t)
	f := newFetcher(t, quick())
	res := mustFetch(t, f, fetch.Request{URL: site.URL("/echo-headers")})
	want := http.Header{
		"Accept":          {"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"},
		"Accept-Language": {"en"},
		"Accept-Encoding": {"gzip,deflate"},
		"User-Agent":      {fetch.DefaultUserAgent},
	}
	if !maps.EqualFunc(res.RequestHeader, want, slices.Equal) {
		t.Fatalf("request header %v, want %v", res.RequestHeader, want)
	}
	if got := echoOf(t, res).Header; !maps.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("the site received %v, want %v", got, want)
	}
	if res.URL != site.URL("/echo-headers") || res.Status != 200 || res.StatusText != "OK" || res.Truncated ||
		res.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("result %+v", res)
	}
}

func TestPerRequestUserAgentAndCookie(t *testing.T) {
	site := testsite.Start(t)
	f := newFetcher(t, quick(func(c *fetch.Config) {
		c.UserAgent = "DefaultBot/2"
		c.DefaultHeaders = map[string]string{"X-Extra": "1", "Accept-Language": ""}
	}))
	echo := echoOf(t, mustFetch(t, f, fetch.Request{URL: site.URL("/echo-headers"), UserAgent: "CrawlBot/1", Cookie: "a=1; b=2"}))
	if echo.Header.Get("User-Agent") != "CrawlBot/1" || echo.Header.Get("Cookie") != "a=1; b=2" ||
		echo.Header.Get("X-Extra") != "1" || echo.Header["Accept-Language"] != nil {
		t.Fatalf("headers %v", echo.Header)
	}
	echo = echoOf(t, mustFetch(t, f, fetch.Request{URL: site.URL("/echo-headers")}))
	if echo.Header.Get("User-Agent") != "DefaultBot/2" || echo.Header["Cookie"] != nil || echo.Header["Referer"] != nil {
		t.Fatalf("headers %v", echo.Header)
	}
}

// A request's Referer is sent, also after a redirect; an https one never
// goes to an http URL.
func TestTheRequestsRefererIsSentOnEveryHop(t *testing.T) {
	site := testsite.Start(t)
	f := newFetcher(t, quick())
	ref := "http://example.com/page"
	echo := echoOf(t, mustFetch(t, f, fetch.Request{URL: site.URL("/redirect?to=/echo-headers"), Referer: ref}))
	if got := echo.Header.Get("Referer"); got != ref {
		t.Fatalf("Referer after a redirect %q, want %q", got, ref)
	}
	echo = echoOf(t, mustFetch(t, f, fetch.Request{URL: site.URL("/echo-headers"), Referer: "https://example.com/secure"}))
	if echo.Header["Referer"] != nil {
		t.Fatalf("an https Referer went to an http URL: %v", echo.Header)
	}
}

func TestEveryStatusIsAResult(t *testing.T) {
	site := testsite.Start(t)
	f := newFetcher(t, quick())
	cfg := fetch.DefaultConfig()
	for _, tt := range []struct {
		code      int
		text      string
		retryable bool
	}{{200, "OK", false}, {403, "Forbidden", false}, {404, "Not Found", false}, {500, "Internal Server Error", false},
		{503, "Service Unavailable", false}, {504, "Gateway Timeout", true}, {599, "status code 599", false}} {
		res := mustFetch(t, f, fetch.Request{URL: site.URL("/status/" + strconv.Itoa(tt.code))})
		if res.Status != tt.code || res.StatusText != tt.text || !bytes.Contains(res.Body, []byte(strconv.Itoa(tt.code))) {
			t.Errorf("/status/%d: %d %q %q", tt.code, res.Status, res.StatusText, res.Body)
		}
		if got := fetch.RetryableStatus(tt.code, cfg); got != tt.retryable {
			t.Errorf("RetryableStatus(%d) = %v", tt.code, got)
		}
	}
}

func TestRedirectsAreFollowedToTheirEnd(t *testing.T) {
	site := testsite.Start(t)
	f := newFetcher(t, quick(func(c *fetch.Config) { c.MaxRedirects = 5 }))
	res := mustFetch(t, f, fetch.Request{URL: site.URL("/redirect-chain/5")})
	if res.URL != site.URL("/redirect-chain/0") || res.Status != 200 || !bytes.Contains(res.Body, []byte("End of the redirect chain")) {
		t.Fatalf("result %s %d %q", res.URL, res.Status, res.Body)
	}
	for n := range 6 {
		if hits := site.HitsFor("/redirect-chain/" + strconv.Itoa(n)); len(hits) != 1 {
			t.Errorf("/redirect-chain/%d requested %d times", n, len(hits))
		}
	}
	for _, code := range []string{"301", "302", "303", "307", "308"} {
		res := mustFetch(t, f, fetch.Request{URL: site.URL("/redirect?to=/page/2&code=" + code)})
		if res.URL != site.URL("/page/2") || res.Status != 200 {
			t.Errorf("code %s: %s %d", code, res.URL, res.Status)
		}
	}
}

func TestRedirectFailures(t *testing.T) {
	site := testsite.Start(t)
	f := newFetcher(t, quick(func(c *fetch.Config) { c.MaxRedirects = 5 }))
	tests := []struct {
		name string
		path string
		want error
	}{
		{"one redirect too many", "/redirect-chain/6", fetch.ErrTooManyRedirects},
		{"a loop", "/loop/a", fetch.ErrRedirectLoop},
		{"a loop back to the start", "/redirect?to=/redirect%3Fto%3D/loop/a", fetch.ErrRedirectLoop},
		{"another scheme", "/redirect?to=ftp://127.0.0.1/x", fetch.ErrUnsupportedScheme},
		{"a broken Location", "/redirect?to=" + url.QueryEscape("http://[::1/x"), fetch.ErrInvalidURL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := f.Fetch(context.Background(), fetch.Request{URL: site.URL(tt.path)})
			if !errors.Is(err, tt.want) || res != nil {
				t.Fatalf("got %v, %v; want %v", res, err, tt.want)
			}
			if fetch.IsRetryable(err) {
				t.Fatalf("%v is retryable", err)
			}
			if !strings.Contains(err.Error(), site.URL(tt.path)) {
				t.Errorf("error %q does not name the URL", err)
			}
		})
	}
}

func TestRedirectsCanBeTurnedOff(t *testing.T) {
	site := testsite.Start(t)
	f := newFetcher(t, quick(func(c *fetch.Config) { c.DisableRedirects = true }))
	res := mustFetch(t, f, fetch.Request{URL: site.URL("/loop/a")})
	if res.Status != http.StatusFound || res.Header.Get("Location") != "b" || res.URL != site.URL("/loop/a") {
		t.Fatalf("result %+v", res)
	}
}

func TestCookiesNeverOutliveTheirRequest(t *testing.T) {
	site := testsite.Start(t)
	other := testsite.StartAt(t, "127.0.0.2:0")
	f := newFetcher(t, quick())

	// A cookie set by a redirect is not sent to its target.
	res := mustFetch(t, f, fetch.Request{URL: site.URL("/set-cookie?next=/echo-headers")})
	if c := echoOf(t, res).Header["Cookie"]; c != nil {
		t.Fatalf("redirect target got cookie %q", c)
	}
	// Nor to the next request.
	mustFetch(t, f, fetch.Request{URL: site.URL("/set-cookie")})
	if c := echoOf(t, mustFetch(t, f, fetch.Request{URL: site.URL("/echo-headers")})).Header["Cookie"]; c != nil {
		t.Fatalf("next request got cookie %q", c)
	}
	// The request's own cookie goes to its host only: not to the other host a
	// redirect leads to, and again when the chain comes back.
	back := url.QueryEscape(site.URL("/echo-headers"))
	chain := site.URL("/redirect?to=" + url.QueryEscape(other.URL("/redirect?to="+back)))
	res = mustFetch(t, f, fetch.Request{URL: chain, Cookie: "crawl=1"})
	if hits := other.HitsFor("/redirect"); len(hits) != 1 || hits[0].Cookie != "" {
		t.Fatalf("other host's hits %+v", hits)
	}
	if got := echoOf(t, res).Header.Get("Cookie"); got != "crawl=1" || res.RequestHeader.Get("Cookie") != "crawl=1" {
		t.Fatalf("back on the first host: cookie %q", got)
	}
	if hits := site.HitsFor("/redirect"); hits[len(hits)-1].Cookie != "crawl=1" {
		t.Fatalf("first hop's cookie %q", hits[len(hits)-1].Cookie)
	}
}

// recordingProxy is an HTTP proxy on loopback that records the URLs asked
// of it and forwards them to the test site.
type recordingProxy struct {
	site *testsite.Site
	mu   sync.Mutex
	urls []string
}

func (p *recordingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.urls = append(p.urls, r.RequestURI)
	p.mu.Unlock()
	out, _ := http.NewRequest(r.Method, "http://"+p.site.Addr()+r.URL.RequestURI(), nil)
	out.Header = r.Header.Clone()
	out.Host = r.Host
	resp, err := (&http.Transport{}).RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	maps.Copy(w.Header(), resp.Header)
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

func (p *recordingProxy) seen() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.urls)
}

func startProxy(t *testing.T, site *testsite.Site) (*recordingProxy, string) {
	p := &recordingProxy{site: site}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: p}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return p, "http://" + ln.Addr().String()
}

func TestProxyFromTheEnvironment(t *testing.T) {
	site := testsite.Start(t)
	proxy, proxyURL := startProxy(t, site)
	for _, name := range []string{"HTTP_PROXY", "http_proxy"} {
		t.Setenv(name, proxyURL)
	}
	for _, name := range []string{"NO_PROXY", "no_proxy", "HTTPS_PROXY", "https_proxy", "REQUEST_METHOD"} {
		t.Setenv(name, "")
	}
	cfg := quick()
	cfg.Proxy = nil // the environment's
	f := newFetcher(t, cfg)

	// A name that is not loopback goes through the proxy (which resolves it).
	_, port, _ := net.SplitHostPort(site.Addr())
	target := "http://site.test:" + port + "/echo-headers"
	res := mustFetch(t, f, fetch.Request{URL: target})
	if got := proxy.seen(); !slices.Equal(got, []string{target}) {
		t.Fatalf("proxy saw %q", got)
	}
	if echo := echoOf(t, res); echo.Host != "site.test:"+port || res.URL != target {
		t.Fatalf("echo %+v, result URL %s", echo, res.URL)
	}
	// Loopback addresses never use the proxy, as with http.ProxyFromEnvironment.
	mustFetch(t, f, fetch.Request{URL: site.URL("/page/1")})
	if got := proxy.seen(); len(got) != 1 {
		t.Fatalf("loopback request was proxied: %q", got)
	}
	// NO_PROXY is honoured.
	t.Setenv("NO_PROXY", "site.test")
	t.Setenv("no_proxy", "site.test")
	g := newFetcher(t, cfg)
	if _, err := g.Fetch(context.Background(), fetch.Request{URL: target}); err == nil {
		t.Fatal("site.test resolved without the proxy")
	}
	if got := proxy.seen(); len(got) != 1 {
		t.Fatalf("NO_PROXY ignored: %q", got)
	}
}

func TestGzipAndDeflateBodiesAreDecoded(t *testing.T) {
	site := testsite.Start(t)
	f := newFetcher(t, quick())
	for _, p := range []string{"/gzip", "/deflate"} {
		res := mustFetch(t, f, fetch.Request{URL: site.URL(p)})
		if !bytes.Contains(res.Body, []byte(testsite.CompressedPageText)) || res.Header.Get("Content-Encoding") != "" || res.Truncated {
			t.Errorf("%s: %q, Content-Encoding %q", p, res.Body, res.Header.Get("Content-Encoding"))
		}
	}
	// A body that only claims to be compressed is kept as it came.
	res := mustFetch(t, f, fetch.Request{URL: site.URL("/bad-gzip")})
	if string(res.Body) != testsite.BadGzipBody || res.Header.Get("Content-Encoding") != "gzip" {
		t.Errorf("/bad-gzip: %q, Content-Encoding %q", res.Body, res.Header.Get("Content-Encoding"))
	}
}

func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(b)
	_ = zw.Close()
	return buf.Bytes()
}

func TestBodiesAreCutAtTheMaximumSize(t *testing.T) {
	const maxSize = 100_000
	zeros := gzipped(make([]byte, 50*maxSize)) // a small body that inflates far past the limit
	noise := make([]byte, 3*maxSize)           // incompressible: the compressed body itself is too long
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range noise {
		noise[i] = byte(rng.Uint32())
	}
	noisy := gzipped(noise)
	serve := func(body []byte) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Encoding", "gzip")
			_, _ = w.Write(body)
		})
	}
	site := testsite.Start(t, testsite.WithHandler("/bomb", serve(zeros)), testsite.WithHandler("/noise", serve(noisy)))
	f := newFetcher(t, quick(func(c *fetch.Config) { c.MaxSize = maxSize }))
	tests := []struct {
		path      string
		want      []byte
		truncated bool
	}{
		{"/huge/1000000", testsite.HugePrefix(maxSize), true},
		{"/huge/1000000?chunked=1", testsite.HugePrefix(maxSize), true},
		{"/huge/100000", testsite.HugePrefix(maxSize), false},
		{"/huge/99999?chunked=1", testsite.HugePrefix(maxSize - 1), false},
		{"/huge/100001", testsite.HugePrefix(maxSize), true},
		{"/bomb", make([]byte, maxSize), true},
	}
	// The compressed body is cut at the limit: what it holds is kept.
	res := mustFetch(t, f, fetch.Request{URL: site.URL("/noise")})
	if len(res.Body) < maxSize/2 || !bytes.HasPrefix(noise, res.Body) || !res.Truncated || res.Header.Get("Content-Encoding") != "" {
		t.Errorf("/noise: %d bytes, truncated %v", len(res.Body), res.Truncated)
	}
	for _, tt := range tests {
		res := mustFetch(t, f, fetch.Request{URL: site.URL(tt.path)})
		if !bytes.Equal(res.Body, tt.want) || res.Truncated != tt.truncated || res.Status != 200 {
			t.Errorf("%s: %d bytes, truncated %v; want %d, %v", tt.path, len(res.Body), res.Truncated, len(tt.want), tt.truncated)
		}
	}
}

func TestCompressionBombsCostOnlyWhatIsKept(t *testing.T) {
	const maxSize = 1 << 20
	errorBomb := testsite.Bomb("gzip", 8)
	site := testsite.Start(t, testsite.WithHandler("/error-bomb", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write(errorBomb)
	})))
	// Built before measuring (the e2e benchmark uses bombs of 1 GiB; here
	// building one under the race detector would take seconds).
	testsite.Bomb("gzip", 16) // 16 MiB inflated: 16 times what is kept
	testsite.Bomb("deflate", 16)
	f := newFetcher(t, quick(func(c *fetch.Config) { c.MaxSize = maxSize }))
	for _, tt := range []struct {
		path   string
		status int
	}{{"/bomb/gzip/16", 200}, {"/bomb/deflate/16", 200}, {"/error-bomb", 500}} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		res := mustFetch(t, f, fetch.Request{URL: site.URL(tt.path)})
		runtime.ReadMemStats(&after)
		if res.Status != tt.status || !res.Truncated || !bytes.Equal(res.Body, make([]byte, maxSize)) || res.Header.Get("Content-Encoding") != "" {
			t.Errorf("%s: %d, %d bytes, truncated %v, Content-Encoding %q", tt.path, res.Status, len(res.Body), res.Truncated, res.Header.Get("Content-Encoding"))
		}
		// The body kept, the compressed bytes behind it and the decoders'
		// windows: not the whole bomb, nor buffers grown by copying.
		if allocated := after.TotalAlloc - before.TotalAlloc; allocated > maxSize+256<<10 {
			t.Errorf("%s: fetching %d bytes allocated %d", tt.path, maxSize, allocated)
		}
	}
}

func TestBodiesAreReadIntoBuffersOfTheirSize(t *testing.T) {
	const maxSize = 4 << 20
	site := testsite.Start(t)
	f := newFetcher(t, quick(func(c *fetch.Config) { c.MaxSize = maxSize }))
	for _, tt := range []struct {
		path string
		size int
		// allocated bounds what a fetch allocates: the body, and for a body
		// of unknown length the pooled chunks it was read into.
		allocated uint64
	}{
		{"/huge/3000000", 3_000_000, 3_000_000 + 256<<10},
		{"/huge/50000000", maxSize, maxSize + 256<<10},
		{"/huge/3000000?chunked=1", 3_000_000, 2*3_000_000 + 256<<10},
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		res := mustFetch(t, f, fetch.Request{URL: site.URL(tt.path)})
		runtime.ReadMemStats(&after)
		if len(res.Body) != tt.size || cap(res.Body) != tt.size || !bytes.Equal(res.Body, testsite.HugePrefix(tt.size)) {
			t.Errorf("%s: %d bytes in a buffer of %d", tt.path, len(res.Body), cap(res.Body))
		}
		if allocated := after.TotalAlloc - before.TotalAlloc; allocated > tt.allocated {
			t.Errorf("%s: fetching %d bytes allocated %d, want at most %d", tt.path, len(res.Body), allocated, tt.allocated)
		}
	}
}

func TestEndlessBodiesTimeOut(t *testing.T) {
	site := testsite.Start(t)
	f := newFetcher(t, quick(func(c *fetch.Config) { c.Timeout = 300 * time.Millisecond }))
	res, err := f.Fetch(context.Background(), fetch.Request{URL: site.URL("/drip?every=10")})
	if !errors.Is(err, fetch.ErrTimeout) || !fetch.IsRetryable(err) || res != nil {
		t.Fatalf("drip: %v, %v", res, err)
	}
}

func TestTimeoutsAreRetryableErrors(t *testing.T) {
	site := testsite.Start(t)
	f := newFetcher(t, quick(func(c *fetch.Config) { c.Timeout = 200 * time.Millisecond }))
	for _, p := range []string{"/hang", "/hang-body", "/slow/3000"} {
		res, err := f.Fetch(context.Background(), fetch.Request{URL: site.URL(p)})
		if !errors.Is(err, fetch.ErrTimeout) || !fetch.IsRetryable(err) || res != nil {
			t.Errorf("%s: %v, %v", p, res, err)
		}
	}
	mustFetch(t, f, fetch.Request{URL: site.URL("/slow/10")})
}

func TestTheCallersCancellationIsReported(t *testing.T) {
	site := testsite.Start(t)
	f := newFetcher(t, quick())
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		waitFor(t, "the hanging request", func() bool { return len(site.HitsFor("/hang")) == 1 })
		cancel()
	}()
	_, err := f.Fetch(ctx, fetch.Request{URL: site.URL("/hang")})
	if !errors.Is(err, context.Canceled) || errors.Is(err, fetch.ErrTimeout) || !fetch.IsRetryable(err) {
		t.Fatalf("got %v", err)
	}
}

func TestBrokenConnectionsAreRetryableErrors(t *testing.T) {
	site := testsite.Start(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := "http://" + ln.Addr().String() + "/"
	ln.Close()
	f := newFetcher(t, quick())
	tests := []struct {
		url  string
		want error
	}{
		{closedPort, syscall.ECONNREFUSED},
		{site.URL("/truncated-body"), io.ErrUnexpectedEOF},
		{site.URL("/reset"), nil},
	}
	for _, tt := range tests {
		res, err := f.Fetch(context.Background(), fetch.Request{URL: tt.url})
		if err == nil || res != nil || !fetch.IsRetryable(err) || (tt.want != nil && !errors.Is(err, tt.want)) {
			t.Errorf("%s: %v, %v (retryable %v)", tt.url, res, err, fetch.IsRetryable(err))
		}
	}
}

func TestCertificateProblemsAreNotRetryable(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshake errors we cause
	srv.StartTLS()
	defer srv.Close()
	f := newFetcher(t, quick())
	_, err := f.Fetch(context.Background(), fetch.Request{URL: srv.URL})
	var unknownAuthority x509.UnknownAuthorityError
	if !errors.As(err, &unknownAuthority) || fetch.IsRetryable(err) {
		t.Fatalf("self-signed certificate: %v (retryable %v)", err, fetch.IsRetryable(err))
	}
}

func TestInvalidURLsAreNotRetryable(t *testing.T) {
	f := newFetcher(t, quick())
	tests := []struct {
		url  string
		want error
	}{
		{"", fetch.ErrInvalidURL},
		{"not a url", fetch.ErrInvalidURL},
		{"/relative/path", fetch.ErrInvalidURL},
		{"http://", fetch.ErrInvalidURL},
		{"http://[::1", fetch.ErrInvalidURL},
		{"ftp://127.0.0.1/file", fetch.ErrUnsupportedScheme},
		{"mailto:someone@example.com", fetch.ErrUnsupportedScheme},
		{"javascript:void(0)", fetch.ErrUnsupportedScheme},
	}
	for _, tt := range tests {
		_, err := f.Fetch(context.Background(), fetch.Request{URL: tt.url})
		if !errors.Is(err, tt.want) || fetch.IsRetryable(err) {
			t.Errorf("%q: %v", tt.url, err)
		}
	}
}

func TestConnectionsAreReused(t *testing.T) {
	site := testsite.Start(t)
	f := newFetcher(t, quick())
	var mu sync.Mutex
	var reused, fresh int
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			mu.Lock()
			defer mu.Unlock()
			if info.Reused {
				reused++
			} else {
				fresh++
			}
		},
	})
	for range 10 {
		if _, err := f.Fetch(ctx, fetch.Request{URL: site.URL("/page/1")}); err != nil {
			t.Fatal(err)
		}
	}
	// A redirect's connection is reused for its target too.
	if _, err := f.Fetch(ctx, fetch.Request{URL: site.URL("/redirect-chain/3")}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if fresh != 1 || reused != 13 {
		t.Fatalf("%d fresh and %d reused connections, want 1 and 13", fresh, reused)
	}
}

func TestNewFillsInTheDefaults(t *testing.T) {
	cfg := fetch.New(fetch.Config{}).Config()
	want := fetch.DefaultConfig()
	if cfg.Timeout != 10*time.Second || cfg.MaxSize != 10<<20 || cfg.MaxRedirects != 20 || cfg.UserAgent != fetch.DefaultUserAgent ||
		cfg.RobotsCacheTTL != time.Hour || cfg.MaxConns != 16 || cfg.MaxConnsPerHost != 8 ||
		!maps.Equal(cfg.DefaultHeaders, want.DefaultHeaders) || cfg.DisableRedirects || cfg.ObeyRobots || cfg.AllowPrivate {
		t.Fatalf("config %+v", cfg)
	}
	if want.RetryTimes != 3 || !slices.Equal(want.RetryHTTPCodes, []int{504}) {
		t.Fatalf("default retries %d %v", want.RetryTimes, want.RetryHTTPCodes)
	}
}

func TestIsRetryable(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"a timeout", fetch.ErrTimeout, true},
		{"a temporary DNS failure", &net.DNSError{Err: "server misbehaving", Name: "a.com", IsTemporary: true}, true},
		{"a DNS timeout", &net.DNSError{Err: "i/o timeout", Name: "a.com", IsTimeout: true}, true},
		{"an unknown host", &net.DNSError{Err: "no such host", Name: "a.com", IsNotFound: true}, false},
		{"a wrapped reset", &net.OpError{Op: "read", Err: &net.AddrError{}}, false},
		{"a reset connection", &net.OpError{Op: "read", Err: syscall.ECONNRESET}, true},
		{"an unreachable network", &url.Error{Op: "Get", URL: "x", Err: &net.OpError{Op: "dial", Err: syscall.ENETUNREACH}}, true},
		{"an unexpected EOF", io.ErrUnexpectedEOF, true},
		{"robots.txt", errors.Join(fetch.ErrRobotsDisallowed, io.EOF), false},
		{"a redirect loop", fetch.ErrRedirectLoop, false},
		{"something else", errors.New("malformed HTTP response"), false},
	}
	for _, tt := range tests {
		if got := fetch.IsRetryable(tt.err); got != tt.want {
			t.Errorf("%s: IsRetryable(%v) = %v", tt.name, tt.err, got)
		}
	}
}
