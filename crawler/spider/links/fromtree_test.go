package links_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider/links"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/testsite"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
)

// sharedPage is a page whose Doc shares its parse (spider.Response.ShareParse).
func sharedPage(pageURL, body, contentType string) *spider.Page {
	return spider.NewPage(&spider.Response{
		URL: pageURL, Status: 200, Body: []byte(body), ShareParse: true,
		Header: http.Header{"Content-Type": {contentType}},
	})
}

// bothWays compares the links of the tree's tokens with the tokenizer's on
// a page; it reports whether the tree's were read (the fast tree builder
// took the page).
func bothWays(t testing.TB, pageURL, body, contentType string) bool {
	t.Helper()
	page := sharedPage(pageURL, body, contentType)
	defer page.Doc.Release()
	want := links.Extract(page.ResponseURL, page.Body)
	got, fromTree := links.FromDoc(page)
	if !fromTree {
		if got != nil {
			t.Fatalf("%s: links %v without the tree's tokens", pageURL, got)
		}
		return false
	}
	if len(got) == 0 && len(want) == 0 {
		return true
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s %q:\nthe tree's tokens give\n%s\nthe tokenizer\n%s", pageURL, body, show(got), show(want))
	}
	return true
}

// siteBodies are the HTML pages of a test site (crawler/testsite) reached
// from / and /special, fetched over HTTP, by URL; pages that are slow by
// design are left out.
func siteBodies(t *testing.T) map[string]string {
	site := testsite.Start(t, testsite.WithPages(30))
	client := &http.Client{Timeout: 20 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	bodies := map[string]string{}
	queue := []string{site.URL("/"), site.URL("/special")}
	for len(queue) > 0 && len(bodies) < 400 {
		u := queue[0]
		queue = queue[1:]
		if _, seen := bodies[u]; seen || !strings.HasPrefix(u, site.URL("/")) ||
			strings.ContainsAny(u, "#") || containsAny(u, "/hang", "/reset", "/slow", "/huge", "/drip", "/bomb", "/truncated") {
			continue
		}
		resp, err := client.Get(u)
		if err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			continue // /bad-gzip and the like: no page
		}
		bodies[u] = string(b)
		if strings.Contains(resp.Header.Get("Content-Type"), "html") {
			for _, l := range links.Extract(u, string(b)) {
				queue = append(queue, l.URL)
			}
		}
	}
	return bodies
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func TestLinksFromTheTreeAreTheTokenizers(t *testing.T) {
	fromTree, pages := 0, 0
	check := func(pageURL, body string) {
		pages++
		if bothWays(t, pageURL, body, "text/html; charset=utf-8") {
			fromTree++
		}
	}
	for u, body := range siteBodies(t) {
		check(u, body)
	}
	t.Logf("%d of %d test site pages read from the tree", fromTree, pages)
	if pages < 50 || fromTree < pages*3/4 {
		t.Errorf("%d of %d test site pages read from the tree, want 50 pages or more and most of them", fromTree, pages)
	}
	for _, dir := range []string{"testdata/fuzz/FuzzExtract", "testdata/fuzz/FuzzLinksFromTheTree", "../../../scutils/extract/testdata/fuzz/FuzzTree"} {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			for _, s := range corpusStrings(t, filepath.Join(dir, e.Name())) {
				check(pageURL, s)
			}
		}
	}
	seedsFromTree := 0
	for _, src := range seedPages() {
		if bothWays(t, pageURL, src, "text/html") {
			seedsFromTree++
		}
	}
	t.Logf("%d of %d seed pages read from the tree", seedsFromTree, len(seedPages()))
	page, err := os.ReadFile("../../../scutils/extract/testdata/page.html")
	if err != nil {
		t.Fatal(err)
	}
	if !bothWays(t, "http://shop.example/list", string(page), "text/html") {
		t.Error("testdata/page.html of package extract: not read from the tree")
	}
}

// corpusStrings are the string values of a fuzz corpus file.
func corpusStrings(t *testing.T, path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "string("); ok {
			s, err := strconv.Unquote(strings.TrimSuffix(v, ")"))
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			out = append(out, s)
		}
	}
	return out
}

// seedPages are pages whose links are awkward for the tree's tokens:
// raw text elements written self-closing, inert elements inside links,
// links the tree closes other than the tokenizer, long inert runs.
func seedPages() []string {
	long := strings.Repeat("x", links.InertRunMax+10)
	return []string{
		tricky,
		`<a href="/a">one<noscript><a href="/n">n</a></noscript>two</a><a href=/b>b`,
		`<noscript/><a href="/hidden">h</a></noscript><a href="/shown">s</a>`,
		`<a href="/s">x<script/>text after</script>y</a>`,
		`<a href="/s">x<script>var a = "<a href='/no'>"</script>y</a>`,
		`<a href="/s">x<style>a{}</style>y<title>t</title><textarea>ta</textarea></a>`,
		`<p><a href="/p">in p</p>after p</a>`,
		`<div><a href="/d">in div</div><a href="/e">e</a>`,
		`<a href="/x">x<area href="/area">after area</a>`,
		`<a href="/base">b</a><base href="http://other.example/dir/"><a href="rel">r</a>`,
		`<noembed><base href="http://noembed.example/"></noembed><a href="rel">r</a>`,
		`<noframes></noframes><a href="/f">f</a>`,
		`<a href="/l">` + long + `</a><a href="/` + long + `">x</a>`,
		`<head><noscript><a href="/head-ns">h</a></noscript></head><body><a href=/b>b</a></body>`,
		`<a href="/u">text</body></html> after`,
		"<a href=\"/cr\">a\r\nb\rc &amp; &lt;d&gt;</a>",
	}
}

// FuzzLinksFromTheTree: the links read from the tokens of the page's
// tree are the tokenizer's, whatever the page.
func FuzzLinksFromTheTree(f *testing.F) {
	for _, src := range seedPages() {
		f.Add(src)
	}
	f.Fuzz(func(t *testing.T, src string) {
		bothWays(t, pageURL, src, "text/html")
	})
}

// TestAPageChangedSinceItsDocIsReadAsItIs: a spider that changes a page's
// body after NewPage gets the links of the body as it is, not of its Doc.
func TestAPageChangedSinceItsDocIsReadAsItIs(t *testing.T) {
	page := sharedPage(pageURL, `<a href="/before">before</a>`, "text/html")
	defer page.Doc.Release()
	page.Body = `<a href="/after">after</a>`
	if got, fromTree := links.FromDoc(page); fromTree {
		t.Fatalf("links %v read from the Doc of the page before its change", got)
	}
	got, _, err := links.Follow(page, &crawlrequest.Request{MaxDepth: 1})
	if err != nil || len(got) != 1 || got[0].URL != "http://example.com/after" {
		t.Fatalf("links %v (%v), want /after's", got, err)
	}
}
