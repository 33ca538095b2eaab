package extract_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/antchfx/xpath"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/extract"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

// simplePaths are xpath expressions parseSimplePath takes.
var simplePaths = []string{
	"//a", "//a/@href", "//*", "count(//*)", "count(//li)", "//span[@class='price']",
	`//meta[@name="description"]/@content`, "//meta[@name='description'][@content]/@content", "//*[@class]",
	"//*/@class", "count(//a/@href)", "//div", "//text", "//node", "//comment", "//and", "//or", "//mod", "//count",
	"//data-x", "//h1", "//_x", "//a[@href='']", "//p[@class='desc']/@class",
	"//img[@alt='p1']/@src", "//li[@data-id='7']/@data-id", "//input/@value", "//base/@href", "//svg", "//path",
	"//clipPath", "//clippath", "//*[@xlink]", "//*/@href", "//title", "//script[@type]", "//a[@href]/@title",
}

// notSimplePaths are xpath expressions left to antchfx/xpath.
var notSimplePaths = []string{
	"//a[1]", "//a | //b", "/html/body", "//a//b", "//a/text()", "normalize-space(//body)", "// a", "//a[@href = 'x']",
	"//a[@href=x]", "count(//a", "count(//a) + 1", "//a[contains(@class,'x')]", "//@href", "//a/@*", "//a/@x:y",
	"//1a", "//a[@href='x'", "//a/", "//-a", "//a[@]", "descendant::a", "//x:a", "//a/..", "//a[@b='c']x", "//li/a", "//ul/li/a/@href", "//html/body",
}

func TestSimplePathTakesOnlyItsShapes(t *testing.T) {
	for _, src := range simplePaths {
		if !extract.IsSimplePath(src) {
			t.Errorf("%s: not taken, want it taken", src)
		}
	}
	for _, src := range notSimplePaths {
		if extract.IsSimplePath(src) {
			t.Errorf("%s: taken, want it left to antchfx/xpath", src)
		}
	}
}

// walkRules are css rules and simple xpath rules of every option, mixed,
// in sets of at most 90.
func walkRules(t testing.TB) []*extract.Rules {
	var xparts, parts []string
	for i, src := range simplePaths {
		xparts = append(xparts, fmt.Sprintf(`"x%02d": {"xpath": %q}`, i, src), fmt.Sprintf(`"x%02da": {"xpath": %q, "all": true}`, i, src))
		if !strings.Contains(src, "/@") && !strings.HasPrefix(src, "count(") {
			xparts = append(xparts, fmt.Sprintf(`"x%02dh": {"xpath": %q, "attr": "href", "all": true}`, i, src))
		}
	}
	for i, sel := range []string{"title", "a", "li.item a", "p, li, dt, dd", "[class]", "img", "base", "h1.name", "*",
		":contains('Lamp')", "ul > li:nth-child(2)", "body :empty", "a[href^='/']", ":root", "p.desc", "#items li"} {
		parts = append(parts, fmt.Sprintf(`"c%02d": {"css": %q}`, i, sel), fmt.Sprintf(`"c%02da": {"css": %q, "all": true}`, i, sel),
			fmt.Sprintf(`"c%02dh": {"css": %q, "attr": "href"}`, i, sel), fmt.Sprintf(`"c%02ds": {"css": %q, "attr": "src", "all": true}`, i, sel))
	}
	for i, x := range xparts { // every other rule an xpath one
		parts = slices.Insert(parts, min(2*i, len(parts)), x)
	}
	var sets []*extract.Rules
	for set := range slices.Chunk(parts, 90) {
		sets = append(sets, compile(t, "{"+strings.Join(set, ", ")+"}"))
	}
	return sets
}

// sameAsOneByOne fails t when the rules give on src other values than each
// rule walking the tree on its own (xpath rules through antchfx/xpath).
func sameAsOneByOne(t testing.TB, rs *extract.Rules, name, src string) {
	got := harness.JSONText(t, rs.Apply("http://shop.example/list/", src))
	want := harness.JSONText(t, extract.OneByOne(rs).Apply("http://shop.example/list/", src))
	if got != want {
		t.Fatalf("%s: one walk gives\n%s\neach rule on its own\n%s", name, got, want)
	}
	sameAsMap(t, rs, "http://shop.example/list/", name, src)
}

// TestOneWalkGivesWhatEachRuleGives: the css and simple xpath rules matched
// in one walk give on every test page what each rule gives on its own,
// xpath rules through antchfx/xpath.
func TestOneWalkGivesWhatEachRuleGives(t *testing.T) {
	sets := walkRules(t)
	pages := treePages(t)
	for name, src := range unsurePages {
		pages[name] = src
	}
	pages["svg"] = `<p><svg xmlns:xlink="http://www.w3.org/1999/xlink"><clipPath id="c"/><a xlink:href="/in-svg">x</a><path d="M0"/></svg></p>`
	pages["text only"] = "Lamp"
	pages["nested lists"] = `<ul><li><ul><li class="item"><a href="/1">1</a><a>2</a></li></ul></li><li><a href="#top" title="t">3</a></li></ul>`
	for name, src := range pages {
		for _, rs := range sets {
			sameAsOneByOne(t, rs, name, src)
		}
	}
}

// FuzzOneWalk: on any page, the one walk gives what each rule gives.
func FuzzOneWalk(f *testing.F) {
	for _, src := range fastPages {
		f.Add(src)
	}
	for _, src := range unsurePages {
		f.Add(src)
	}
	sets := walkRules(f)
	f.Fuzz(func(t *testing.T, src string) {
		for _, rs := range sets {
			sameAsOneByOne(t, rs, "page", src)
		}
	})
}

// FuzzSimplePath: any expression parseSimplePath takes gives, on the test
// pages, what antchfx/xpath gives.
func FuzzSimplePath(f *testing.F) {
	for _, src := range simplePaths {
		f.Add(src)
	}
	for _, src := range notSimplePaths {
		f.Add(src)
	}
	pages := []string{readPage(f), productPage(8 << 10)}
	for _, src := range fastPages {
		pages = append(pages, src)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		if !extract.IsSimplePath(expr) {
			return
		}
		if _, err := xpath.Compile(expr); err != nil {
			t.Fatalf("%q: parseSimplePath takes it, xpath refuses it: %v", expr, err)
		}
		rs, err := extract.Compile(map[string]any{"one": map[string]any{"xpath": expr}, "all": map[string]any{"xpath": expr, "all": true}})
		if err != nil {
			t.Fatal(err)
		}
		for _, src := range pages {
			sameAsOneByOne(t, rs, expr, src)
		}
	})
}

// FuzzCSSOneWalk: any css selector gives, on the test pages, in the one
// walk (which calls its matcher only on the elements of its subject's tag,
// when subjectTag finds one) what cascadia's MatchFirst and MatchAll give.
func FuzzCSSOneWalk(f *testing.F) {
	for _, sel := range []string{"title", "li.item a", "UL > LI:nth-child(2n+1)", "#items li", "a[href^='/']", "div ~ p#x",
		"li+a", "ul li:not(.x y)", "p:has(a)", "*", ":root", "body :empty", "p, li", `a[href="x y"]`, "svg|rect", "clipPath",
		"li *", "a:not(b c) .z", "img[src]", "span.price", "meta[name=description]"} {
		f.Add(sel)
	}
	pages := []string{readPage(f), productPage(8 << 10)}
	for _, src := range fastPages {
		pages = append(pages, src)
	}
	f.Fuzz(func(t *testing.T, sel string) {
		rs, err := extract.Compile(map[string]any{"one": map[string]any{"css": sel}, "all": map[string]any{"css": sel, "all": true},
			"src": map[string]any{"css": sel, "attr": "src", "all": true}})
		if err != nil {
			return
		}
		for _, src := range pages {
			sameAsOneByOne(t, rs, sel, src)
		}
	})
}

// A rule shares the match of an earlier rule of its expression only when
// that one applies to the page (url_regex).
func TestOneWalkSharesOnlyTheMatchesOfRulesThatApply(t *testing.T) {
	rs := compile(t, `{"a": {"css": "h1", "url_regex": "elsewhere"}, "b": {"css": "title"}, "c": {"css": "h1"},`+
		` "d": {"xpath": "//h1", "url_regex": "elsewhere"}, "e": {"xpath": "//h1"}}`)
	page := readPage(t)
	sameAsOneByOne(t, rs, "page", page)
	if got := harness.JSONText(t, rs.Apply(pageURL, page)); got != `{"b":"The Shop","c":"Lamp","e":"Lamp"}` {
		t.Errorf("got %s", got)
	}
}
