package extract

import (
	"strings"

	"golang.org/x/net/html"
)

// simplePath is an xpath rule of the shapes most requests give, matched
// on the tree's elements directly instead of through antchfx/xpath's
// navigator (whose node copies and attribute queries were a third of 20
// rules' time on a 200 KB page, BenchmarkExtract):
//
//	//step              the elements step names
//	//step/@name        their attributes called name
//	count(either)       how many there are
//
// A step is an element name (ASCII letters, digits, '_' and '-', starting
// with a letter or '_') or '*', followed by any number of attribute tests
// [@name] or [@name='value'] (or "value"). parseSimplePath takes nothing
// else (no white space, positions, functions, unions, other axes, more
// steps: antchfx/xpath gives //a/b's nodes in the order of their a, not
// the document's), leaving those rules to antchfx/xpath. What it takes
// gives the nodes antchfx/xpath gives over htmlquery's navigator, in the
// same (document) order (TestOneWalkGivesWhatEachRuleGives,
// FuzzSimplePath): the step is an html.ElementNode whose Data is the name,
// an attribute test any attribute of that key (whatever its namespace, as
// htmlquery's navigator has no prefixes) with that value.
type simplePath struct {
	step  pathStep
	attr  string // "": the elements; else their attributes of that key
	count bool
}

type pathStep struct {
	name  string // "*": any element
	tests []attrTest
}

type attrTest struct {
	key, val string
	hasVal   bool
}

// parseSimplePath is src as a simplePath; ok is false when src is not of
// its shapes.
func parseSimplePath(src string) (sp *simplePath, ok bool) {
	sp = &simplePath{}
	s := src
	if rest, isCount := strings.CutPrefix(s, "count("); isCount {
		inner, closed := strings.CutSuffix(rest, ")")
		if !closed {
			return nil, false
		}
		sp.count, s = true, inner
	}
	if s, ok = strings.CutPrefix(s, "//"); !ok {
		return nil, false
	}
	if sp.step.name, s = cutName(s, true); sp.step.name == "" {
		return nil, false
	}
	for strings.HasPrefix(s, "[@") {
		var t attrTest
		if t, s, ok = cutAttrTest(s[2:]); !ok {
			return nil, false
		}
		sp.step.tests = append(sp.step.tests, t)
	}
	if rest, isAttr := strings.CutPrefix(s, "/@"); isAttr {
		sp.attr, s = cutName(rest, false)
		if sp.attr == "" {
			return nil, false
		}
	}
	return sp, s == ""
}

// cutName cuts a name (or, when star, '*') from the start of s.
func cutName(s string, star bool) (name, rest string) {
	if star && strings.HasPrefix(s, "*") {
		return "*", s[1:]
	}
	i := 0
	for i < len(s) && (isLetter(s[i]) || s[i] == '_' || i > 0 && (s[i] == '-' || '0' <= s[i] && s[i] <= '9')) {
		i++
	}
	return s[:i], s[i:]
}

// cutAttrTest cuts `name]` or `name='value']` from the start of s.
func cutAttrTest(s string) (t attrTest, rest string, ok bool) {
	if t.key, s = cutName(s, false); t.key == "" || s == "" {
		return t, s, false
	}
	if s[0] == ']' {
		return t, s[1:], true
	}
	if len(s) < 2 || s[0] != '=' || s[1] != '\'' && s[1] != '"' {
		return t, s, false
	}
	end := strings.IndexByte(s[2:], s[1])
	if end < 0 || !strings.HasPrefix(s[2+end+1:], "]") {
		return t, s, false
	}
	t.val, t.hasVal = s[2:2+end], true
	return t, s[2+end+2:], true
}

// match reports whether n is an element the path selects (or whose
// attributes it selects).
func (sp *simplePath) match(n *html.Node) bool { return sp.step.match(n) }

func (st *pathStep) match(n *html.Node) bool {
	if n.Type != html.ElementNode || st.name != "*" && n.Data != st.name {
		return false
	}
	for _, t := range st.tests {
		if !t.match(n) {
			return false
		}
	}
	return true
}

func (t attrTest) match(n *html.Node) bool {
	for _, a := range n.Attr {
		if a.Key == t.key && (!t.hasVal || a.Val == t.val) {
			return true
		}
	}
	return false
}
