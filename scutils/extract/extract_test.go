package extract_test

import (
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/extract"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

const pageURL = "http://shop.example/items/lamp?id=1"

func readPage(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile("testdata/page.html")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func compile(t testing.TB, spec string) *extract.Rules {
	t.Helper()
	rs, err := extract.CompileJSON([]byte(spec))
	if err != nil {
		t.Fatalf("compile %s: %v", spec, err)
	}
	return rs
}

// asJSON writes the extracted fields as JSON, for comparison.

func TestEveryRuleKindGivesTheExpectedValue(t *testing.T) {
	page := readPage(t)
	for _, tc := range []struct{ name, rule, want string }{
		{"css gives the first element's trimmed text", `{"css": "title"}`, `"The Shop"`},
		{"css with all gives every match", `{"css": "#tags li", "all": true}`, `["light","home","desk"]`},
		{"css attr gives the value as written", `{"css": "p.price", "attr": "data-currency"}`, `"EUR"`},
		{"css href is resolved against the base", `{"css": "a", "attr": "href"}`, `"http://shop.example/catalog/lamp-2.html"`},
		{"css href of every link", `{"css": "a", "attr": "href", "all": true}`, `["http://shop.example/catalog/lamp-2.html","https://other.example/x"]`},
		{"css src is resolved", `{"css": "img", "attr": "src"}`, `"http://shop.example/img/lamp.png"`},
		{"css attr skips elements without it", `{"css": "p", "attr": "data-currency", "all": true}`, `["EUR"]`},
		{"css without a match and all is an empty list", `{"css": "table", "all": true}`, `[]`},
		{"xpath element text", `{"xpath": "//h1"}`, `"Lamp"`},
		{"xpath attribute node", `{"xpath": "//meta[@name='description']/@content"}`, `"Things to buy"`},
		{"xpath href attribute node is resolved", `{"xpath": "//a/@href"}`, `"http://shop.example/catalog/lamp-2.html"`},
		{"xpath with attr", `{"xpath": "//img", "attr": "alt"}`, `"A lamp"`},
		{"xpath all", `{"xpath": "//ul/li/text()", "all": true}`, `["light","home","desk"]`},
		{"xpath computing a number", `{"xpath": "count(//li)"}`, `3`},
		{"xpath computing a string", `{"xpath": "normalize-space(//p[@class='price'])"}`, `"Price: 12.50 EUR"`},
		{"xpath computing a boolean", `{"xpath": "boolean(//h1)"}`, `true`},
		{"regex gives the first group", `{"regex": "SKU: ([A-Z]+-\\d+)"}`, `"AB-123"`},
		{"regex all", `{"regex": "SKU: ([A-Z]+-\\d+)", "all": true}`, `["AB-123","CD-456"]`},
		{"regex without a group gives the whole match", `{"regex": "\\d+\\.\\d+ EUR"}`, `"12.50 EUR"`},
		{"url_regex matching anywhere in the URL applies", `{"css": "h1", "url_regex": "lamp\\?id="}`, `"Lamp"`},
		{"jsonld gives the blocks that parse", `{"jsonld": true}`, `[{"@type":"Product","name":"Lamp","offers":{"price":"12.50"}},[{"@type":"BreadcrumbList"}]]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := compile(t, `{"f": `+tc.rule+`}`).Apply(pageURL, page)
			v, ok := got["f"]
			if !ok {
				t.Fatalf("no value; got %v", got)
			}
			if s := harness.JSONText(t, v); s != tc.want {
				t.Errorf("got %s, want %s", s, tc.want)
			}
		})
	}
}

func TestAFieldWithoutAMatchIsAbsent(t *testing.T) {
	page := readPage(t)
	for _, rule := range []string{
		`{"css": "table"}`, `{"xpath": "//table"}`, `{"regex": "nowhere"}`,
		`{"css": "h1", "attr": "href"}`, `{"xpath": "string(//table)"}`,
	} {
		got := compile(t, `{"f": `+rule+`, "title": {"css": "title"}}`).Apply(pageURL, page)
		if _, ok := got["f"]; ok || got["title"] != "The Shop" {
			t.Errorf("%s: got %v, want only title", rule, got)
		}
	}
}

func TestURLRegexLimitsTheRuleToMatchingPages(t *testing.T) {
	rs := compile(t, `{"name": {"css": "h1", "url_regex": "/items/"}, "title": {"css": "title"}}`)
	if got := rs.Apply("http://shop.example/about", readPage(t)); harness.JSONText(t, got) != `{"title":"The Shop"}` {
		t.Errorf("got %s", harness.JSONText(t, got))
	}
	only := compile(t, `{"name": {"css": "h1", "url_regex": "/items/"}}`)
	if got := only.Apply("http://shop.example/about", readPage(t)); got != nil {
		t.Errorf("no rule applies, got %v, want nil", got)
	}
}

func TestMalformedPagesGiveWhatTheyHold(t *testing.T) {
	rs := compile(t, `{"t": {"css": "b"}, "x": {"xpath": "//i"}, "j": {"jsonld": true}}`)
	got := rs.Apply(pageURL, "<b>bold <i>it</b> not closed<script type=application/ld+json>{")
	if harness.JSONText(t, got) != `{"j":[],"t":"bold it","x":"it"}` {
		t.Errorf("got %s", harness.JSONText(t, got))
	}
	if got := rs.Apply(pageURL, ""); harness.JSONText(t, got) != `{"j":[]}` {
		t.Errorf("empty page: got %s", harness.JSONText(t, got))
	}
}

func TestBadRulesAreRefusedNamingTheRule(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{`{"title": {"css": "a["}}`, `extract.title: css "a[": `},
		{`{"price": {"xpath": "//p[@class="}}`, `extract.price: xpath "//p[@class=": `},
		{`{"sku": {"regex": "(a"}}`, `extract.sku: regex "(a": error parsing regexp`},
		{`{"both": {"css": "a", "xpath": "//a"}}`, `extract.both: has css and xpath: want exactly one of css, xpath, regex or jsonld`},
		{`{"none": {"attr": "href"}}`, `extract.none: has none of them: want exactly one`},
		{`{"u": {"css": "a", "url_regex": "(x"}}`, `extract.u: url_regex "(x": `},
		{`{"k": {"css": "a", "first": true}}`, `extract.k: unknown key "first"`},
		{`{"a": {"regex": "x", "attr": "href"}}`, `extract.a: attr: only css and xpath rules select elements`},
		{`{"a": {"css": "x", "all": "yes"}}`, `extract.a: all: want true or false`},
		{`{"j": {"jsonld": false}}`, `extract.j: jsonld: want true`},
		{`{"j": {"jsonld": true, "all": true}}`, `extract.j: all: a jsonld rule always gives every block`},
		{`{"e": {"css": ""}}`, `extract.e: css: want a non-empty string`},
		{`{"s": "title"}`, `extract.s: a rule is an object`},
		{`{"": {"css": "a"}}`, `extract.: a field name must not be empty`},
		{`["title"]`, `extract: not an object of rules`},
	} {
		_, err := extract.CompileJSON([]byte(tc.spec))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error holding %q", tc.spec, err, tc.want)
		}
	}
}

func TestEveryBadRuleIsNamedAtOnce(t *testing.T) {
	_, err := extract.CompileJSON([]byte(`{"a": {"css": "["}, "b": {"css": "b"}, "c": {"regex": "("}}`))
	if err == nil || !strings.HasPrefix(err.Error(), "extract.a: ") || !strings.Contains(err.Error(), "; extract.c: ") {
		t.Errorf("got %v, want a's and c's errors on one line", err)
	}
}

func TestTooManyRulesAreRefused(t *testing.T) {
	spec := map[string]any{}
	for i := range extract.MaxRules + 1 {
		spec[strings.Repeat("f", i+1)] = map[string]any{"css": "a"}
	}
	if _, err := extract.Compile(spec); err == nil || !strings.Contains(err.Error(), "more than the limit") {
		t.Errorf("got %v", err)
	}
}

func TestTheCacheCompilesOnceAndKeepsErrors(t *testing.T) {
	var c extract.Cache
	var wg sync.WaitGroup
	rules := make([]*extract.Rules, 8)
	for i := range rules {
		wg.Go(func() {
			rs, err := c.Get(`{"t": {"css": "title"}}`)
			if err != nil {
				t.Error(err)
			}
			rules[i] = rs
		})
	}
	wg.Wait()
	first, _ := c.Get(`{"t": {"css": "title"}}`)
	again, _ := c.Get(`{"t": {"css": "title"}}`)
	if first != again || again.Len() != 1 {
		t.Errorf("the cached rules were compiled again")
	}
	if _, err := c.Get(`{"t": {"css": "["}}`); err == nil || !strings.Contains(err.Error(), "extract.t") {
		t.Errorf("got %v", err)
	}
}
