package extract_test

import (
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/antchfx/htmlquery"
	"golang.org/x/net/html"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/extract"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

// resolveBases are page URLs fastResolve resolves against.
var resolveBases = []string{"http://shop.example/list", "https://a.example:8443/x/y?z=1#f", "http://127.0.0.1:8080"}

// FuzzFastResolve: what fastResolve resolves is what url.URL.Parse does.
func FuzzFastResolve(f *testing.F) {
	for _, v := range []string{"/product/12", "/a?b=1&c=2", "/", "/a/../b", "//host/x", "/a b", "/a#f", "/a?", "/a//b", "/%41", "/a/./b", "/a/.", "/x?y=/z",
		"http://127.0.0.1:8080/", "https://H.example", "http://a:/x", "http://a:8/b/../c", "http://a//b", "http://a?q=1", "HTTP://a/", "http://a.b-c:99999/x?y",
		"#top", "#", "#a/b", "#a b", "#a#b", "#%41"} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		for _, b := range resolveBases {
			base, err := url.Parse(b)
			if err != nil {
				t.Fatal(err)
			}
			prefix := extract.ResolvePrefix(base)
			got, ok := extract.FastResolve(prefix, v)
			if !ok && prefix != "" {
				b := *base
				b.Fragment, b.RawFragment = "", ""
				got, ok = extract.FastFragment(b.String(), v)
			}
			if !ok {
				continue
			}
			u, err := base.Parse(strings.TrimSpace(v))
			if err != nil {
				t.Fatalf("%q on %s: fastResolve gives %q, url.Parse fails: %v", v, b, got, err)
			}
			if want := u.String(); got != want {
				t.Fatalf("%q on %s: fastResolve gives %q, url.Parse %q", v, b, got, want)
			}
		}
	})
}

func TestFastResolveTakesPlainPaths(t *testing.T) {
	base, _ := url.Parse(resolveBases[0])
	prefix := extract.ResolvePrefix(base)
	for _, v := range []string{"/product/12", "/img/3.png", "/search?q=lamp&page=2"} {
		if got, ok := extract.FastResolve(prefix, v); !ok || got != "http://shop.example"+v {
			t.Errorf("%q: %q %v, want the fast path", v, got, ok)
		}
	}
	for _, v := range []string{"http://127.0.0.1:8080/page/1", "https://shop.example/a?b=c"} {
		if got, ok := extract.FastResolve(prefix, v); !ok || got != v {
			t.Errorf("%q: %q %v, want the fast path", v, got, ok)
		}
	}
	if got, ok := extract.FastFragment("http://shop.example/list", "#top"); !ok || got != "http://shop.example/list#top" {
		t.Errorf("#top: %q %v, want the fast path", got, ok)
	}
	for _, v := range []string{"relative", "/a/../b", "//other/x", "/a b", "/a#f", "/%41", "http://a/b/../c", "http://a//b", "ftp://a/", "http://a b/", "http://[::1]/"} {
		if _, ok := extract.FastResolve(prefix, v); ok {
			t.Errorf("%q: took the fast path", v)
		}
	}
	for _, b := range []string{"http://user@h.example/", "ftp://h.example/", "http://[::1]:80/", "http://h%41.example/"} {
		u, err := url.Parse(b)
		if err == nil && extract.ResolvePrefix(u) != "" {
			t.Errorf("%s: has a prefix for the fast path", b)
		}
	}
}

// TestInnerTextIsHTMLQuerys: innerText gives htmlquery.InnerText's text
// for every node of the test pages.
func TestInnerTextIsHTMLQuerys(t *testing.T) {
	for name, src := range treePages(t) {
		root, err := html.Parse(strings.NewReader(src))
		if err != nil {
			t.Fatal(err)
		}
		var walk func(n *html.Node)
		walk = func(n *html.Node) {
			if got, want := extract.InnerText(n), htmlquery.InnerText(n); got != want {
				t.Fatalf("%s: %s node %q: innerText %q, htmlquery %q", name, n.Data, n.Data, got, want)
			}
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				walk(c)
			}
		}
		walk(root)
	}
}

// everyKind are rules of every kind and option, for comparing trees.
const everyKind = `{"title": {"css": "title"}, "h": {"xpath": "//h1|//h2"}, "links": {"css": "a", "attr": "href", "all": true},` +
	` "xlinks": {"xpath": "//a/@href", "all": true}, "texts": {"css": "p, li, dt, dd, pre, textarea", "all": true},` +
	` "ld": {"jsonld": true}, "src": {"css": "img", "attr": "src", "all": true}, "n": {"xpath": "count(//*)"},` +
	` "body": {"xpath": "normalize-space(//body)"}, "classes": {"css": "[class]", "attr": "class", "all": true},` +
	` "bases": {"css": "base", "attr": "href", "all": true}, "inputs": {"xpath": "//input/@value", "all": true}}`

// TestRulesGiveTheSameOnEitherTree: the rules' values on buildTree's tree
// are those on html.Parse's, on every test page, and stay so while the
// tree's memory serves the next page.
func TestRulesGiveTheSameOnEitherTree(t *testing.T) {
	rs, err := extract.CompileJSON([]byte(everyKind))
	if err != nil {
		t.Fatal(err)
	}
	pages := treePages(t)
	for name, src := range unsurePages {
		pages[name] = src
	}
	type result struct{ name, want, got string }
	var results []result
	for name, src := range pages {
		got := rs.Apply("http://shop.example/list/", src)
		want := extract.ApplyParsed(rs, "http://shop.example/list/", src)
		results = append(results, result{name, harness.JSONText(t, want), harness.JSONText(t, got)})
		if results[len(results)-1].got != results[len(results)-1].want {
			t.Errorf("%s: buildTree's tree gives\n%s\nhtml.Parse's\n%s", name, results[len(results)-1].got, results[len(results)-1].want)
		}
		defer func(got map[string]any, r result) { // after every other page
			if again := harness.JSONText(t, got); again != r.got {
				t.Errorf("%s: the values changed after other pages: %s, were %s", r.name, again, r.got)
			}
		}(got, results[len(results)-1])
	}
}

// BenchmarkResolve: the 800 product hrefs of BenchmarkExtract's page
// resolved by url.URL.Parse and by fastResolve; ns/op for all 800.
func BenchmarkResolve(b *testing.B) {
	base, _ := url.Parse("http://shop.example/list")
	hrefs := make([]string, 800)
	for i := range hrefs {
		hrefs[i] = "/product/" + strconv.Itoa(i)
	}
	b.Run("url.Parse", func(b *testing.B) {
		for b.Loop() {
			for _, h := range hrefs {
				if u, err := base.Parse(h); err != nil || u.String() == "" {
					b.Fatal(h)
				}
			}
		}
	})
	b.Run("fastResolve", func(b *testing.B) {
		prefix := extract.ResolvePrefix(base)
		for b.Loop() {
			for _, h := range hrefs {
				if _, ok := extract.FastResolve(prefix, h); !ok {
					b.Fatal(h)
				}
			}
		}
	})
}

// BenchmarkInnerText: the text of the 200 KB page's elements with one
// text child, by htmlquery.InnerText and by innerText; ns/op for all.
func BenchmarkInnerText(b *testing.B) {
	root, err := html.Parse(strings.NewReader(productPage(200 << 10)))
	if err != nil {
		b.Fatal(err)
	}
	var els []*html.Node
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.FirstChild != nil && n.FirstChild == n.LastChild && n.FirstChild.Type == html.TextNode {
			els = append(els, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(root)
	for _, tc := range []struct {
		name string
		text func(*html.Node) string
	}{{"htmlquery", htmlquery.InnerText}, {"innerText", extract.InnerText}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, n := range els {
					_ = tc.text(n)
				}
			}
		})
	}
}

// TestConcurrentPagesKeepTheirValues: pages extracted at once, their trees'
// memory passed from one to the next, each get their own values.
func TestConcurrentPagesKeepTheirValues(t *testing.T) {
	rs, err := extract.CompileJSON([]byte(everyKind))
	if err != nil {
		t.Fatal(err)
	}
	pages := treePages(t)
	want := map[string]string{}
	for name, src := range pages {
		want[name] = harness.JSONText(t, extract.ApplyParsed(rs, "http://shop.example/", src))
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8*len(pages))
	for range 8 {
		wg.Go(func() {
			for name, src := range pages {
				if got := harness.JSONText(t, rs.Apply("http://shop.example/", src)); got != want[name] {
					errs <- name + ": " + got
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
