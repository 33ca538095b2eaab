package extract

import (
	"slices"
	"strings"

	"golang.org/x/net/html"
)

// The rules that select elements (css, and xpath of simplePath's shapes)
// are matched in one walk of the tree, every node visited once for all of
// them, instead of one walk each (cascadia's MatchAll and MatchFirst,
// antchfx/xpath's descendant query). The walk visits the nodes in the
// order cascadia does (the document's: a node, then its children), calls
// each rule's matcher on every node, as cascadia does, and stops as soon
// as every rule has what it needs (the first value of a rule without
// "all"). A rule's values are those its own walk gave
// (TestOneWalkGivesWhatEachRuleGives, FuzzOneWalk).

// walked is a rule the walk serves and what it found.
type walked struct {
	r     *rule
	vals  []string
	count int
	done  bool
	// same is the index of the first rule of the walk with r's kind and
	// expression (its own when none is before it), whose match of a node
	// serves both
	same int
	next int // the next rule of the walk with the same matcher; -1: none
}

// walks reports whether the walk serves r.
func (r *rule) walks() bool {
	return r.kind == kindCSS || r.kind == kindXPath && r.simple != nil
}

// group is the rules of the walk that share one matcher: ws[first] and
// those whose same is first, linked by their next.
type group struct {
	first   int
	pending int // rules of the group not done
	tag     string
}

// groups are ws's groups, each of the tag of its matcher (rule.tag); they
// link their rules.
func groups(ws []walked, room []group) []group {
	gs := room[:0]
	for i := range ws {
		ws[i].next = -1
		if f := ws[i].same; f == i {
			gs = append(gs, group{first: i, tag: ws[i].r.tag})
		} else {
			last := f
			for ws[last].next >= 0 {
				last = ws[last].next
			}
			ws[last].next = i
		}
		gs[slices.IndexFunc(gs, func(g group) bool { return g.first == ws[i].same })].pending++
	}
	return gs
}

// walk matches the rules on p's tree in one walk. A matcher of a tag
// (rule.tag) is called only on the elements of that tag; each group's
// matcher once a node, and only while some rule of the group wants more.
func (p *page) walk(ws []walked) {
	var room [8]group
	gs := groups(ws, room[:])
	pending := len(ws)
	root := p.tree()
	for n := root; n != nil; {
		for gi := range gs {
			g := &gs[gi]
			if g.pending == 0 || g.tag != "" && (n.Type != html.ElementNode || n.Data != g.tag) || !ws[g.first].matches(n) {
				continue
			}
			for i := g.first; i >= 0; i = ws[i].next {
				if w := &ws[i]; !w.done {
					w.take(p, n)
					if w.done {
						g.pending--
						pending--
					}
				}
			}
		}
		if pending == 0 {
			return
		}
		if n.FirstChild != nil {
			n = n.FirstChild
			continue
		}
		for n != root && n.NextSibling == nil {
			n = n.Parent
		}
		if n == root {
			return
		}
		n = n.NextSibling
	}
}

func (w *walked) matches(n *html.Node) bool {
	if w.r.kind == kindCSS {
		return w.r.css(n)
	}
	return w.r.simple.match(n)
}

// take adds n's values (n matches the rule).
func (w *walked) take(p *page, n *html.Node) {
	r, sp := w.r, w.r.simple
	switch {
	case sp != nil && sp.attr != "":
		for _, a := range n.Attr {
			if a.Key != sp.attr {
				continue
			}
			if sp.count {
				w.count++
			} else {
				w.vals = append(w.vals, p.resolve(a.Key, a.Val))
			}
		}
	case sp != nil && sp.count:
		w.count++
	default:
		if v, ok := r.nodeValue(p, n); ok {
			w.vals = append(w.vals, v)
		}
	}
	if !r.all && len(w.vals) > 0 {
		w.vals, w.done = w.vals[:1], true
	}
}

// result is the rule's value from what the walk found (rule.apply's).
func (w *walked) result() (any, bool) {
	if w.r.simple != nil && w.r.simple.count {
		return w.r.finishScalar(float64(w.count))
	}
	return w.r.finish(w.vals)
}

// subjectTag is the tag name an element must have to match the css
// selector sel (the type selector of its subject, the last compound, as
// cascadia reads it: lower case), or "" when sel is not of the plain
// shapes read here: one selector (no ','), no quotes or escapes, no
// namespace ('|'), its subject starting with a name of ASCII letters,
// digits, '-' and '_' followed by nothing or by a class, id, attribute or
// pseudo-class. sel is one cascadia compiles. TestSubjectTag,
// FuzzCSSOneWalk.
func subjectTag(sel string) string {
	sel = strings.TrimSpace(sel)
	if strings.ContainsAny(sel, ",\\\"'|") {
		return ""
	}
	start, depth := 0, 0
	for i := 0; i < len(sel); i++ {
		switch c := sel[i]; {
		case c == '[' || c == '(':
			depth++
		case c == ']' || c == ')':
			depth--
		case depth == 0 && (spaceSet[c] || c == '>' || c == '+' || c == '~'):
			start = i + 1
		}
	}
	subject := sel[start:]
	i := 0
	for i < len(subject) && (isLetter(subject[i]) || i > 0 && (subject[i] == '-' || subject[i] == '_' || '0' <= subject[i] && subject[i] <= '9')) {
		i++
	}
	if i == 0 || i < len(subject) && !strings.ContainsRune(".#[:", rune(subject[i])) {
		return ""
	}
	return lowerASCII(subject[:i])
}
