package extract_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/extract"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/wirejson"
)

// mapJSON is Apply's values written as the crawler wrote them before
// Values: wirejson's Go style, fields sorted, no map as {}.
func mapJSON(t testing.TB, m map[string]any) string {
	t.Helper()
	b, err := wirejson.Append(nil, m, wirejson.Go)
	if err != nil {
		t.Fatalf("JSON of %v: %v", m, err)
	}
	return string(b)
}

// sameAsMap: ApplyJSON's Values are Apply's map in JSON, field for field.
func sameAsMap(t testing.TB, rs *extract.Rules, pageURL, name, src string) {
	t.Helper()
	m := rs.Apply(pageURL, src)
	v := rs.ApplyJSON(pageURL, src)
	if got, want := string(v.AppendJSON(nil)), mapJSON(t, m); got != want {
		t.Fatalf("%s: ApplyJSON gives\n%.2000s\nApply\n%.2000s", name, got, want)
	}
	if v.Len() != len(m) {
		t.Fatalf("%s: %d fields, Apply %d", name, v.Len(), len(m))
	}
}

// trickyPage has values JSON escapes (quotes, back slashes, control
// characters, <>&, U+2028, non-ASCII, invalid UTF-8) and hrefs of every
// shape resolution takes.
const trickyPage = "<html><head><title>\"Quoted\" \\ back\tslash &lt;b&gt; &amp; \u2028 caf\u00e9 \xff</title></head><body>" +
	`<h1>Lamp <b>bold</b> and more</h1><p class="price">12.50 EUR</p><p class="price">13.00 EUR</p>` +
	`<a href="/catalog/lamp-2.html">2</a><a href="//cdn.example/x">cdn</a><a href="?q=1">q</a><a href="#f">f</a>` +
	`<a href="../../up">up</a><a href="a b">space</a><a href="/caf&#233;">caf</a><a href="javascript:void(0)">js</a>` +
	`<a href="https://other.example/x">other</a><a href="">empty</a><a>none</a><img src="/img/1.png" alt="one">` +
	`<script type="application/ld+json">{"@type": "Product", "name": "L\u00e4mp", "n": 1.5, "ok": true, "x": null}</script>` +
	`<script type="application/ld+json">not json</script>SKU: AB-123 SKU: CD-456</body></html>`

// valueRules are rules of every kind, option and shape of value.
const valueRules = `{"title": {"css": "title"}, "h1": {"xpath": "//h1"}, "prices": {"css": "p.price", "all": true},` +
	` "links": {"css": "a", "attr": "href", "all": true}, "xlinks": {"xpath": "//a/@href", "all": true},` +
	` "first": {"css": "a", "attr": "href"}, "src": {"xpath": "//img/@src"}, "alt": {"css": "img", "attr": "alt"},` +
	` "sku": {"regex": "SKU: ([A-Z]+-\\d+)"}, "skus": {"regex": "SKU: ([A-Z]+-\\d+)", "all": true}, "eur": {"regex": "\\d+\\.\\d+ EUR", "all": true},` +
	` "ld": {"jsonld": true}, "n": {"xpath": "count(//a)"}, "ns": {"xpath": "count(//a)", "all": true}, "has": {"xpath": "boolean(//h1)"},` +
	` "s": {"xpath": "normalize-space(//h1)"}, "none": {"css": "table"}, "nones": {"css": "table", "all": true},` +
	` "elsewhere": {"css": "title", "url_regex": "^https://nowhere/"}, "\"odd\" name": {"css": "h1"}}`

// TestValuesAreTheMapsJSON: ApplyJSON writes what Apply gives, as the
// crawler wrote it, for rules of every kind on the test pages, a page of
// tricky values and hrefs, BenchmarkExtract's and BenchmarkTestSitePage's
// pages and rules, page after page (its scratch memory reused) and with
// no rule applying.
func TestValuesAreTheMapsJSON(t *testing.T) {
	pages := treePages(t)
	for name, src := range unsurePages {
		pages[name] = src
	}
	pages["tricky"] = trickyPage
	pages["shop"] = readPage(t)
	pages["products"] = productPage(20 << 10)
	pages["test site"] = testSitePage
	pages["empty"] = ""
	for _, spec := range []string{valueRules, everyKind, benchRules(20), testSiteRules} {
		rs := compile(t, spec)
		for range 2 {
			for name, src := range pages {
				for _, u := range []string{"http://shop.example/items/lamp?id=1", "https://shop.example:8443/a/b/", "http://user@shop.example/x"} {
					sameAsMap(t, rs, u, name, src)
				}
			}
		}
	}
	rs := compile(t, `{"t": {"css": "title", "url_regex": "/only/"}}`)
	if v := rs.ApplyJSON("http://shop.example/", trickyPage); string(v.AppendJSON(nil)) != "{}" || v.Len() != 0 {
		t.Errorf("no rule applies: %s", v.AppendJSON(nil))
	}
	if v := (*extract.Rules)(nil).ApplyJSON("http://shop.example/", trickyPage); string(v.AppendJSON(nil)) != "{}" {
		t.Errorf("no rules: %s", v.AppendJSON(nil))
	}
}

// TestValuesOfANumberJSONCannotHoldAreNull: an xpath number that is not
// finite is null (Apply's NaN has no JSON).
func TestValuesOfANumberJSONCannotHoldAreNull(t *testing.T) {
	rs := compile(t, `{"nan": {"xpath": "number(//title)"}, "inf": {"xpath": "1 div 0"}, "t": {"css": "title"}}`)
	v := rs.ApplyJSON("http://shop.example/", "<title>x</title>")
	if got := string(v.AppendJSON(nil)); got != `{"inf":null,"nan":null,"t":"x"}` {
		t.Errorf("got %s", got)
	}
	m, err := v.Map()
	if err != nil || len(m) != 3 || m["t"] != "x" || m["nan"] != nil {
		t.Errorf("Map: %v, %v", m, err)
	}
}

// TestValuesOutliveTheNextPages: a page's Values stay as they were while
// its rules' scratch memory serves other pages, at once and after.
func TestValuesOutliveTheNextPages(t *testing.T) {
	rs := compile(t, valueRules)
	pages := []string{trickyPage, readPage(t), productPage(20 << 10), testSitePage}
	want := make([]string, len(pages))
	for i, src := range pages {
		want[i] = mapJSON(t, rs.Apply("http://shop.example/list/", src))
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8*6*len(pages)) // room for every error
	for g := range 8 {
		wg.Go(func() {
			var kept []extract.Values
			for j := range 3 * len(pages) {
				i := (g + j) % len(pages)
				v := rs.ApplyJSON("http://shop.example/list/", pages[i])
				kept = append(kept, v)
				if got := string(v.AppendJSON(nil)); got != want[i] {
					errs <- "page " + strings.Repeat("I", i+1) + ": " + got
				}
			}
			for j, v := range kept {
				if got := string(v.AppendJSON(nil)); got != want[(g+j)%len(pages)] {
					errs <- "kept: " + got
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
