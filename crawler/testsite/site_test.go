package testsite_test

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/testsite"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

// client never uses a proxy and never decompresses, so tests see the wire.
var client = &http.Client{
	Transport: &http.Transport{DisableCompression: true},
	CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	},
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func get(t *testing.T, rawURL string, header ...string) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", rawURL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: read body: %v", rawURL, err)
	}
	return response{resp.StatusCode, resp.Header, body}
}

// extractLinks parses a page as a browser would (tolerating broken HTML and
// any encoding) and returns its links resolved against base.
func extractLinks(t *testing.T, base string, body []byte, contentType string) []string {
	t.Helper()
	r, err := charset.NewReader(bytes.NewReader(body), contentType)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := html.Parse(r)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := url.Parse(base)
	var out []string
	for n := range doc.Descendants() {
		if n.Type != html.ElementNode || n.Data != "a" {
			continue
		}
		for _, a := range n.Attr {
			if a.Key == "href" {
				u, err := b.Parse(a.Val)
				if err != nil {
					t.Fatalf("bad href %q", a.Val)
				}
				out = append(out, u.String())
			}
		}
	}
	return out
}

func TestEveryPageHoldsTheLinksTheModelPredicts(t *testing.T) {
	site := testsite.Start(t, testsite.WithPages(2), testsite.WithTree(2, 2))
	peer := testsite.StartAt(t, "127.0.0.2:0")
	site.SetPeers(peer.URL("/"))
	paths := []string{"/", "/page/1", "/page/2/1", "/page/1/2", "/allow/1", "/deny/2", "/private/1", "/special",
		"/malformed", "/latin1", "/meta-charset", "/shift-jis", "/binary", "/set-cookie", "/status/404",
		"/status/500", "/slow/1", "/redirect-chain/0"}
	for _, p := range paths {
		t.Run(p, func(t *testing.T) {
			resp := get(t, site.URL(p))
			got := extractLinks(t, site.URL(p), resp.body, resp.header.Get("Content-Type"))
			want := site.Links(p)
			if p == "/malformed" {
				// An HTML5 parser moves a link out of the broken table.
				slices.Sort(got)
				slices.Sort(want)
			}
			if !slices.Equal(got, want) || len(want) == 0 {
				t.Fatalf("links on %s:\n got %q\nwant %q", p, got, want)
			}
		})
	}
}

func TestTheRootLinksToTreesDuplicatesLeavesFilesAndPeers(t *testing.T) {
	site := testsite.Start(t)
	site.SetPeers("http://127.0.0.2:9/")
	u := site.URL
	want := []string{u("/page/1"), u("/page/2"), u("/page/3"), u("/page/1"), u("/#top"),
		u("/allow/1"), u("/allow/2"), u("/deny/1"), u("/deny/2"), u("/private/1"),
		u("/files/report.pdf"), u("/files/photo.jpg"), u("/files/archive.zip"), u("/static/style.css"),
		u("/files/IMAGE.PNG"), "http://127.0.0.2:9/"}
	if got := site.Links("/"); !slices.Equal(got, want) {
		t.Fatalf("root links\n got %q\nwant %q", got, want)
	}
	// A tree page: parent (absolute), children with the first twice, itself.
	want = []string{u("/page/2"), u("/page/2/3/1"), u("/page/2/3/2"), u("/page/2/3/3"), u("/page/2/3/1"), u("/page/2/3#top")}
	if got := site.Links("/page/2/3"); !slices.Equal(got, want) {
		t.Fatalf("tree links\n got %q\nwant %q", got, want)
	}
	if got := site.Links("/page/2/3/1"); !slices.Equal(got, []string{u("/page/2/3"), u("/page/2/3/1#top")}) {
		t.Fatalf("leaf links %q", got)
	}
	for _, p := range testsite.FilePaths() {
		if resp := get(t, u(p)); resp.status != http.StatusOK || len(resp.body) == 0 || strings.HasPrefix(resp.header.Get("Content-Type"), "text/html") {
			t.Errorf("%s: %d %q", p, resp.status, resp.header.Get("Content-Type"))
		}
	}
}

func TestPagesOutsideTheTreeAreNotFound(t *testing.T) {
	site := testsite.Start(t, testsite.WithPages(2), testsite.WithTree(2, 2))
	for _, p := range []string{"/page/0", "/page/3", "/page/1/3", "/page/1/1/1", "/page/01", "/page/1/", "/nope", "/redirect"} {
		if resp := get(t, site.URL(p)); resp.status != http.StatusNotFound {
			t.Errorf("%s: status %d, want 404", p, resp.status)
		}
	}
	if resp := get(t, site.URL("/page/2/2")); resp.status != http.StatusOK {
		t.Errorf("/page/2/2: status %d", resp.status)
	}
}

func TestReachableIsWhatABreadthFirstCrawlRequests(t *testing.T) {
	site := testsite.Start(t, testsite.WithPages(2), testsite.WithTree(2, 3))
	u := site.URL
	onlyTree := func(link string) bool { return strings.Contains(link, "/page/") }
	tests := []struct {
		name     string
		seed     string
		maxDepth int
		follow   func(string) bool
		want     []string
	}{
		{"maxdepth 0 is the seed alone", u("/"), 0, nil, []string{u("/")}},
		{"maxdepth 1 of the tree is its roots", u("/"), 1, onlyTree, []string{u("/"), u("/page/1"), u("/page/2")}},
		{"maxdepth 2 adds the second level", u("/"), 2, onlyTree, []string{u("/"), u("/page/1"), u("/page/1/1"), u("/page/1/2"),
			u("/page/2"), u("/page/2/1"), u("/page/2/2")}},
		{"a redirect yields its target's links", u("/redirect-chain/2"), 1, nil, []string{u("/"), u("/redirect-chain/2")}},
		{"a redirect loop yields nothing", u("/loop/a"), 3, nil, []string{u("/loop/a")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := testsite.Reachable(tt.seed, tt.maxDepth, tt.follow, site); !slices.Equal(got, tt.want) {
				t.Fatalf("\n got %q\nwant %q", got, tt.want)
			}
		})
	}
	// The whole tree, everything "/" links to and the peer's root and tree.
	peer := testsite.StartAt(t, "127.0.0.2:0", testsite.WithPages(1), testsite.WithTree(1, 1))
	site.SetPeers(peer.URL("/"))
	peer.SetPeers(site.URL("/"))
	got := testsite.Reachable(u("/"), 10, nil, site, peer)
	var count int
	for _, p := range got {
		if strings.HasPrefix(p, peer.URL("/")) {
			count++
		}
	}
	// The peer's root, its one tree page, its leaves and files.
	if wantPeer := 1 + 1 + 5 + len(testsite.FilePaths()); count != wantPeer {
		t.Errorf("%d peer URLs, want %d: %q", count, wantPeer, got)
	}
	if mine := len(got) - count; mine != 1+2*(1+2+4)+5+len(testsite.FilePaths()) {
		t.Errorf("%d URLs on the site: %q", mine, got)
	}
}

func TestStatusPages(t *testing.T) {
	site := testsite.Start(t)
	for _, code := range []int{200, 403, 404, 500, 503, 504} {
		resp := get(t, site.URL(fmt.Sprintf("/status/%d", code)))
		if resp.status != code || !bytes.Contains(resp.body, []byte(http.StatusText(code))) {
			t.Errorf("/status/%d: %d %s", code, resp.status, resp.body)
		}
	}
	if resp := get(t, site.URL("/status/99")); resp.status != http.StatusBadRequest {
		t.Errorf("/status/99: %d", resp.status)
	}
}

func TestSlowAndHangingPagesWaitAndStopWithTheClientOrTheSite(t *testing.T) {
	site, err := testsite.New("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = site.Close() })
	start := time.Now()
	if resp := get(t, site.URL("/slow/50")); resp.status != http.StatusOK || time.Since(start) < 50*time.Millisecond {
		t.Fatalf("/slow/50: %d after %v", resp.status, time.Since(start))
	}
	// A client that gives up ends the hang.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, site.URL("/hang"), nil)
	if _, err := client.Do(req); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("/hang answered: %v", err)
	}
	// Closing the site ends hanging requests and Close returns.
	errs := make(chan error, 2)
	for _, p := range []string{"/hang", "/hang-body"} {
		go func() {
			resp, err := client.Get(site.URL(p))
			if err == nil {
				_, err = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			errs <- err
		}()
	}
	waitFor(t, func() bool { return len(site.HitsFor("/hang")) == 2 && len(site.HitsFor("/hang-body")) == 1 })
	if err := site.Close(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := <-errs; err == nil {
			t.Error("a hanging page answered in full")
		}
	}
}

func TestRedirects(t *testing.T) {
	site := testsite.Start(t)
	tests := []struct{ path, location string }{
		{"/redirect?to=/page/1", "/page/1"},
		{"/redirect?to=http://127.0.0.2:1/x&code=301", "http://127.0.0.2:1/x"},
		{"/redirect-chain/3", "2"},
		{"/redirect-chain/1", "0"},
		{"/loop/a", "b"},
		{"/loop/b", "/loop/a"},
		{"/set-cookie?next=/echo-headers", "/echo-headers"},
	}
	for _, tt := range tests {
		resp := get(t, site.URL(tt.path))
		if resp.status/100 != 3 || resp.header.Get("Location") != tt.location {
			t.Errorf("%s: %d Location %q, want %q", tt.path, resp.status, resp.header.Get("Location"), tt.location)
		}
	}
	if resp := get(t, site.URL("/redirect?to=/&code=307")); resp.status != http.StatusTemporaryRedirect {
		t.Errorf("code=307 gave %d", resp.status)
	}
	if resp := get(t, site.URL("/redirect-chain/0")); resp.status != http.StatusOK {
		t.Errorf("end of chain: %d", resp.status)
	}
}

func TestRobotsTxt(t *testing.T) {
	site := testsite.Start(t)
	if resp := get(t, site.URL("/robots.txt")); resp.status != 200 || string(resp.body) != testsite.DefaultRobots {
		t.Fatalf("default robots: %d %q", resp.status, resp.body)
	}
	custom := testsite.Start(t, testsite.WithRobots(http.StatusInternalServerError, "oops"))
	if resp := get(t, custom.URL("/robots.txt")); resp.status != 500 || string(resp.body) != "oops" {
		t.Fatalf("custom robots: %d %q", resp.status, resp.body)
	}
	if resp := get(t, site.URL("/private/anything")); resp.status != 200 {
		t.Fatalf("private page: %d", resp.status)
	}
}

func TestCharsetPagesDecodeToTheirText(t *testing.T) {
	site := testsite.Start(t)
	tests := []struct{ path, contentType, encoding, text string }{
		{"/latin1", "text/html; charset=ISO-8859-1", "windows-1252", testsite.Latin1Text},
		{"/meta-charset", "text/html", "windows-1252", testsite.MetaCharsetText},
		{"/shift-jis", "text/html", "shift_jis", testsite.ShiftJISText},
	}
	for _, tt := range tests {
		resp := get(t, site.URL(tt.path))
		if got := resp.header.Get("Content-Type"); got != tt.contentType {
			t.Errorf("%s: Content-Type %q", tt.path, got)
		}
		if utf8.Valid(resp.body) {
			t.Errorf("%s: body is valid UTF-8, want another encoding", tt.path)
		}
		_, name, _ := charset.DetermineEncoding(resp.body, tt.contentType)
		if name != tt.encoding {
			t.Errorf("%s: encoding %q, want %q", tt.path, name, tt.encoding)
		}
		r, _ := charset.NewReader(bytes.NewReader(resp.body), tt.contentType)
		text, _ := io.ReadAll(r)
		if !strings.Contains(string(text), tt.text) {
			t.Errorf("%s decodes to %q, want it to hold %q", tt.path, text, tt.text)
		}
	}
	if resp := get(t, site.URL("/binary")); utf8.Valid(resp.body) || !strings.Contains(resp.header.Get("Content-Type"), "utf-8") {
		t.Errorf("/binary: %q %q", resp.header.Get("Content-Type"), resp.body)
	}
}

func TestHugeBodiesAreStreamedAtTheirSize(t *testing.T) {
	site := testsite.Start(t)
	const n = 3<<20 + 17
	for _, p := range []string{fmt.Sprintf("/huge/%d", n), fmt.Sprintf("/huge/%d?chunked=1", n)} {
		resp := get(t, site.URL(p))
		if len(resp.body) != n || !bytes.Equal(resp.body, testsite.HugePrefix(n)) {
			t.Fatalf("%s: %d bytes", p, len(resp.body))
		}
		if chunked := strings.Contains(p, "chunked"); chunked != (resp.header.Get("Content-Length") == "") {
			t.Errorf("%s: Content-Length %q", p, resp.header.Get("Content-Length"))
		}
	}
}

func TestCompressedPages(t *testing.T) {
	site := testsite.Start(t)
	for _, p := range []string{"/gzip", "/deflate"} {
		resp := get(t, site.URL(p), "Accept-Encoding", "gzip,deflate")
		var r io.Reader
		var err error
		if p == "/gzip" {
			r, err = gzip.NewReader(bytes.NewReader(resp.body))
		} else {
			r, err = zlib.NewReader(bytes.NewReader(resp.body))
		}
		if err != nil || resp.header.Get("Content-Encoding") != p[1:] {
			t.Fatalf("%s: %v, Content-Encoding %q", p, err, resp.header.Get("Content-Encoding"))
		}
		text, _ := io.ReadAll(r)
		if !strings.Contains(string(text), testsite.CompressedPageText) {
			t.Fatalf("%s decompresses to %q", p, text)
		}
	}
	if resp := get(t, site.URL("/bad-gzip")); string(resp.body) != testsite.BadGzipBody || resp.header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("/bad-gzip: %q", resp.body)
	}
}

func TestCookiesAndEchoedHeaders(t *testing.T) {
	site := testsite.Start(t)
	resp := get(t, site.URL("/set-cookie"))
	if got := resp.header.Get("Set-Cookie"); got != testsite.CookieName+"="+testsite.CookieValue+"; Path=/" {
		t.Fatalf("Set-Cookie %q", got)
	}
	if got := get(t, site.URL("/set-cookie?name=a&value=b")).header.Get("Set-Cookie"); got != "a=b; Path=/" {
		t.Fatalf("Set-Cookie %q", got)
	}
	resp = get(t, site.URL("/echo-headers?x=1"), "User-Agent", "agent/1", "Cookie", "a=b")
	var echo testsite.Echo
	if err := json.Unmarshal(resp.body, &echo); err != nil {
		t.Fatal(err)
	}
	if echo.Method != "GET" || echo.Path != "/echo-headers?x=1" || echo.Host != site.Addr() ||
		echo.Header.Get("User-Agent") != "agent/1" || echo.Header.Get("Cookie") != "a=b" {
		t.Fatalf("echo %+v", echo)
	}
}

func TestHitLog(t *testing.T) {
	site := testsite.Start(t, testsite.WithMaxHits(50))
	get(t, site.URL("/page/1?q=1"), "User-Agent", "agent/1", "Cookie", "a=b")
	hits := site.HitsFor("/page/1")
	if len(hits) != 1 {
		t.Fatalf("hits %+v", site.Hits())
	}
	h := hits[0]
	if h.Method != "GET" || h.Host != site.Addr() || h.Query != "q=1" || h.UserAgent != "agent/1" || h.Cookie != "a=b" ||
		time.Since(h.Time) > time.Minute {
		t.Fatalf("hit %+v", h)
	}

	// Concurrent requests are all recorded; the log keeps the latest 50.
	var wg sync.WaitGroup
	for i := range 120 {
		wg.Go(func() { get(t, site.URL(fmt.Sprintf("/page/%d", i%3+1))) })
	}
	wg.Wait()
	if n := len(site.Hits()); n != 50 {
		t.Fatalf("%d hits kept, want 50", n)
	}

	// /__hits serves the log to other processes and is not logged itself.
	site.Reset()
	get(t, site.URL("/page/2"))
	get(t, site.URL("/page/3"))
	var served []testsite.Hit
	if err := json.Unmarshal(get(t, site.URL("/__hits?path=/page/3")).body, &served); err != nil {
		t.Fatal(err)
	}
	if len(served) != 1 || served[0].Path != "/page/3" {
		t.Fatalf("served %+v", served)
	}
	req, _ := http.NewRequest(http.MethodDelete, site.URL("/__hits"), nil)
	resp, err := client.Do(req)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE /__hits: %v %v", resp, err)
	}
	resp.Body.Close()
	if hits := site.Hits(); len(hits) != 0 {
		t.Fatalf("after reset: %+v", hits)
	}
}

func TestExtraHandlersComeFirst(t *testing.T) {
	site := testsite.Start(t, testsite.WithHandler("/robots.txt", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "custom")
	})))
	if resp := get(t, site.URL("/robots.txt")); string(resp.body) != "custom" {
		t.Fatalf("robots %q", resp.body)
	}
	if len(site.HitsFor("/robots.txt")) != 1 {
		t.Fatal("extra handler's request not logged")
	}
	if resp := get(t, site.URL("/page/1")); resp.status != 200 {
		t.Fatalf("built-in page: %d", resp.status)
	}
}

func TestBrokenConnections(t *testing.T) {
	site := testsite.Start(t)
	resp, err := client.Get(site.URL("/truncated-body"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("truncated body read: %v", err)
	}
	if _, err := client.Get(site.URL("/reset")); err == nil {
		t.Fatal("/reset answered")
	}
}

func TestOptionsAreValidated(t *testing.T) {
	for _, opts := range [][]testsite.Option{
		{testsite.WithPages(0)}, {testsite.WithTree(0, 1)}, {testsite.WithTree(1, 0)},
		{testsite.WithRobots(42, "")}, {testsite.WithMaxHits(0)},
	} {
		if s, err := testsite.New("127.0.0.1:0", opts...); err == nil {
			s.Close()
			t.Errorf("options accepted")
		}
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	harness.WaitFor(t, "the condition", 10*time.Second, cond)
}

func TestBombsInflateToTheirSizeFromAFewBytes(t *testing.T) {
	site := testsite.Start(t)
	for _, tt := range []struct {
		encoding string
		open     func(io.Reader) (io.Reader, error)
	}{
		{"gzip", func(r io.Reader) (io.Reader, error) { return gzip.NewReader(r) }},
		{"deflate", func(r io.Reader) (io.Reader, error) { return zlib.NewReader(r) }},
	} {
		const mib = 8
		resp := get(t, site.URL(fmt.Sprintf("/bomb/%s/%d", tt.encoding, mib)))
		if resp.status != http.StatusOK || resp.header.Get("Content-Encoding") != tt.encoding || len(resp.body) > mib<<20/500 ||
			!bytes.Equal(resp.body, testsite.Bomb(tt.encoding, mib)) {
			t.Fatalf("%s bomb: %d, %d bytes, Content-Encoding %q", tt.encoding, resp.status, len(resp.body), resp.header.Get("Content-Encoding"))
		}
		zr, err := tt.open(bytes.NewReader(resp.body))
		if err != nil {
			t.Fatal(err)
		}
		var zeros, other int64
		buf := make([]byte, 64<<10)
		for {
			n, err := zr.Read(buf)
			for _, c := range buf[:n] {
				if c == 0 {
					zeros++
				} else {
					other++
				}
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s bomb: %v", tt.encoding, err)
			}
		}
		if zeros != mib<<20 || other != 0 {
			t.Fatalf("%s bomb inflates to %d zero bytes and %d others, want %d zero bytes", tt.encoding, zeros, other, mib<<20)
		}
	}
	for _, p := range []string{"/bomb/gzip/0", "/bomb/gzip/1025", "/bomb/brotli/1", "/bomb/gzip/x"} {
		if resp := get(t, site.URL(p)); resp.status != http.StatusBadRequest {
			t.Errorf("%s: %d", p, resp.status)
		}
	}
}

func TestDripSendsABodyThatNeverEnds(t *testing.T) {
	site := testsite.Start(t)
	resp, err := client.Get(site.URL("/drip?every=5"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.ContentLength != -1 {
		t.Fatalf("Content-Length %d", resp.ContentLength)
	}
	// Twenty bytes arrive one by one; the client then leaves and the handler ends.
	buf := make([]byte, 1)
	for i := range 20 {
		if _, err := io.ReadFull(resp.Body, buf); err != nil || buf[0] != '.' {
			t.Fatalf("byte %d: %q, %v", i, buf, err)
		}
	}
	resp.Body.Close()
	if err := site.Close(); err != nil {
		t.Fatal(err)
	}
	if resp := get(t, testsite.Start(t).URL("/drip?every=0")); resp.status != http.StatusBadRequest {
		t.Fatalf("every=0: %d", resp.status)
	}
}

func TestAHeldPathWaitsForItsReleaseThenServesAsUsual(t *testing.T) {
	hold := testsite.NewHold()
	site := testsite.Start(t, testsite.WithHold("/page/1", hold))
	answered := make(chan response, 1)
	go func() {
		resp, err := client.Get(site.URL("/page/1"))
		if err != nil {
			t.Error(err)
			answered <- response{}
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		answered <- response{resp.StatusCode, resp.Header, body}
	}()
	select {
	case <-hold.Arrived():
	case <-time.After(30 * time.Second):
		t.Fatal("the held request never arrived")
	}
	if got := get(t, site.URL("/page/2")); got.status != http.StatusOK { // other paths are not held
		t.Fatalf("/page/2: %d", got.status)
	}
	select {
	case r := <-answered:
		t.Fatalf("the held request was answered before its release: %d", r.status)
	default:
	}
	hold.Release()
	got := <-answered
	hold.Release() // again: nothing
	// Not held any more: the page as built in.
	want := get(t, site.URL("/page/1"))
	if want.status != http.StatusOK || got.status != want.status || !bytes.Equal(got.body, want.body) {
		t.Fatalf("released: %d %q; the page as built in: %d %q", got.status, got.body, want.status, want.body)
	}
	if n := len(site.HitsFor("/page/1")); n != 2 {
		t.Fatalf("%d hits of /page/1 in the log, want 2", n)
	}
}

func TestAHeldRequestEndsWhenTheSiteCloses(t *testing.T) {
	hold := testsite.NewHold()
	site, err := testsite.New("127.0.0.1:0", testsite.WithHold("/page/1", hold))
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 1)
	go func() {
		resp, err := client.Get(site.URL("/page/1"))
		if err == nil {
			resp.Body.Close()
		}
		errs <- err
	}()
	select {
	case <-hold.Arrived():
	case <-time.After(30 * time.Second):
		t.Fatal("the held request never arrived")
	}
	if err := site.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errs; err == nil {
		t.Fatal("a held request was answered though never released")
	}
}
