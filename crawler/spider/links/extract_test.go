package links_test

import (
	"net/url"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider/links"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
)

const pageURL = "http://example.com/dir/page.html"

// tricky is a page of awkward links. Scrapy 2.8's LinkExtractor with
// canonicalize=True (the original's setting) gives the same URLs for it,
// in the same order, except ftp: (not followed here); its texts are the
// same before whitespace is collapsed.
const tricky = `<html><head><title>T</title>
<base href="/base/dir/">
</head><body>
<a href="rel.html">Relative</a>
<a href="/abs/path?b=2&a=1#frag">Absolute   path
 with newline</a>
<a href="//other.example.org/proto">Protocol relative</a>
<a href="http://Example.COM:8080/Port">Port</a>
<a href="javascript:alert(1)">JS</a>
<a href="mailto:someone@example.com">Mail</a>
<a href="tel:+123">Tel</a>
<a href="data:text/html,hi">Data</a>
<a href="#top">Fragment only</a>
<a href="  spaced.html  ">Spaced</a>
<a href="new
line.html">Newline in href</a>
<a href="a&amp;b.html?x=1&amp;y=2">Entities &amp; more &lt;3</a>
<a href="caf&eacute;.html">Café</a>
<a href="rel.html">Duplicate of relative</a>
<a href="../up.html">Up</a>
<a href="file.PDF">PDF</a>
<a href="image.jpg?size=2">Image</a>
<a href="archive.tar.gz">Tarball</a>
<a href="page.html;jsessionid=1">Params</a>
<area href="area.html" alt="Area">
<map><area href="/map.html"></map>
<a>No href</a>
<a href="">Empty</a>
<a href="http://bücher.de/x">IDN</a>
<a href="search?q=a b&amp;r=%zz">Spaces and bad escape</a>
<A HREF="UPPER.html">Upper</A>
<a href="nested.html">outer <span>inner <i>deep</i></span> tail</a>
<noscript><a href="noscript.html">NoScript</a></noscript>
<script>var s = '<a href="script.html">in script</a>';</script>
<a href="https://secure.example.com/">Secure</a>
<a href="ftp://ftp.example.com/file">FTP</a>
<a href="unclosed.html">Unclosed <a href="after.html">After</a>
</body></html>`

func htmlPage(body string) *spider.Page {
	return spider.NewPage(&spider.Response{
		Request: &crawlrequest.Request{URL: pageURL},
		URL:     pageURL,
		Status:  200,
		Header:  map[string][]string{"Content-Type": {"text/html; charset=utf-8"}},
		Body:    []byte(body),
	})
}

func follow(t *testing.T, body string, r *crawlrequest.Request) []spider.Link {
	t.Helper()
	got, _, err := links.Follow(htmlPage(body), r)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestFollowOnTrickyHTMLMatchesScrapy(t *testing.T) {
	want := []spider.Link{
		{URL: "http://example.com/base/dir/rel.html", Text: "Relative"},
		{URL: "http://example.com/abs/path?a=1&b=2", Text: "Absolute path with newline"},
		{URL: "http://other.example.org/proto", Text: "Protocol relative"},
		{URL: "http://example.com:8080/Port", Text: "Port"},
		{URL: "http://example.com/base/dir/", Text: "Fragment only"},
		{URL: "http://example.com/base/dir/spaced.html", Text: "Spaced"},
		{URL: "http://example.com/base/dir/newline.html", Text: "Newline in href"},
		{URL: "http://example.com/base/dir/a&b.html?x=1&y=2", Text: "Entities & more <3"},
		{URL: "http://example.com/base/dir/caf%C3%A9.html", Text: "Café"},
		{URL: "http://example.com/base/up.html", Text: "Up"},
		{URL: "http://example.com/base/dir/page.html;jsessionid=1", Text: "Params"},
		{URL: "http://example.com/base/dir/area.html", Text: ""},
		{URL: "http://example.com/map.html", Text: ""},
		{URL: "http://xn--bcher-kva.de/x", Text: "IDN"},
		{URL: "http://example.com/base/dir/search?q=a+b&r=%25zz", Text: "Spaces and bad escape"},
		{URL: "http://example.com/base/dir/UPPER.html", Text: "Upper"},
		{URL: "http://example.com/base/dir/nested.html", Text: "outer inner deep tail"},
		{URL: "http://example.com/base/dir/noscript.html", Text: "NoScript"},
		{URL: "https://secure.example.com/", Text: "Secure"},
		{URL: "http://example.com/base/dir/unclosed.html", Text: "Unclosed"},
		{URL: "http://example.com/base/dir/after.html", Text: "After"},
	}
	got := follow(t, tricky, &crawlrequest.Request{})
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got\n%s\nwant\n%s", show(got), show(want))
	}
}

func show(ls []spider.Link) string {
	var b strings.Builder
	for _, l := range ls {
		b.WriteString(l.URL + "  " + l.Text + "\n")
	}
	return b.String()
}

func urls(ls []spider.Link) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.URL
	}
	return out
}

func TestExtract(t *testing.T) {
	tests := []struct {
		name, page, doc string
		want            []string
	}{
		{"relative links resolve against the page", pageURL, `<a href="a.html">a</a><a href="/b">b</a><a href="../c">c</a>`,
			[]string{"http://example.com/dir/a.html", "http://example.com/b", "http://example.com/c"}},
		{"an absolute base applies", pageURL, `<base href="https://cdn.example.net/x/"><a href="a.html">a</a>`,
			[]string{"https://cdn.example.net/x/a.html"}},
		{"a base after the links still applies", pageURL, `<a href="a.html">a</a><base href="/other/">`,
			[]string{"http://example.com/other/a.html"}},
		{"only the first base counts", pageURL, `<base href="/one/"><base href="/two/"><a href="a">a</a>`,
			[]string{"http://example.com/one/a"}},
		{"a javascript base is ignored", pageURL, `<base href="javascript:void(0)"><a href="a">a</a>`,
			[]string{"http://example.com/dir/a"}},
		{"protocol-relative links take the page's scheme", "https://example.com/", `<a href="//x.org/p">p</a>`,
			[]string{"https://x.org/p"}},
		{"fragments are removed and the rest deduplicated", pageURL, `<a href="#a">1</a><a href="#b">2</a><a href="page.html#c">3</a>`,
			[]string{"http://example.com/dir/page.html"}},
		{"non-http schemes are dropped", pageURL,
			`<a href="javascript:x()">j</a><a href="mailto:a@b.c">m</a><a href="tel:1">t</a><a href="data:,x">d</a><a href="ftp://f/">f</a><a href="file:///etc/passwd">f</a><a href="http:///nohost">n</a>`,
			[]string{}},
		{"unquoted and single-quoted attributes", pageURL, `<a href=one.html>1</a><a href='two.html'>2</a><a class=x href = "three.html" >3</a>`,
			[]string{"http://example.com/dir/one.html", "http://example.com/dir/two.html", "http://example.com/dir/three.html"}},
		{"the first of repeated href attributes counts", pageURL, `<a href="first" href="second">x</a>`,
			[]string{"http://example.com/dir/first"}},
		{"a tag cut by the end of the document is ignored", pageURL, `<a href="ok">ok</a><a href="cut`, []string{"http://example.com/dir/ok"}},
		{"garbage and stray brackets", pageURL, "<<<a href=\"x\">>>\x00<</a><a href=\"\x01y\">y</a><!-- <a href=\"comment\"> -->",
			[]string{"http://example.com/dir/x", "http://example.com/dir/%01y"}},
		{"links in CDATA-like script text are not links", pageURL, `<script><a href="s">s</a></script><style>a{}</style><a href="real">r</a>`,
			[]string{"http://example.com/dir/real"}},
		{"links in noframes are found", pageURL, `<noframes><a href="nf.html">x</a></noframes>`, []string{"http://example.com/dir/nf.html"}},
		{"a page URL that cannot be parsed keeps absolute links", "::bad", `<a href="rel">r</a><a href="http://x.org/">x</a>`,
			[]string{"http://x.org/"}},
		{"an IPv6 host", pageURL, `<a href="http://[::1]:8080/a">a</a>`, []string{"http://[::1]:8080/a"}},
		{"an invalid host is dropped", pageURL, `<a href="http://exa mple.com/">a</a><a href="http://x.org:port/">b</a>`, []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := urls(links.Extract(tc.page, tc.doc))
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestLinkTextIsCollapsedAndBounded(t *testing.T) {
	doc := "<a href=x>\n\t a  <b>b</b>\n&nbsp;c &amp; é </a><a href=y>" + strings.Repeat("word ", 5000) + "</a>"
	got := links.Extract(pageURL, doc)
	if len(got) != 2 || got[0].Text != "a b c & é" {
		t.Fatalf("got %q", got)
	}
	if n := len(got[1].Text); n > 4096 || n < 4000 || !utf8.ValidString(got[1].Text) {
		t.Fatalf("long text is %d bytes", n)
	}
}

func TestHugeAttributesAreHarmless(t *testing.T) {
	long := "http://example.com/" + strings.Repeat("a", 1<<20)
	doc := `<a title="` + strings.Repeat("t", 1<<20) + `" href="ok.html">ok</a><a href="` + long + `">long</a>`
	// An href of 1 MB is not even extracted (over 8 KiB).
	if got := links.Extract(pageURL, doc); len(got) != 1 || got[0].URL != "http://example.com/dir/ok.html" {
		t.Fatalf("Extract found %q", got)
	}
	// Scrapy's URLLENGTH_LIMIT: the long one is not followed.
	if got := urls(follow(t, doc, &crawlrequest.Request{})); !reflect.DeepEqual(got, []string{"http://example.com/dir/ok.html"}) {
		t.Fatalf("Follow = %q", got)
	}
}

func TestLongRunsOfTextLoseNoLinkAndCostNoCopy(t *testing.T) {
	// A compression bomb's 10 MB of zero bytes, a long link text and
	// comments around them: every link is found, with its text, and the
	// tokenizer is not handed the runs' middles.
	zeros := strings.Repeat("\x00", 10<<20)
	words := strings.Repeat("word ", 100_000)
	doc := "<a href=/a>" + zeros + "</a><!-- " + zeros + " --><a href='/b'>" + words + "</a>" +
		"<script>" + zeros + "<a href=/not-a-link></script><a href=/c title=" + zeros + ">c</a>" + zeros
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got := links.Extract(pageURL, doc)
	runtime.ReadMemStats(&after)
	if len(got) != 3 || got[0].URL != "http://example.com/a" || got[1].URL != "http://example.com/b" || got[2].URL != "http://example.com/c" {
		t.Fatalf("got %q", urls(got))
	}
	if n := len(got[0].Text); n < 4000 || n > 4096 {
		t.Errorf("text of /a is %d bytes", n)
	}
	if !strings.HasPrefix(got[1].Text, "word word") || len(got[1].Text) < 4000 || got[2].Text != "c" {
		t.Errorf("texts %q..., %q", got[1].Text[:20], got[2].Text)
	}
	if allocated := after.TotalAlloc - before.TotalAlloc; allocated > 4<<20 {
		t.Errorf("extracting links from %d MB allocated %d MB", len(doc)>>20, allocated>>20)
	}
}

func TestNonUTF8PagesGiveUTF8Links(t *testing.T) {
	// windows-1252 bytes: "é" is 0xE9 in the href and in the text.
	page := spider.NewPage(&spider.Response{
		Request: &crawlrequest.Request{URL: pageURL}, URL: pageURL, Status: 200,
		Header: map[string][]string{"Content-Type": {"text/html; charset=windows-1252"}},
		Body:   []byte("<a href=\"caf\xe9.html?q=\xe9\">caf\xe9</a><a href=\"\xff\xfe\">bad</a>"),
	})
	got, _, err := links.Follow(page, &crawlrequest.Request{})
	if err != nil {
		t.Fatal(err)
	}
	want := []spider.Link{{URL: "http://example.com/dir/caf%C3%A9.html?q=%C3%A9", Text: "café"}, {URL: "http://example.com/dir/%C3%BF%C3%BE", Text: "bad"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q", got)
	}
	// Invalid UTF-8 straight into Extract does not break it either.
	for _, l := range links.Extract(pageURL, "<a href=\"\xff/\xc3\">\xff</a>") {
		if _, err := url.Parse(l.URL); err != nil || !utf8.ValidString(l.Text) {
			t.Fatalf("link %q", l)
		}
	}
}

func FuzzExtract(f *testing.F) {
	f.Add(pageURL, tricky)
	f.Add("https://a.b/c?d#e", `<base href="//x/"><a href="?q"><area href="../">`)
	f.Add(pageURL, "<a href=\"\xff%\x00\">\xc3</a><noscript><a href='n'>")
	f.Fuzz(func(t *testing.T, page, doc string) {
		for _, l := range links.Extract(page, doc) {
			u, err := url.Parse(l.URL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Fragment != "" {
				t.Fatalf("Extract gave %q (%v)", l.URL, err)
			}
			if !utf8.ValidString(l.Text) || len(l.Text) > 4096+3 {
				t.Fatalf("text %q", l.Text)
			}
		}
		ls, _, err := links.Follow(htmlPage(doc), &crawlrequest.Request{})
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range ls {
			if strings.ContainsAny(l.URL, "# \t\n") || len(l.URL) > links.MaxURLLength {
				t.Fatalf("Follow gave %q", l.URL)
			}
		}
	})
}
