package fetch_test

import (
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/fetch"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/testsite"
)

func TestMethodBodyAndHeadersAreSentAsAsked(t *testing.T) {
	site := testsite.Start(t)
	f := newFetcher(t, quick())
	res := mustFetch(t, f, fetch.Request{
		URL: site.URL("/echo/0"), Method: "PUT", Body: []byte("a=1&b=2"),
		UserAgent: "FieldBot/1", Cookie: "field=1",
		Header: http.Header{"X-Token": {"t1"}, "Accept": {"text/plain"}, "User-Agent": {"HeaderBot/2"}, "Cookie": {"header=2"}},
	})
	body := string(res.Body)
	for _, want := range []string{
		`<pre id="method">PUT</pre>`, `<pre id="body">a=1&amp;b=2</pre>`,
		`data-name="X-Token">t1<`, `data-name="Accept">text/plain<`,
		`data-name="User-Agent">HeaderBot/2<`, `data-name="Cookie">header=2<`, `data-name="Content-Length">7<`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the site did not receive %s:\n%s", want, body)
		}
	}
	if res.RequestHeader.Get("Accept") != "text/plain" || len(res.RequestHeader["Accept"]) != 1 {
		t.Errorf("a header given replaces the default, sent once: %v", res.RequestHeader)
	}
}

func TestRedirectsChangeTheMethodAsBrowsersDo(t *testing.T) {
	site := testsite.Start(t)
	f := newFetcher(t, quick())
	for _, tc := range []struct {
		code, method, wantMethod, wantBody string
	}{
		{"302", "POST", "GET", ""}, {"301", "POST", "GET", ""}, {"303", "PUT", "GET", ""},
		{"303", "HEAD", "HEAD", ""}, {"307", "POST", "POST", "x=1"}, {"308", "PUT", "PUT", "x=1"},
	} {
		u := site.URL("/redirect?code=" + tc.code + "&to=" + url.QueryEscape("/echo/1"))
		res := mustFetch(t, f, fetch.Request{URL: u, Method: tc.method, Body: []byte("x=1")})
		hits := site.HitsFor("/echo/1")
		if got := hits[len(hits)-1].Method; got != tc.wantMethod {
			t.Errorf("%s after a %s: the target got %s, want %s", tc.method, tc.code, got, tc.wantMethod)
		}
		if tc.method != "HEAD" && !strings.Contains(string(res.Body), `<pre id="body">`+tc.wantBody+`</pre>`) {
			t.Errorf("%s after a %s: want body %q, got %s", tc.method, tc.code, tc.wantBody, res.Body)
		}
	}
}

func TestAuthorizationAndCookieHeadersStayOnTheRequestsHost(t *testing.T) {
	site := testsite.Start(t)
	other := testsite.StartAt(t, "127.0.0.2:0")
	f := newFetcher(t, quick())
	u := site.URL("/redirect?to=" + url.QueryEscape(other.URL("/echo/0")))
	res := mustFetch(t, f, fetch.Request{URL: u, Header: http.Header{"Authorization": {"Bearer x"}, "Cookie": {"c=1"}, "X-Any": {"1"}}})
	body := string(res.Body)
	if strings.Contains(body, "Bearer") || strings.Contains(body, "c=1") || !strings.Contains(body, `data-name="X-Any">1<`) {
		t.Errorf("the other host received:\n%s", body)
	}
}

func TestAJarKeepsTheCookiesOfEveryHop(t *testing.T) {
	site := testsite.Start(t)
	f := newFetcher(t, quick())
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	// Without the cookie the account is refused.
	if res := mustFetch(t, f, fetch.Request{URL: site.URL("/account/1"), Jar: jar}); res.Status != http.StatusForbidden {
		t.Fatalf("before login: %d", res.Status)
	}
	// The login's 303 sets the cookies; its target already gets them (the
	// Secure one too: loopback counts as secure, as in browsers).
	res := mustFetch(t, f, fetch.Request{URL: site.URL("/login"), Method: "POST", Jar: jar,
		Body: []byte("user=alice&password=secret"), Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}})
	if res.Status != http.StatusOK || res.URL != site.URL("/account/") || res.RequestHeader.Get("Cookie") != "auth=alice-token; secure_only=1" {
		t.Fatalf("login: %d at %s with cookie %q", res.Status, res.URL, res.RequestHeader.Get("Cookie"))
	}
	// Later requests get each cookie on its path only, never the expired
	// one; a Cookie of the request comes first.
	res = mustFetch(t, f, fetch.Request{URL: site.URL("/account/2"), Jar: jar, Cookie: "mine=1"})
	if res.Status != http.StatusOK || res.RequestHeader.Get("Cookie") != "mine=1; auth=alice-token; secure_only=1" {
		t.Fatalf("after login: %d with cookie %q", res.Status, res.RequestHeader.Get("Cookie"))
	}
	if res := mustFetch(t, f, fetch.Request{URL: site.URL("/echo/0"), Jar: jar}); res.RequestHeader.Get("Cookie") != "secure_only=1" {
		t.Fatalf("outside the cookie's path: %q", res.RequestHeader.Get("Cookie"))
	}
}
