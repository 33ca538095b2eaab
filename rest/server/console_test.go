package server_test

import (
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

// wantNotAllowed checks that each request ("METHOD /path") is answered 405
// with the Allow header given.
func (in *instance) wantNotAllowed(t testing.TB, allows map[string]string) {
	t.Helper()
	for request, allow := range allows {
		method, path, _ := strings.Cut(request, " ")
		if code, h, _ := in.raw(t, method, path, nil, nil); code != http.StatusMethodNotAllowed || h.Get("Allow") != allow {
			t.Errorf("%s: %d, Allow %q, want 405 and %q", request, code, h.Get("Allow"), allow)
		}
	}
}

// raw sends a request to the service and returns its status, headers and body.
func (in *instance) raw(t testing.TB, method, path string, body io.Reader, header http.Header) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, in.url+path, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, string(b)
}

func TestTheConsoleIsServedUnderUIWithItsAssetsUnlessDisabled(t *testing.T) {
	c, in := startOne(t)
	code, h, body := in.raw(t, http.MethodGet, "/ui/", nil, nil)
	if code != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/html") || !strings.Contains(body, "Kafka Monitors") {
		t.Fatalf("GET /ui/: %d %s\n%.300s", code, h.Get("Content-Type"), body)
	}
	if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
		t.Errorf("no content security policy: %q", csp)
	}
	for _, asset := range []string{"/ui/static/console.js", "/ui/static/console.css", "/ui/static/favicon.svg"} {
		if code, _, body := in.raw(t, http.MethodGet, asset, nil, nil); code != 200 || len(body) == 0 {
			t.Errorf("GET %s: %d, %d bytes", asset, code, len(body))
		}
	}
	if code, _, _ := in.raw(t, http.MethodGet, "/ui/nothing-here", nil, nil); code != http.StatusNotFound {
		t.Errorf("GET /ui/nothing-here: %d, want 404", code)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := noRedirect.Get(in.url + "/ui")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMovedPermanently || res.Header.Get("Location") != "/ui/" {
		t.Errorf("GET /ui: %d to %q, want 301 to /ui/", res.StatusCode, res.Header.Get("Location"))
	}
	// The API is unchanged beside it.
	if a := in.do(t, http.MethodGet, "/nothing-here", "", ""); a.Code != http.StatusNotFound || a.Body["status"] != "FAILURE" {
		t.Errorf("GET /nothing-here: %d %s", a.Code, a.Raw)
	}

	off := c.start(t, "UI_ENABLED=false")
	if a := off.do(t, http.MethodGet, "/ui/", "", ""); a.Code != http.StatusNotFound || a.Body["status"] != "FAILURE" {
		t.Errorf("GET /ui/ with UI_ENABLED false: %d %s, want the API's 404", a.Code, a.Raw)
	}
}

func TestTheConsoleTakesChangesOnlyFromItsOwnPages(t *testing.T) {
	c, in := startOne(t)
	form := url.Values{"url": {"http://example.com/"}, "appid": {"consoleapp"}, "crawlid": {"c1"}}.Encode()
	formType := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
	if code, _, body := in.raw(t, http.MethodPost, "/ui/submit", strings.NewReader(form), formType); code != http.StatusForbidden {
		t.Errorf("a POST without Origin: %d, want 403: %.200s", code, body)
	}
	evil := http.Header{"Content-Type": formType["Content-Type"], "Origin": {"http://evil.example"}}
	if code, _, _ := in.raw(t, http.MethodPost, "/ui/submit", strings.NewReader(form), evil); code != http.StatusForbidden {
		t.Errorf("a POST from another site: %d, want 403", code)
	}
	if n := c.count(t, "demo.incoming"); n != 0 {
		t.Fatalf("refused forms reached the incoming topic: %d messages", n)
	}
	own := http.Header{"Content-Type": formType["Content-Type"], "Origin": {in.url}}
	code, _, body := in.raw(t, http.MethodPost, "/ui/submit", strings.NewReader(form), own)
	if code != 200 || !strings.Contains(body, `id="sent"`) {
		t.Fatalf("the console's own POST: %d\n%.500s", code, body)
	}
	if n := c.count(t, "demo.incoming"); n != 1 {
		t.Fatalf("the submitted crawl is not on the incoming topic: %d messages", n)
	}
}

func TestAnAPITokenGuardsTheAPIAndTheConsoleButNotTheIndex(t *testing.T) {
	c, in := startOne(t, "API_TOKEN=s3cret")
	crawl := `{"url": "http://example.com/", "appid": "tokenapp", "crawlid": "t1"}`
	if a := in.post(t, "/feed", crawl); a.Code != http.StatusUnauthorized || a.Body["status"] != "FAILURE" {
		t.Errorf("/feed without the token: %d %s", a.Code, a.Raw)
	}
	if a := in.do(t, http.MethodGet, "/", "", ""); a.Code != 200 {
		t.Errorf("the index with a token set: %d %s", a.Code, a.Raw)
	}
	bearer := http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer s3cret"}}
	if code, _, body := in.raw(t, http.MethodPost, "/feed", strings.NewReader(crawl), bearer); code != 200 {
		t.Errorf("/feed with the token: %d %s", code, body)
	}
	if code, h, _ := in.raw(t, http.MethodGet, "/ui/", nil, nil); code != http.StatusUnauthorized || !strings.HasPrefix(h.Get("WWW-Authenticate"), "Basic") {
		t.Errorf("the console without credentials: %d %q", code, h.Get("WWW-Authenticate"))
	}
	req, _ := http.NewRequest(http.MethodGet, in.url+"/ui/", nil)
	req.SetBasicAuth("operator", "s3cret")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Errorf("the console with the token as password: %d", res.StatusCode)
	}
	harness.WaitFor(t, "the crawl sent with the token on the incoming topic", 5*time.Second, func() bool { return c.count(t, "demo.incoming") == 1 })
}

func TestEveryConsolePageInTheNavigationAnswersAndIsCurrentThere(t *testing.T) {
	_, in := startOne(t)
	link := regexp.MustCompile(`<a href="(/ui/[^"]*)"( aria-current="page")?>([^<]+)</a>`)
	nav := func(body string) (links []string, current string) {
		start, end := strings.Index(body, "<nav>"), strings.Index(body, "</nav>")
		if start < 0 || end < start {
			t.Fatalf("no navigation bar in\n%.500s", body)
		}
		for _, m := range link.FindAllStringSubmatch(body[start:end], -1) {
			links = append(links, m[1]+" "+m[3])
			if m[2] != "" {
				current += m[1]
			}
		}
		return links, current
	}
	_, _, overview := in.raw(t, http.MethodGet, "/ui/", nil, nil)
	links, _ := nav(overview)
	want := []string{"/ui/ Overview", "/ui/crawls Crawls", "/ui/submit Submit", "/ui/try Try", "/ui/domains Domains", "/ui/live Live", "/ui/api API"}
	if !slices.Equal(links, want) {
		t.Fatalf("navigation %q, want %q", links, want)
	}
	for _, l := range links {
		path, _, _ := strings.Cut(l, " ")
		code, _, body := in.raw(t, http.MethodGet, path, nil, nil)
		if _, current := nav(body); code != 200 || current != path {
			t.Errorf("GET %s: %d, current entry %q", path, code, current)
		}
	}
	// A crawl's page is shown under Crawls.
	if _, current := nav(func() string {
		_, _, b := in.raw(t, http.MethodGet, "/ui/crawl?spiderid=link&appid=a&crawlid=c", nil, nil)
		return b
	}()); current != "/ui/crawls" {
		t.Errorf("a crawl's page has %q current, want /ui/crawls", current)
	}
}
