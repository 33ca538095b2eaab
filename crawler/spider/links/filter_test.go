package links_test

import (
	"maps"
	"reflect"
	"strings"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider/links"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
)

func TestFilterAllowed(t *testing.T) {
	tests := []struct {
		name    string
		req     crawlrequest.Request
		allowed []string
		denied  []string
	}{
		{"no filter follows everything but the default extensions", crawlrequest.Request{},
			[]string{"http://a.com/", "https://b.org/x.html", "http://c.net/pdf", "http://c.net/.png", "http://c.net/x.png/"},
			[]string{"http://a.com/f.pdf", "http://a.com/F.PDF", "http://a.com/i.jpg?size=2", "http://a.com/a.tar.gz",
				"http://a.com/s.css;v=1", "http://a.com/m.MP4", "http://a.com/a.zip"}},
		{"allowed domains take subdomains and any port", crawlrequest.Request{AllowedDomains: []string{"Example.com", "other.org."}},
			[]string{"http://example.com/", "http://www.example.com/", "http://a.b.EXAMPLE.com:8080/", "https://other.org/x",
				"http://example.com./"},
			[]string{"http://notexample.com/", "http://example.com.evil.org/", "http://example.org/", "http://org/"}},
		{"an allowed domain with a port needs that port", crawlrequest.Request{AllowedDomains: []string{"127.0.0.1:8080"}},
			[]string{"http://127.0.0.1:8080/a"},
			[]string{"http://127.0.0.1/a", "http://127.0.0.1:8081/a"}},
		{"any allow_regex may match, anywhere in the URL", crawlrequest.Request{AllowRegex: []string{`/news/`, `^https://`}},
			[]string{"http://a.com/news/1", "https://a.com/other"},
			[]string{"http://a.com/sports/1"}},
		{"deny_regex wins over allow_regex", crawlrequest.Request{AllowRegex: []string{`/news/`}, DenyRegex: []string{`\?page=\d+`}},
			[]string{"http://a.com/news/1"},
			[]string{"http://a.com/news/1?page=2", "http://a.com/blog/"}},
		{"deny_extensions replaces the default list, either case, dot or not", crawlrequest.Request{DenyExtensions: []string{"HTML", ".Php"}},
			[]string{"http://a.com/f.pdf", "http://a.com/i.jpg", "http://a.com/dir/"},
			[]string{"http://a.com/x.html", "http://a.com/x.HTML", "http://a.com/index.php?x=1"}},
		{"an empty deny_extensions denies no extension", crawlrequest.Request{DenyExtensions: []string{}},
			[]string{"http://a.com/f.pdf", "http://a.com/i.jpg"}, nil},
		{"all filters together", crawlrequest.Request{AllowedDomains: []string{"a.com"}, AllowRegex: []string{"/keep"},
			DenyRegex: []string{"secret"}},
			[]string{"http://www.a.com/keep/1"},
			[]string{"http://b.com/keep/1", "http://a.com/drop", "http://a.com/keep/secret", "http://a.com/keep/x.pdf"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := links.NewFilter(&tc.req)
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range tc.allowed {
				if !f.Allowed(u) {
					t.Errorf("%s denied", u)
				}
			}
			for _, u := range tc.denied {
				if f.Allowed(u) {
					t.Errorf("%s allowed", u)
				}
			}
		})
	}
}

func TestInvalidRegexesAreReportedNotFollowed(t *testing.T) {
	r := &crawlrequest.Request{AllowRegex: []string{"(unclosed", "fine"}, DenyRegex: []string{`(?<=lookbehind)x`}}
	if f, err := links.NewFilter(r); err == nil || f != nil {
		t.Fatalf("NewFilter = %v, %v", f, err)
	}
	got, _, err := links.Follow(htmlPage(`<a href="/fine">x</a>`), r)
	if err == nil || len(got) != 0 {
		t.Fatalf("Follow = %v, %v", got, err)
	}
	for _, want := range []string{"allow_regex", "(unclosed", "deny_regex", "(?<=lookbehind)x"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

func TestSelectCanonicalizesAndDeduplicates(t *testing.T) {
	f, err := links.NewFilter(&crawlrequest.Request{})
	if err != nil {
		t.Fatal(err)
	}
	got, refused := f.Select([]spider.Link{
		{URL: "http://A.com/x?b=2&a=1", Text: "first"},
		{URL: "http://a.com/x?a=1&b=2", Text: "same page"},
		{URL: "http://a.com/y.pdf", Text: "denied"},
		{URL: "http://a.com/" + strings.Repeat("z", links.MaxURLLength), Text: "too long"},
		{URL: "http://a.com/caf%c3%a9", Text: "café"},
	})
	want := []spider.Link{{URL: "http://a.com/x?a=1&b=2", Text: "first"}, {URL: "http://a.com/caf%C3%A9", Text: "café"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q", got)
	}
	if !maps.Equal(refused, map[ledger.Reason]int{ledger.RefusedExtension: 1, ledger.RefusedInvalidURL: 1}) {
		t.Fatalf("refused %v", refused)
	}
}

func TestFollowCountsTheLinksItLeavesOutByReason(t *testing.T) {
	r := &crawlrequest.Request{
		AllowedDomains: []string{"example.com"}, AllowRegex: []string{"/keep/", "/deny/"}, DenyRegex: []string{"/deny/"},
	}
	page := htmlPage(`
		<a href="/keep/1">followed</a> <a href="/keep/1#again">the same page again</a>
		<a href="http://other.org/keep/2">off the allowed domains</a> <a href="http://other.org/keep/2">twice</a>
		<a href="/elsewhere">no allow_regex matches</a> <a href="/deny/3">deny_regex matches</a>
		<a href="/keep/4.png">a denied extension</a> <a href="http://[::1">unparseable</a>`)
	got, refused, err := links.Follow(page, r)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !strings.HasSuffix(got[0].URL, "/keep/1") {
		t.Fatalf("followed %v", got)
	}
	want := map[ledger.Reason]int{ledger.RefusedOffDomain: 1, ledger.RefusedRegex: 2, ledger.RefusedExtension: 1}
	if !maps.Equal(refused, want) {
		t.Fatalf("refused %v, want %v", refused, want)
	}
}

func TestOnlyMarkupHasLinks(t *testing.T) {
	body := `<html><a href="/x">x</a></html>`
	tests := []struct {
		contentType string
		want        int
	}{
		{"text/html", 1},
		{"application/xhtml+xml; charset=utf-8", 1},
		{"text/plain", 1},
		{"TEXT/HTML;;bad params", 1},
		{"", 1}, // sniffed as HTML
		{"image/png", 0},
		{"application/pdf", 0},
		{"application/json", 0},
		{"application/octet-stream", 0},
	}
	for _, tc := range tests {
		h := map[string][]string{}
		if tc.contentType != "" {
			h["Content-Type"] = []string{tc.contentType}
		}
		page := spider.NewPage(&spider.Response{URL: pageURL, Status: 200, Header: h, Body: []byte(body)})
		got, _, err := links.Follow(page, &crawlrequest.Request{})
		if err != nil || len(got) != tc.want || got == nil {
			t.Errorf("%q: %d links (%v), want %d", tc.contentType, len(got), err, tc.want)
		}
	}
	// Without a Content-Type, binary content is not scanned.
	png := spider.NewPage(&spider.Response{URL: pageURL, Status: 200, Body: []byte("\x89PNG\r\n\x1a\n<a href=\"/x\">")})
	if got, _, _ := links.Follow(png, &crawlrequest.Request{}); len(got) != 0 {
		t.Errorf("links in a PNG: %v", got)
	}
}

// TestFollowSharesAFilterPerFilterFields: requests with the same filter
// fields get one Filter; any field differing (DenyExtensions nil, the
// default list, or empty, none; strings split differently) gets its own,
// which filters as its request says; an invalid regex stays an error.
func TestFollowSharesAFilterPerFilterFields(t *testing.T) {
	base := crawlrequest.Request{URL: "http://a.example/", AllowedDomains: []string{"a.example"}, AllowRegex: []string{"/x/"}}
	f1, err := links.CachedFilter(&base)
	if err != nil {
		t.Fatal(err)
	}
	same := base
	same.URL, same.AllowRegex = "http://a.example/other", []string{"/x/"}
	if f2, _ := links.CachedFilter(&same); f2 != f1 {
		t.Fatal("a request with the same filter fields got another Filter")
	}
	noExt := base
	noExt.DenyExtensions = []string{}
	split := base
	split.AllowRegex = []string{"/x", "/"}
	deny := base
	deny.DenyRegex = []string{"/x/"}
	for name, r := range map[string]*crawlrequest.Request{"empty deny_extensions": &noExt, "allow_regex split": &split, "deny_regex": &deny} {
		f, err := links.CachedFilter(r)
		if err != nil {
			t.Fatal(err)
		}
		if f == f1 {
			t.Errorf("%s: shares the Filter of other filter fields", name)
		}
	}
	if f, _ := links.CachedFilter(&noExt); !f.Allowed("http://a.example/x/doc.pdf") {
		t.Error("empty deny_extensions: doc.pdf refused")
	}
	if !f1.Allowed("http://a.example/x/page") || f1.Allowed("http://a.example/x/doc.pdf") {
		t.Error("the default deny_extensions: not applied")
	}
	if f, _ := links.CachedFilter(&deny); f.Allowed("http://a.example/x/page") {
		t.Error("deny_regex: not applied")
	}
	bad := base
	bad.AllowRegex = []string{"("}
	for range 2 {
		if f, err := links.CachedFilter(&bad); err == nil || f != nil {
			t.Fatalf("invalid allow_regex: %v, %v", f, err)
		}
	}
}
