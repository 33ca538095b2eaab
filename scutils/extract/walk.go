package extract

import (
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
	at   *html.Node // the last node matched, and whether it matches
	hit  bool
}

// walks reports whether the walk serves r.
func (r *rule) walks() bool {
	return r.kind == kindCSS || r.kind == kindXPath && r.simple != nil
}

// walk matches the rules on p's tree in one walk.
func (p *page) walk(ws []walked) {
	pending := len(ws)
	root := p.tree()
	for n := root; n != nil; {
		for i := range ws {
			w := &ws[i]
			if w.done {
				continue
			}
			if s := &ws[w.same]; s.at != n {
				s.at, s.hit = n, s.matches(n)
			}
			if ws[w.same].hit {
				w.take(p, n)
				if w.done {
					pending--
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
