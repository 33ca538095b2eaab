package extract

import (
	"slices"
	"strings"

	"golang.org/x/net/html"
	a "golang.org/x/net/html/atom"
)

// inBody is html.Parse's "in body" insertion mode, for what buildTree
// accepts.
func (b *treeBuilder) inBody(t *token) bool {
	switch t.typ {
	case tokText:
		d := t.data
		if n := b.top(); (n.DataAtom == a.Pre || n.DataAtom == a.Listing) && n.FirstChild == nil {
			d = skipNewline(d)
		}
		if d != "" {
			b.reconstruct()
			b.addText(d)
		}
	case tokStart:
		b.bodyStart(t)
	case tokEnd:
		return b.bodyEnd(t)
	case tokComment:
		b.addComment(t)
	}
	return true
}

func (b *treeBuilder) bodyStart(t *token) {
	switch at := t.atom; at {
	case a.Base, a.Basefont, a.Bgsound, a.Link, a.Meta:
		b.addVoid(t)
	case a.Noframes, a.Script, a.Style, a.Title, a.Iframe, a.Noembed, a.Noscript, a.Textarea:
		b.addRawText(t)
	case a.Xmp:
		b.popUntil(buttonScope, a.P)
		b.reconstruct()
		b.addRawText(t)
	case a.Address, a.Article, a.Aside, a.Blockquote, a.Center, a.Details, a.Dialog, a.Dir, a.Div, a.Dl,
		a.Fieldset, a.Figcaption, a.Figure, a.Footer, a.Header, a.Hgroup, a.Main, a.Menu, a.Nav, a.Ol, a.P, a.Search,
		a.Section, a.Summary, a.Ul, a.Pre, a.Listing:
		b.popUntil(buttonScope, a.P)
		b.addElement(t)
	case a.H1, a.H2, a.H3, a.H4, a.H5, a.H6:
		b.popUntil(buttonScope, a.P)
		if isHeading(b.top().DataAtom) {
			b.oe = b.oe[:len(b.oe)-1]
		}
		b.addElement(t)
	default:
		b.bodyStartOther(t)
	}
}

func isHeading(at a.Atom) bool {
	switch at {
	case a.H1, a.H2, a.H3, a.H4, a.H5, a.H6:
		return true
	}
	return false
}

func (b *treeBuilder) bodyStartOther(t *token) {
	switch at := t.atom; at {
	case a.Form:
		if b.form == nil {
			b.popUntil(buttonScope, a.P)
			b.addElement(t)
			b.form = b.top()
		}
	case a.Li:
		b.closeListItem(a.Li)
		b.popUntil(buttonScope, a.P)
		b.addElement(t)
	case a.Dd, a.Dt:
		b.closeListItem(a.Dd, a.Dt)
		b.popUntil(buttonScope, a.P)
		b.addElement(t)
	case a.Button:
		if b.inScope(defaultScope, a.Button) >= 0 {
			b.impliedEndTags("")
			b.popUntil(defaultScope, a.Button)
		}
		b.reconstruct()
		b.addElement(t)
	case a.A, a.B, a.Big, a.Code, a.Em, a.Font, a.I, a.S, a.Small, a.Strike, a.Strong, a.Tt, a.U:
		b.addFormatting(t)
	case a.Area, a.Br, a.Embed, a.Img, a.Keygen, a.Wbr, a.Input:
		b.reconstruct()
		b.addVoid(t)
	case a.Param, a.Source, a.Track:
		b.addVoid(t)
	case a.Hr:
		if b.inScope(buttonScope, a.P) >= 0 {
			b.impliedEndTags("p")
			b.popUntil(defaultScope, a.P)
		}
		b.addVoid(t)
	case a.Html, a.Body, a.Frameset, a.Template, a.Nobr, a.Applet, a.Marquee, a.Object, a.Table, a.Select,
		a.Option, a.Optgroup, a.Rb, a.Rtc, a.Rp, a.Rt, a.Math, a.Svg, a.Caption, a.Col, a.Colgroup, a.Frame, a.Head,
		a.Tbody, a.Td, a.Tfoot, a.Th, a.Thead, a.Tr, a.Image, a.Plaintext:
		unsure() // left to html.Parse
	default:
		b.reconstruct()
		b.addElement(t)
	}
}

// isFormatting is whether at is a formatting element's (but <nobr>).
func isFormatting(at a.Atom) bool {
	switch at {
	case a.A, a.B, a.Big, a.Code, a.Em, a.Font, a.I, a.S, a.Small, a.Strike, a.Strong, a.Tt, a.U:
		return true
	}
	return false
}

// closeListItem closes an open list item of the kinds given before another
// starts, as html.Parse does.
func (b *treeBuilder) closeListItem(kinds ...a.Atom) {
	for i := len(b.oe) - 1; i >= 0; i-- {
		n := b.oe[i]
		if oneOf(n.DataAtom, kinds...) {
			b.oe = b.oe[:i]
			return
		}
		if n.DataAtom != a.Address && n.DataAtom != a.Div && n.DataAtom != a.P && isSpecial(n) {
			return
		}
	}
}

// closesBlock reports whether at is an end tag that closes an element in
// scope (a switch, not a list to scan: every end tag asks).
func closesBlock(at a.Atom) bool {
	switch at {
	case a.Address, a.Article, a.Aside, a.Blockquote, a.Button, a.Center, a.Details, a.Dialog, a.Dir,
		a.Div, a.Dl, a.Fieldset, a.Figcaption, a.Figure, a.Footer, a.Header, a.Hgroup, a.Listing, a.Main, a.Menu, a.Nav,
		a.Ol, a.Pre, a.Search, a.Section, a.Summary, a.Ul:
		return true
	}
	return false
}

func (b *treeBuilder) bodyEnd(t *token) bool {
	switch at := t.atom; {
	case at == a.Body:
		if b.inScope(defaultScope, a.Body) >= 0 {
			b.mode = modeAfterBody
		}
	case at == a.Html:
		if b.inScope(defaultScope, a.Body) >= 0 {
			b.mode = modeAfterBody
			return false
		}
	case closesBlock(at):
		if b.inScope(defaultScope, at) >= 0 {
			b.impliedEndTags("")
			b.popUntil(defaultScope, at)
		}
	case at == a.Form:
		b.endForm()
	case at == a.P:
		if b.inScope(buttonScope, a.P) < 0 {
			b.bodyStart(&token{typ: tokStart, atom: a.P, data: "p"})
		}
		b.popUntil(buttonScope, a.P)
	case at == a.Li:
		b.popUntil(listItemScope, a.Li)
	case at == a.Dd, at == a.Dt:
		b.popUntil(defaultScope, at)
	case isHeading(at):
		b.popUntil(defaultScope, a.H1, a.H2, a.H3, a.H4, a.H5, a.H6)
	case isFormatting(at), at == a.Nobr:
		b.endFormatting(t)
	case oneOf(at, a.Applet, a.Marquee, a.Object, a.Br, a.Template, a.Select):
		unsure()
	default:
		b.endOther(t)
	}
	return true
}

func (b *treeBuilder) endForm() {
	node := b.form
	b.form = nil
	i := b.inScope(defaultScope, a.Form)
	if node == nil || i < 0 || b.oe[i] != node {
		return
	}
	b.impliedEndTags("")
	if b.top() != node {
		unsure() // the form leaves the stack from below other elements
	}
	b.oe = b.oe[:len(b.oe)-1]
}

// endOther is html.Parse's "any other end tag".
func (b *treeBuilder) endOther(t *token) {
	for i := len(b.oe) - 1; i >= 0; i-- {
		n := b.oe[i]
		if n.DataAtom == t.atom && (t.atom != 0 || n.Data == t.data) {
			b.oe = b.oe[:i]
			return
		}
		if isSpecial(n) {
			return
		}
	}
}

// addFormatting adds a formatting element (<a>, <b>, <i>...), which
// html.Parse also lists as active, its attributes sorted.
func (b *treeBuilder) addFormatting(t *token) {
	if t.atom == a.A && slices.ContainsFunc(b.afe, func(n *html.Node) bool { return n.DataAtom == a.A }) {
		unsure() // an <a> inside an <a>
	}
	b.reconstruct()
	slices.SortFunc(t.attr, attrCompare)
	same := 0
	for _, n := range b.afe {
		if n.DataAtom == t.atom && slices.Equal(n.Attr, t.attr) {
			same++
		}
	}
	if same >= 3 {
		unsure() // the Noah's Ark clause
	}
	b.addElement(t)
	b.afe = append(b.afe, b.top())
}

// reconstruct is html.Parse's reconstruction of the active formatting
// elements, when there is none to reconstruct.
func (b *treeBuilder) reconstruct() {
	if len(b.afe) == 0 {
		return
	}
	if !slices.Contains(b.oe, b.afe[len(b.afe)-1]) {
		unsure()
	}
}

// endFormatting is the adoption agency when nothing needs adopting: the
// formatting element is closed in order.
func (b *treeBuilder) endFormatting(t *token) {
	if top := b.top(); top.Data == t.data && !slices.Contains(b.afe, top) {
		b.oe = b.oe[:len(b.oe)-1]
		return
	}
	fi := -1
	for j := len(b.afe) - 1; j >= 0; j-- {
		if b.afe[j].DataAtom == t.atom {
			fi = j
			break
		}
	}
	if fi < 0 {
		b.endOther(t)
		return
	}
	fe := b.afe[fi]
	oi := slices.Index(b.oe, fe)
	switch {
	case oi < 0:
		b.afe = slices.Delete(b.afe, fi, fi+1)
		return
	case b.inScope(defaultScope, t.atom) < 0:
		return
	case slices.ContainsFunc(b.oe[oi:], isSpecial):
		unsure() // the furthest block: nodes are moved
	}
	b.oe = b.oe[:oi]
	b.afe = slices.Delete(b.afe, fi, fi+1)
}

type scope int

const (
	defaultScope scope = iota
	listItemScope
	buttonScope
)

// inScope is the index in the open elements of the highest of tags in
// scope, or -1. Of the default scope's bounds, only <html> can be open
// here: buildTree leaves the others to html.Parse.
func (b *treeBuilder) inScope(s scope, tags ...a.Atom) int {
	for i := len(b.oe) - 1; i >= 0; i-- {
		at := b.oe[i].DataAtom
		switch {
		case oneOf(at, tags...):
			return i
		case at == a.Html,
			s == listItemScope && (at == a.Ol || at == a.Ul),
			s == buttonScope && at == a.Button:
			return -1
		}
	}
	return -1
}

func (b *treeBuilder) popUntil(s scope, tags ...a.Atom) {
	if i := b.inScope(s, tags...); i >= 0 {
		b.oe = b.oe[:i]
	}
}

// impliedEndTags closes the elements whose end tags are implied, but except.
func (b *treeBuilder) impliedEndTags(except string) {
	for len(b.oe) > 0 {
		n := b.top()
		switch n.DataAtom {
		case a.Dd, a.Dt, a.Li, a.Optgroup, a.Option, a.P, a.Rb, a.Rp, a.Rt, a.Rtc:
		default:
			return
		}
		if n.Data == except {
			return
		}
		b.oe = b.oe[:len(b.oe)-1]
	}
}

// special are html.Parse's special elements (golang.org/x/net/html's
// isSpecialElementMap), by atom: each is one, and the builder's elements
// of an atom are named by it (tagAtom), those of none are no special ones.
var special = func() map[a.Atom]bool {
	m := map[a.Atom]bool{}
	for _, s := range strings.Fields(`address applet area article aside base basefont bgsound blockquote body br
		button caption center col colgroup dd details dir div dl dt embed fieldset figcaption figure footer form
		frame frameset h1 h2 h3 h4 h5 h6 head header hgroup hr html iframe img input keygen li link listing main
		marquee menu meta nav noembed noframes noscript object ol p param plaintext pre script section select
		source style summary table tbody td template textarea tfoot th thead title tr track ul wbr xmp`) {
		at := a.Lookup([]byte(s))
		if at == 0 {
			panic("extract: special element " + s + " has no atom")
		}
		m[at] = true
	}
	return m
}()

func isSpecial(n *html.Node) bool { return n.Namespace == "" && n.DataAtom != 0 && special[n.DataAtom] }
