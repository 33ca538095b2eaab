// Package extract is the declarative extraction of a crawl request's
// "extract" field: field name → rule, applied to every page of the crawl,
// its values published as the crawl result's "extracted".
//
// A rule is an object with exactly one of
//
//   - "css": a CSS selector (github.com/andybalholm/cascadia, goquery's
//     selector engine, used directly: a first match is found without
//     collecting the others);
//   - "xpath": an XPath 1.0 expression (github.com/antchfx/xpath over
//     github.com/antchfx/htmlquery's navigator); it may select elements,
//     attributes or text, or compute a string, number or boolean;
//   - "regex": a Go (RE2) regular expression matched against the page's
//     text as published (the body decoded to UTF-8); the value is its first
//     capture group, or the whole match when it has none;
//   - "jsonld": true, the page's <script type="application/ld+json"> blocks,
//     parsed, as a list (blocks that do not parse are left out);
//
// and optionally "attr" (css and xpath: an attribute's value instead of the
// element's text; href and src values resolved to absolute URLs against the
// page's URL or its <base href>, others as written), "all" (a list of every
// match instead of the first) and "url_regex" (apply only on pages whose URL
// it matches, anywhere in the URL). A field with no match is absent; with
// "all" it is an empty list. An element's text is its text content with
// leading and trailing white space trimmed.
//
// Rules are compiled once (Compile, CompileJSON; Cache keeps a crawl's) and
// every error names the rule: `extract.title: css "a[": ...`. The page is
// parsed once, and only when a css, xpath or jsonld rule applies to its
// URL; that one tree serves every kind. A Doc shares that parse with another
// reader of the page: Doc.Scan hands a TokenSink the tokens the tree is
// built from (the crawler's link extraction reads its links from them), and
// Rules.ApplyDoc then uses the tree.
//
// # Cost
//
// The tree is html.Parse's (golang.org/x/net/html), the one cascadia and
// htmlquery read. Most pages get it from buildTree (tree.go), which builds
// the same tree for plain markup (the implied html, head and body, void
// and raw text elements, implied end tags, formatting elements closed in
// order, comments, <!DOCTYPE html>), its strings substrings of the page
// and its nodes from pooled blocks, and gives up on anything else (tables,
// misnesting, svg, <select>, other doctypes...), which html.Parse then
// parses: every page gets html.Parse's tree (TestTreeMatchesParse,
// FuzzTree, TestRulesGiveTheSameOnEitherTree). It pays, on a 2-CPU
// machine at load 30-40, medians of 3 runs: the 200 KB page's tree takes
// 3.8 ms of CPU at p50 against html.Parse's 12.3 (BenchmarkTree), with 5
// allocations (BenchmarkParseFloor) against 60,675; BenchmarkExtract's 20
// rules take 7.1 ms at p50 and 13.7 at p99 against 21.2 and 27.6 on
// html.Parse's tree (BenchmarkExtractOnParse, same run); a test-site
// page's five rules 20 µs of CPU against 44 (BenchmarkTestSitePage).
//
// Where a rule needs them, the tree's <base href> and <script> elements
// are noted as it is built instead of looked for. An element's text with
// one text child is that child's, not a copy (innerText, as
// htmlquery.InnerText gives it, TestInnerTextIsHTMLQuerys): the page's
// 5,688 such elements take 0.13 ms and no allocation against 3.7 ms
// (BenchmarkInnerText, same machine). An href or src that is a plain path
// from the root resolves by concatenation (fastResolve, FuzzFastResolve
// against net/url): the page's 800 product links take 0.47 ms against 2.8
// (BenchmarkResolve); on a page without <base href> whose URL is plain,
// the page's URL is not parsed at all (plainBase).
//
// The css rules and the xpath rules of simplePath's shapes are matched in
// one walk of the tree (walk.go), rules of one expression sharing each
// node's match, the xpath ones on the elements directly instead of through
// antchfx/xpath's navigator. On a 2-CPU machine at load 16-22, pages
// alternating between the two ways (BenchmarkOneWalk): BenchmarkExtract's
// 20 rules take 0.65-0.76 of the CPU time of each rule on its own, a
// test-site page's five rules 0.95; the 20 rules allocate 9,610 times a
// page instead of 17,333. A matcher whose selector's subject names a tag
// (`li.item a`, `//span[@class='price']`: subjectTag, the step's name) is
// called only on elements of that tag, and once a node for all the rules
// that share it: the walk's share of the 20 rules' CPU went from 27% to
// 20% (pprof).
//
// The values allocate little: a list of strings is a []string (in a []any
// each string needed an allocation of its own), it starts with the room
// its rule's last page needed, and resolved URLs are written many to one
// allocation (joiner). The 20 rules allocate 1,974 times and 232 KB a page
// instead of 9,607 and 433 KB, 5 rules 32 times and 69 KB instead of 2,887
// and 134 KB; on a 2-CPU machine at load 18-24, runs alternating with the
// code before (BenchmarkExtract, 3 each), the 20 rules' process CPU time
// (the collector's included) is 2.7-5.2 ms a page at p50 and 8.7-11.2 at
// p99 against 5.7-6.7 and 12.2-16.7.
//
// The crawler takes the values as Values (ApplyJSON, ApplyDocJSON): the
// "extracted" object already written as its result writes it (the same
// bytes as Apply's map, TestValuesAreTheMapsJSON), from scratch memory the
// rules reuse page to page (each rule's list, the resolved URLs' buffer:
// joiner with reuse), so that a page allocates its JSON and little else;
// and a regex rule whose value is its whole match (no group, or a first
// group that is all of it) is run without its groups' positions (half the
// bytes a match allocates: Go's regexp has no way to find a match without
// allocating its positions). The 20 rules allocate 138 KB a page instead of
// 230 KB (1,945 times: the regex matches, one each), the 5 rules 45 KB and
// 19 times instead of 67 KB and 31; at GOGC=400 a collection comes every
// 100 or so pages instead of 60. Written as a crawl result writes them,
// the 20 rules take 0.91-0.93 of the process CPU time of Apply's map and
// its JSON (BenchmarkValues, pages alternating, 2-CPU machine at load
// 7-14); on their own, ApplyJSON's pages (BenchmarkExtract, which now
// includes writing the JSON) took 1,446-1,507 µs of thread CPU at p50 and
// 3,003-3,411 of process CPU at p99 against Apply's 1,354-1,392 and
// 3,435-3,635 (runs alternating with the code before, 1,000 pages, load
// 10-13).
//
// Times on this shared machine move with its load more than with small
// changes; instructions do not. Counted with cachegrind (BenchmarkApplyLoop,
// GOGC=off), the tree builder's last trims (attribute keys without
// atom.Lookup, a tag told from a comment or doctype by its second byte,
// end tags that close a block and special elements by switch and by atom,
// no look for '\r' or '&' in the pieces of a page that has none, the
// token passed by pointer) take a test-site page's five rules from 52.6k
// instructions to 46.1k, and the 20 rules on the 200 KB page from 24.2M
// to 21.1M (-12%).
//
// The collector: BenchmarkExtract runs at the crawler's setting (gctune,
// GOGC=400), where a collection comes every 60 or so pages of the 20
// rules (230 KB allocated a page, most of it the values), and so still
// lands in the p99 page; a row at GOGC=100 (a collection every 15 pages)
// is reported beside it. The tree's blocks (1.4 MB for the 200 KB page,
// live from page to page in their pools) are in memory the collector
// does not scan (noscanBlock), and its links are written without write
// barriers (setLink): a collection while the 20 rules run takes 11.0M
// instructions instead of 20.2M (cachegrind, BenchmarkApplyLoop 300 pages
// at GOGC=100 less GOGC=off, over the 24 collections; 12.2M with the
// barriers), for 0.25-0.35M more a page (the strings the builder makes
// are noted, the released blocks cleared: 21.6M instead of 21.3-21.4M).
// On a 2-CPU machine at load 15-19, runs alternating with the code before
// (BenchmarkExtract rules=20, 1,000 pages, GOGC=400, 3 each), the process
// CPU p99 is 4.4-5.2 ms against 5.9-8.0 (p50 2.4-2.5 against 2.2-4.3);
// at GOGC=100 5.2-7.0.
package extract

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/andybalholm/cascadia"
	"github.com/antchfx/htmlquery"
	"github.com/antchfx/xpath"
	"golang.org/x/net/html"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/wirejson"
)

// MaxRules is the most rules one request may give.
const MaxRules = 100

// kind is what a rule matches with.
type kind int

const (
	kindCSS kind = iota + 1
	kindXPath
	kindRegex
	kindJSONLD
)

// rule is one compiled rule.
type rule struct {
	name  string
	kind  kind
	css   cascadia.Selector
	xpath *xpathExprs
	// simple is the xpath rule as a simplePath, when it is of its shapes
	simple *simplePath
	src    string // the css or xpath expression, as given
	// first is the index of the first rule walked with the same matcher
	// (kind and src); -1 when this one is
	first int
	index int // the rule's in Rules.rules
	regex matcher
	// tag is the tag name of the elements the css or simple xpath rule may
	// match ("": any node), which the walk calls its matcher on
	tag   string
	attr  string
	all   bool
	onURL *regexp.Regexp // nil: every page
	// size is how many values the rule (all) gave on its last page, up to
	// maxSizeHint: the room its next page's list starts with, instead of
	// growing to it (read and written atomically: a crawl's rules serve
	// the crawler's pages at once)
	size int32
}

// maxSizeHint bounds rule.size.
const maxSizeHint = 1 << 12

// newVals is an empty list for the rule's values: the rule's list of p's
// scratch (ApplyJSON), else a new one with room for as many as its last
// page gave (nil without all).
func (p *page) newVals(r *rule) []string {
	if p.sc != nil {
		return p.sc.lists[r.index][:0]
	}
	if n := atomic.LoadInt32(&r.size); r.all && n > 0 {
		return make([]string, 0, n)
	}
	return nil
}

// Rules are a request's compiled rules, in field name order. A nil *Rules
// has no rules.
type Rules struct {
	rules []rule
	tree  bool // some rule reads the page's tree
	// oneByOne: each rule walks the tree on its own, xpath rules through
	// antchfx/xpath (what the one walk and simplePath are tested against)
	oneByOne  bool
	scratches *sync.Pool // of *scratch, for ApplyJSON
}

// Len is the number of rules.
func (rs *Rules) Len() int {
	if rs == nil {
		return 0
	}
	return len(rs.rules)
}

// Compile compiles an "extract" value as wirejson.Decode reads it (an
// object of rule objects). The error names every bad rule and why, in
// field name order, on one line.
func Compile(spec any) (*Rules, error) {
	obj, ok := spec.(map[string]any)
	if !ok {
		return nil, errors.New("extract: not an object of rules")
	}
	if len(obj) > MaxRules {
		return nil, fmt.Errorf("extract: %d rules, more than the limit of %d", len(obj), MaxRules)
	}
	rs := &Rules{scratches: &sync.Pool{}}
	var errs []string
	for _, name := range slices.Sorted(maps.Keys(obj)) {
		r, err := compileRule(name, obj[name])
		if err != nil {
			errs = append(errs, fmt.Sprintf("extract.%s: %v", name, err))
			continue
		}
		rs.tree = rs.tree || r.kind != kindRegex
		r.first = slices.IndexFunc(rs.rules, func(o rule) bool { return o.kind == r.kind && o.src == r.src && r.walks() })
		r.index = len(rs.rules)
		rs.rules = append(rs.rules, r)
	}
	if len(errs) > 0 {
		return nil, errors.New(strings.Join(errs, "; "))
	}
	return rs, nil
}

// CompileJSON compiles an "extract" value from its JSON text (as a queue
// member holds it).
func CompileJSON(raw []byte) (*Rules, error) {
	spec, err := wirejson.Decode(raw)
	if err != nil {
		return nil, fmt.Errorf("extract: %w", err)
	}
	return Compile(spec)
}

// ruleKeys are the keys a rule may have.
var ruleKeys = []string{"all", "attr", "css", "jsonld", "regex", "url_regex", "xpath"}

func compileRule(name string, spec any) (rule, error) {
	r := rule{name: name}
	if name == "" {
		return r, errors.New("a field name must not be empty")
	}
	obj, ok := spec.(map[string]any)
	if !ok {
		return r, errors.New(`a rule is an object, e.g. {"css": "title"}`)
	}
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		if !slices.Contains(ruleKeys, k) {
			return r, fmt.Errorf("unknown key %q (a rule has css, xpath, regex or jsonld, and attr, all, url_regex)", k)
		}
	}
	var kinds []string
	for _, k := range []string{"css", "xpath", "regex", "jsonld"} {
		if _, ok := obj[k]; ok {
			kinds = append(kinds, k)
		}
	}
	if len(kinds) != 1 {
		return r, fmt.Errorf("has %s: want exactly one of css, xpath, regex or jsonld", describeKinds(kinds))
	}
	if err := r.compileKind(kinds[0], obj[kinds[0]]); err != nil {
		return r, err
	}
	return r, r.compileOptions(obj)
}

func describeKinds(kinds []string) string {
	if len(kinds) == 0 {
		return "none of them"
	}
	return strings.Join(kinds, " and ")
}

func (r *rule) compileKind(k string, v any) error {
	if k == "jsonld" {
		if v != true {
			return errors.New("jsonld: want true")
		}
		r.kind = kindJSONLD
		return nil
	}
	s, ok := v.(string)
	if !ok || s == "" {
		return fmt.Errorf("%s: want a non-empty string", k)
	}
	var err error
	r.src = s
	switch k {
	case "css":
		r.kind = kindCSS
		if r.css, err = cascadia.Compile(s); err == nil {
			r.tag = subjectTag(s)
		}
	case "xpath":
		r.kind = kindXPath
		var e *xpath.Expr
		if e, err = xpath.Compile(s); err == nil {
			r.xpath = newXPathExprs(s, e)
			if sp, ok := parseSimplePath(s); ok {
				r.simple = sp
				if sp.step.name != "*" {
					r.tag = sp.step.name
				}
			}
		}
	case "regex":
		r.kind = kindRegex
		var re *regexp.Regexp
		if re, err = regexp.Compile(s); err == nil {
			r.regex = newMatcher(re)
		}
	}
	if err != nil {
		return fmt.Errorf("%s %q: %w", k, s, err)
	}
	return nil
}

func (r *rule) compileOptions(obj map[string]any) error {
	if v, ok := obj["attr"]; ok {
		s, isString := v.(string)
		switch {
		case !isString || s == "":
			return errors.New("attr: want an attribute name")
		case r.kind != kindCSS && r.kind != kindXPath:
			return errors.New("attr: only css and xpath rules select elements")
		}
		r.attr = strings.ToLower(s)
	}
	if v, ok := obj["all"]; ok {
		b, isBool := v.(bool)
		switch {
		case !isBool:
			return errors.New("all: want true or false")
		case r.kind == kindJSONLD:
			return errors.New("all: a jsonld rule always gives every block")
		}
		r.all = b
	}
	if v, ok := obj["url_regex"]; ok {
		s, isString := v.(string)
		if !isString {
			return errors.New("url_regex: want a regular expression")
		}
		re, err := regexp.Compile(s)
		if err != nil {
			return fmt.Errorf("url_regex %q: %w", s, err)
		}
		r.onURL = re
	}
	return nil
}

// Apply runs the rules on a page: its URL and its text (UTF-8). The result
// holds a value (a string, or for xpath a number or boolean), a list
// (all: a []string, or a []any of the one number or boolean an xpath
// computed; jsonld: a []any), or nothing for a field without a match; it
// is nil when no rule applies to the URL.
func (rs *Rules) Apply(pageURL, text string) map[string]any {
	return rs.apply(pageURL, text, false)
}

// ApplyDoc is Apply on a Doc, whose tree (if Scan built it) it reads
// instead of parsing the page again. The Doc is not released.
func (rs *Rules) ApplyDoc(d *Doc) map[string]any {
	return rs.applyPage(&d.p)
}

// apply is Apply, on html.Parse's tree when parseOnly (for the tests that
// compare buildTree's with it).
func (rs *Rules) apply(pageURL, text string, parseOnly bool) map[string]any {
	p := &page{url: pageURL, text: text}
	if parseOnly {
		p.root, p.parsed = parse(text), true
	}
	defer p.release()
	return rs.applyPage(p)
}

func (rs *Rules) applyPage(p *page) map[string]any {
	var out map[string]any
	if rs.run(p, func(r *rule, v any) {
		if out == nil {
			out = make(map[string]any, len(rs.rules))
		}
		out[r.name] = v
	}) && out == nil {
		out = map[string]any{}
	}
	return out
}

// run applies the rules to p, set called with each rule's value, if it
// has one; false when no rule applies to p's URL.
func (rs *Rules) run(p *page, set func(r *rule, v any)) (applies bool) {
	var room [8]walked
	ws := room[:0]
	for i := range rs.Len() {
		r := &rs.rules[i]
		if r.onURL != nil && !r.onURL.MatchString(p.url) {
			continue
		}
		applies = true
		if !rs.oneByOne && r.walks() {
			ws = append(ws, walked{r: r, same: len(ws), vals: p.newVals(r)})
			if r.first >= 0 { // share the match of the first rule of r's matcher, if walked
				first := &rs.rules[r.first]
				if j := slices.IndexFunc(ws, func(w walked) bool { return w.r == first }); j >= 0 {
					ws[len(ws)-1].same = j
				}
			}
			continue
		}
		if v, ok := r.apply(p); ok {
			set(r, v)
		}
	}
	if len(ws) > 0 {
		p.walk(ws)
		for i := range ws {
			if v, ok := ws[i].result(); ok {
				set(ws[i].r, v)
			}
		}
	}
	return applies
}

// page is a page being extracted from, parsed when first needed.
type page struct {
	url    string
	text   string
	root   *html.Node
	found  *treeIndex // nil: the tree is html.Parse's
	base   *url.URL
	prefix string // base's scheme and host, when fastResolve may use it
	// fragBase is base without its fragment, when fastFragment may use it
	fragBase string
	parsed   bool
	based    bool   // base is known
	joiner   joiner // makes the resolved URLs
	sc       *scratch
}

// tree parses the page once, for every css and xpath rule: buildTree's
// tree, or html.Parse's when buildTree gives up.
func (p *page) tree() *html.Node {
	if !p.parsed {
		p.build(nil)
	}
	return p.root
}

// build parses the page, sink (unless nil) seeing the tokens buildTree
// reads; false when buildTree gave up and html.Parse parsed it.
func (p *page) build(sink TokenSink) bool {
	p.parsed = true
	root, found, err := buildIndexedTree(p.text, sink)
	if err != nil {
		root = parse(p.text)
	}
	p.root, p.found = root, found
	return err == nil
}

// parse is html.Parse's tree of text; an empty document when text is
// nested too deep for it.
func parse(text string) *html.Node {
	root, err := html.Parse(strings.NewReader(text))
	if err != nil {
		return &html.Node{Type: html.DocumentNode}
	}
	return root
}

// baseURL is what href and src values resolve against: the page's URL, or
// its first <base href>; looked for (a walk of the tree) only when a value
// needs it. prefix and fragBase are set with it.
func (p *page) baseURL() *url.URL {
	if !p.based {
		p.based = true
		p.base, _ = url.Parse(p.url)
		if b := p.baseElement(); b != nil && p.base != nil {
			if href, ok := attrOf(b, "href"); ok {
				if u, err := p.base.Parse(strings.TrimSpace(href)); err == nil {
					p.base = u
				}
			}
		}
		p.prefix = resolvePrefix(p.base)
		if p.prefix != "" {
			b := *p.base
			b.Fragment, b.RawFragment = "", ""
			p.fragBase = b.String()
		}
	}
	return p.base
}

// plainBase sets prefix and fragBase without parsing the page's URL (what
// baseURL would set) when the page has no <base href> and its URL is
// plain (isPlainAbsolute: url.Parse gives it back as written, its scheme
// and host those written, TestPlainBaseIsBaseURLs); false otherwise.
func (p *page) plainBase() bool {
	if p.based || p.prefix != "" {
		return p.prefix != ""
	}
	if p.baseElement() != nil || !isPlainAbsolute(p.url) {
		return false
	}
	host, _, _ := strings.Cut(p.url[strings.Index(p.url, "//")+2:], "/")
	p.prefix = p.url[:strings.Index(p.url, "//")+2+len(host)]
	p.fragBase = p.url
	return true
}

// release gives buildTree's memory back once the rules are applied: what
// they give holds no node.
func (p *page) release() {
	if p.found != nil {
		p.found.release()
		p.found, p.root = nil, nil
	}
}

func (p *page) baseElement() *html.Node {
	if root := p.tree(); p.found == nil {
		return cascadia.Query(root, baseSel)
	}
	return p.found.base
}

var (
	baseSel   = cascadia.MustCompile("base[href]")
	jsonldSel = cascadia.MustCompile(`script[type="application/ld+json" i]`)
)

// apply is one rule's value on p, if it has one.
func (r *rule) apply(p *page) (any, bool) {
	switch r.kind {
	case kindCSS:
		return r.finish(r.applyCSS(p))
	case kindXPath:
		return r.applyXPath(p)
	case kindRegex:
		return r.finish(r.applyRegex(p))
	}
	return jsonLD(p), true
}

// finish is the rule's value from its values on the page: the first, or
// with all every one (a []string: the strings need no allocation of
// their own as a []any's would).
func (r *rule) finish(vals []string) (any, bool) {
	if r.all {
		if n := int32(min(len(vals), maxSizeHint)); atomic.LoadInt32(&r.size) != n {
			atomic.StoreInt32(&r.size, n)
		}
		if vals == nil {
			vals = []string{}
		}
		return vals, true
	}
	if len(vals) == 0 {
		return nil, false
	}
	return vals[0], true
}

// finishScalar is the rule's value when it computed v (an xpath number or
// boolean).
func (r *rule) finishScalar(v any) (any, bool) {
	if r.all {
		return []any{v}, true
	}
	return v, true
}

// limit is how many values a rule needs: one, or every one.
func (r *rule) limit() int {
	if r.all {
		return -1
	}
	return 1
}

func (r *rule) applyCSS(p *page) []string {
	vals := p.newVals(r)
	if !r.all {
		// The first element with a value: most often the first match,
		// found without collecting the others.
		if n := r.css.MatchFirst(p.tree()); n != nil {
			if v, ok := r.nodeValue(p, n); ok {
				return []string{v}
			}
		}
	}
	for _, n := range r.css.MatchAll(p.tree()) {
		if v, ok := r.nodeValue(p, n); ok {
			vals = append(vals, v)
			if !r.all {
				break
			}
		}
	}
	return vals
}

// applyXPath is the rule's value on p, if it has one (rule.apply).
func (r *rule) applyXPath(p *page) (any, bool) {
	nav := htmlquery.CreateXPathNavigator(p.tree())
	expr := r.xpath.get()
	defer r.xpath.put(expr)
	switch res := expr.Evaluate(nav).(type) {
	case *xpath.NodeIterator:
		vals := p.newVals(r)
		for (r.all || len(vals) == 0) && res.MoveNext() {
			n := res.Current().(*htmlquery.NodeNavigator)
			if n.NodeType() == xpath.AttributeNode {
				vals = append(vals, p.resolve(n.LocalName(), n.Value()))
			} else if v, ok := r.nodeValue(p, n.Current()); ok {
				vals = append(vals, v)
			}
		}
		return r.finish(vals)
	case string:
		if res == "" {
			return r.finish(nil)
		}
		return r.finish([]string{res})
	case float64, bool:
		return r.finishScalar(res)
	}
	return r.finish(nil)
}

// nodeValue is an element's value for the rule: its attribute attr, or
// its text.
func (r *rule) nodeValue(p *page, n *html.Node) (string, bool) {
	if r.attr == "" {
		return strings.TrimSpace(innerText(n)), true
	}
	v, ok := attrOf(n, r.attr)
	if !ok {
		return "", false
	}
	return p.resolve(r.attr, v), true
}

// resolve makes href and src values absolute against the page's base.
func (p *page) resolve(attr, v string) string {
	if attr != "href" && attr != "src" {
		return v
	}
	if p.plainBase() {
		if u, ok := fastResolve(&p.joiner, p.prefix, v); ok {
			return u
		}
		if u, ok := fastFragment(&p.joiner, p.fragBase, v); ok {
			return u
		}
	}
	base := p.baseURL()
	if base == nil {
		return v
	}
	if u, ok := fastResolve(&p.joiner, p.prefix, v); ok {
		return u
	}
	if u, ok := fastFragment(&p.joiner, p.fragBase, v); ok {
		return u
	}
	u, err := base.Parse(strings.TrimSpace(v))
	if err != nil {
		return v
	}
	return u.String()
}

func attrOf(n *html.Node, name string) (string, bool) {
	for _, a := range n.Attr {
		if a.Namespace == "" && strings.EqualFold(a.Key, name) {
			return a.Val, true
		}
	}
	return "", false
}

func (r *rule) applyRegex(p *page) []string {
	vals := p.newVals(r)
	group := 0 // the whole match
	if !r.regex.whole {
		group = 1
	}
	for loc := range r.regex.find(p.text, r.limit()) {
		if loc[2*group] < 0 { // the group took no part in the match
			vals = append(vals, "")
		} else {
			vals = append(vals, p.text[loc[2*group]:loc[2*group+1]])
		}
	}
	return vals
}

// scripts are the page's <script type="application/ld+json"> elements,
// or (when buildTree noted them) every <script>.
func (p *page) scripts() []*html.Node {
	if root := p.tree(); p.found == nil {
		return cascadia.QueryAll(root, jsonldSel)
	}
	return p.found.scripts
}

func isJSONLD(n *html.Node) bool {
	v, ok := attrOf(n, "type")
	return ok && strings.EqualFold(v, "application/ld+json")
}

// jsonLD is the page's JSON-LD blocks that parse, in page order.
func jsonLD(p *page) []any {
	blocks := []any{}
	for _, n := range p.scripts() {
		if !isJSONLD(n) {
			continue
		}
		var text bytes.Buffer
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			text.WriteString(c.Data)
		}
		if v, err := wirejson.Decode(bytes.TrimSpace(text.Bytes())); err == nil {
			blocks = append(blocks, v)
		}
	}
	return blocks
}
