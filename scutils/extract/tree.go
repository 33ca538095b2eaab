package extract

import (
	"cmp"
	"errors"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/net/html"
	a "golang.org/x/net/html/atom"
)

// The fast tree builder. html.Parse runs the whole HTML5 algorithm and
// allocates every token's strings, every node and every attribute list on
// its own; on a 200 KB page that is most of an extraction's time (see the
// package doc). buildTree builds the same tree for the pages most sites
// serve: well-formed tags, attributes quoted or plain, comments, a
// <!DOCTYPE html>, the implied <html>, <head> and <body>, void and raw
// text elements, the implied end tags of p, li, dd and dt, closing
// formatting elements in order. Its strings are the page's own (substrings,
// copied only when an entity, a carriage return or upper case changes
// them) and its nodes and attribute lists come from a few large blocks.
//
// It follows html.Parse (golang.org/x/net/html, scripting on) step for step
// on what it accepts, and gives up (errUnsure) on anything else: tables,
// forms' and formatting elements' repairs (the adoption agency,
// reconstruction), foreign content (svg, math), templates, framesets,
// <select>, other doctypes, bogus comments, NUL bytes, tags it cannot read
// plainly, more than maxDepth open elements. The page is then parsed by
// html.Parse, so every page gets html.Parse's tree; TestTreeMatchesParse
// and FuzzTree compare the two.

// errUnsure stops buildTree where it cannot be sure to build what
// html.Parse builds.
var errUnsure = errors.New("extract: the fast tree builder gives up")

// maxDepth is html.Parse's bound on open elements (it fails above it).
const maxDepth = 512

type insertionMode int

const (
	modeInitial insertionMode = iota
	modeBeforeHTML
	modeBeforeHead
	modeInHead
	modeAfterHead
	modeInBody
	modeAfterBody
	modeAfterAfterBody
)

type tokenType int

const (
	tokText tokenType = iota
	tokStart
	tokEnd
	tokComment
	tokDoctype
	tokEOF
)

// token is one token of the page, as the x/net/html tokenizer gives it.
type token struct {
	typ         tokenType
	atom        a.Atom
	data        string // tag name (lower case), text, comment
	attr        []html.Attribute
	selfClosing bool // a start tag written <name/>
}

// treeBuilder is buildTree's state: html.Parse's parser, reduced.
type treeBuilder struct {
	src        string
	pos        int
	doc        *html.Node
	oe, afe    []*html.Node // open elements; active formatting elements
	form       *html.Node
	mode       insertionMode
	nodes      []html.Node      // the free part of the current block
	attrs      []html.Attribute // likewise
	scratch    []html.Attribute // the tag being read
	found      treeIndex
	joined     *html.Node // the text node whose text is being joined
	joinedText []byte     // its text so far
	sink       TokenSink  // nil: the tokens are for the tree only
	cr, amp    bool       // the page has a '\r', a '&' (none: no piece has)
	// held are the tree's strings and attribute lists that are no part of
	// src: what keeps them alive for the garbage collector (own)
	held      []string
	heldAttrs [][]html.Attribute
}

// treeIndex are elements buildTree notes on its way, in document order,
// so that no walk of the tree needs to look for them.
type treeIndex struct {
	scripts []*html.Node                 // every <script>
	base    *html.Node                   // the first <base href>
	nodes   []*[blockSize]html.Node      // the tree's memory
	attrs   []*[blockSize]html.Attribute // likewise
	builder *treeBuilder                 // that built it, and is used again
}

// Nodes and attributes come in blocks, used again once a tree is no longer
// needed (release), as the builders are, so that a page's tree costs the
// garbage collector next to nothing.
const blockSize = 256

var (
	nodeBlocks = sync.Pool{New: func() any { return noscanBlock[html.Node]() }}
	attrBlocks = sync.Pool{New: func() any { return noscanBlock[html.Attribute]() }}
	builders   = sync.Pool{New: func() any { return new(treeBuilder) }}
)

// noscanBlock is a block of blockSize Ts in memory the garbage collector
// does not scan: allocated as words that hold no pointers. A pooled block
// stays live from page to page, and a 200 KB page's tree fills 1.4 MB of
// them; when the blocks were of their own type, every collection scanned
// them, for 2-3 ms of CPU, most of a collection (pprof, BenchmarkExtract).
//
// Why the tree's pointers may live there. The collector marks a block,
// as any heap object, when something it scans points into it (a
// *html.Node on a stack, treeIndex.nodes); it never looks inside, so
// nothing the tree points to is kept alive by the tree. Each pointer a
// node or attribute holds is to one of:
//   - another node, or an attribute list, in a block of the same tree:
//     kept by treeIndex.nodes and .attrs (and the builder that holds them)
//     until release, like the blocks;
//   - the page's text (substrings): kept by treeBuilder.src, and by the
//     caller's page;
//   - the atom table's names, static data the collector never frees;
//   - a string the builder made (a decoded, lowered or joined text) or an
//     attribute list too long for a block: where it is made, the builder
//     puts it in treeBuilder.held or .heldAttrs (own, keepAttrs), scanned,
//     until release.
//
// So whatever the tree points to is reachable from a scanned object for as
// long as the tree is used: from its building to its release (a tree must
// not be used after its treeIndex is released or unreachable: BuildTree's
// release in the tests). For the same reason no write barrier is needed
// for the tree's own fields, which newNode, appendChild and keepAttrs
// write as plain words (setLink). A released block's old values may be to
// freed memory, which a barrier must never see: release clears the blocks
// as plain words, so that a node or attribute starts as zeros (newNode
// writes only its non-zero fields).
// FuzzTree, TestTreeSurvivesCollections (GOGC=1 and GODEBUG=gccheckmark=1,
// invalidptr=1 in its child) and the race detector's checkptr try it.
func noscanBlock[T any]() *[blockSize]T {
	words := make([]uintptr, blockSize*unsafe.Sizeof(*new(T))/unsafe.Sizeof(uintptr(0)))
	return (*[blockSize]T)(unsafe.Pointer(unsafe.SliceData(words)))
}

// clearWords zeroes the n Ts at p as plain words: no write barrier sees
// their old values (noscanBlock).
func clearWords[T any](p *T, n int) {
	clear(unsafe.Slice((*uintptr)(unsafe.Pointer(p)), uintptr(n)*unsafe.Sizeof(*p)/unsafe.Sizeof(uintptr(0))))
}

// own keeps s, a string the builder made, alive with the tree
// (noscanBlock) unless it is the page's own text after all (a substring of
// src), and returns it. Every string the builder makes goes through it
// where it is made: textOf, attrText, addAttr's and startTag's lower-case
// names, join.
func (b *treeBuilder) own(s string) string {
	if s != "" && uintptr(unsafe.Pointer(unsafe.StringData(s)))-uintptr(unsafe.Pointer(unsafe.StringData(b.src))) >= uintptr(len(b.src)) {
		b.held = append(b.held, s)
	}
	return s
}

// release gives the tree's memory back: no node of the tree may be used
// after it.
func (x *treeIndex) release() {
	for _, b := range x.nodes {
		clearWords(&b[0], blockSize)
		nodeBlocks.Put(b)
	}
	for _, b := range x.attrs {
		clearWords(&b[0], blockSize)
		attrBlocks.Put(b)
	}
	b := x.builder
	if b == nil {
		return
	}
	clear(b.oe)
	clear(b.afe)
	clear(x.scripts)
	clear(b.held)
	clear(b.heldAttrs)
	*b = treeBuilder{oe: b.oe[:0], afe: b.afe[:0], scratch: b.scratch[:0], joinedText: b.joinedText[:0],
		held: b.held[:0], heldAttrs: b.heldAttrs[:0],
		found: treeIndex{scripts: x.scripts[:0], nodes: x.nodes[:0], attrs: x.attrs[:0]}}
	builders.Put(b)
}

// buildIndexedTree is buildTree, and the elements it noted; sink, unless
// nil, sees the tokens it reads (until it gives up).
func buildIndexedTree(src string, sink TokenSink) (root *html.Node, found *treeIndex, err error) {
	b := builders.Get().(*treeBuilder)
	b.src, b.found.builder, b.sink = src, b, sink
	defer func() {
		if r := recover(); r != nil {
			if r != errUnsure {
				panic(r)
			}
			b.found.release()
			root, found, err = nil, nil, errUnsure
		}
	}()
	if strings.IndexByte(src, 0) >= 0 {
		unsure()
	}
	b.cr, b.amp = strings.IndexByte(src, '\r') >= 0, strings.IndexByte(src, '&') >= 0
	b.doc = b.newNode(html.DocumentNode, 0, "", nil)
	for {
		t := b.next()
		if b.sink != nil {
			b.emit(&t)
		}
		b.process(&t)
		if t.typ == tokEOF {
			b.join(nil)
			return b.doc, &b.found, nil
		}
	}
}

func unsure() { panic(errUnsure) }

func (b *treeBuilder) newNode(typ html.NodeType, at a.Atom, data string, attr []html.Attribute) *html.Node {
	if len(b.nodes) == 0 {
		bl := nodeBlocks.Get().(*[blockSize]html.Node)
		b.found.nodes = append(b.found.nodes, bl)
		b.nodes = bl[:]
	}
	n := &b.nodes[0] // all zeros (noscanBlock)
	b.nodes = b.nodes[1:]
	n.Type, n.DataAtom = typ, at
	setString(&n.Data, data)
	setAttrs(&n.Attr, attr)
	return n
}

// The tree's pointers are written as plain words (setLink, appendChild):
// they are in blocks the collector never scans (noscanBlock), so a write
// barrier has nothing to keep for it, and a collection that runs while a
// tree is built would otherwise take a barrier for every link and string
// of every node (2.4M instructions a collection on the 200 KB page,
// cachegrind).

// setLink, setString and setAttrs write a node's pointer, string or
// attribute list as plain words, without a write barrier: the node is in
// a block (noscanBlock), and what it points to is kept alive elsewhere.
func setLink(dst **html.Node, n *html.Node) {
	*(*uintptr)(unsafe.Pointer(dst)) = uintptr(unsafe.Pointer(n))
}

func setString(dst *string, s string) {
	*(*[2]uintptr)(unsafe.Pointer(dst)) = *(*[2]uintptr)(unsafe.Pointer(&s))
}

func setAttrs(dst *[]html.Attribute, attr []html.Attribute) {
	*(*[3]uintptr)(unsafe.Pointer(dst)) = *(*[3]uintptr)(unsafe.Pointer(&attr))
}

// appendChild is n.AppendChild(c) for a new node c (no parent, no
// siblings), its links written by setLink.
func appendChild(n, c *html.Node) {
	last := n.LastChild
	if last != nil {
		setLink(&last.NextSibling, c)
	} else {
		setLink(&n.FirstChild, c)
	}
	setLink(&n.LastChild, c)
	setLink(&c.Parent, n)
	setLink(&c.PrevSibling, last)
}

func (b *treeBuilder) top() *html.Node {
	if len(b.oe) == 0 {
		return b.doc
	}
	return b.oe[len(b.oe)-1]
}

// process runs a token through the insertion modes until one consumes it
// (which may trim its text).
func (b *treeBuilder) process(t *token) {
	for i := 0; ; i++ {
		if i > 16 { // never happens: the modes always move on
			unsure()
		}
		if b.step(t) {
			return
		}
	}
}

func (b *treeBuilder) step(t *token) bool {
	switch b.mode {
	case modeInitial:
		return b.initial(t)
	case modeBeforeHTML:
		return b.before(t, a.Html, modeBeforeHead)
	case modeBeforeHead:
		return b.before(t, a.Head, modeInHead)
	case modeInHead:
		return b.inHead(t)
	case modeAfterHead:
		return b.afterHead(t)
	case modeInBody:
		return b.inBody(t)
	default:
		return b.afterBody(t)
	}
}

const whitespace = " \t\r\n\f"

// leadingSpace trims t's leading white space; true when nothing is left.
func leadingSpace(t *token) bool {
	t.data = strings.TrimLeft(t.data, whitespace)
	return t.data == ""
}

func (b *treeBuilder) initial(t *token) bool {
	switch t.typ {
	case tokText:
		if leadingSpace(t) {
			return true
		}
	case tokComment:
		appendChild(b.doc, b.newNode(html.CommentNode, 0, t.data, nil))
		return true
	case tokDoctype:
		if t.data != "html" {
			unsure() // other doctypes: quirks and identifiers
		}
		appendChild(b.doc, b.newNode(html.DoctypeNode, 0, "html", nil))
		b.mode = modeBeforeHTML
		return true
	}
	b.mode = modeBeforeHTML // in quirks mode, which matters to tables only
	return false
}

// beforeAlike takes what "before html" and "before head" take alike
// (and ignore): white space, doctypes, end tags but </head>, </body>,
// </html> and </br>; false for the others.
func beforeAlike(t *token) bool {
	switch t.typ {
	case tokText:
		return leadingSpace(t)
	case tokDoctype:
		return true
	case tokEnd:
		return !oneOf(t.atom, a.Head, a.Body, a.Html, a.Br)
	}
	return false
}

// before is "before html" (want: html, next: before head) and "before
// head" (want: head, next: in head): the element wanted is added, from its
// tag or implied by anything else but what beforeAlike ignores and
// comments. With no element open yet, the current node is the document.
func (b *treeBuilder) before(t *token, want a.Atom, next insertionMode) bool {
	switch {
	case beforeAlike(t):
		return true
	case t.typ == tokStart && t.atom == want:
		b.addElement(t)
		b.mode = next
		return true
	case t.typ == tokStart && t.atom == a.Html:
		unsure() // before head: its attributes go to <html>
	case t.typ == tokComment:
		b.addComment(t)
		return true
	}
	b.implied(want)
	b.mode = next
	return false
}

// leadingText adds t's leading white space to the current node and keeps
// the rest; true when nothing is left.
func (b *treeBuilder) leadingText(t *token) bool {
	s := strings.TrimLeft(t.data, whitespace)
	if len(s) < len(t.data) {
		b.addText(t.data[:len(t.data)-len(s)])
		t.data = s
	}
	return s == ""
}

func (b *treeBuilder) inHead(t *token) bool {
	switch t.typ {
	case tokStart:
		switch t.atom {
		case a.Base, a.Basefont, a.Bgsound, a.Link, a.Meta:
			b.addVoid(t)
			return true
		case a.Noscript, a.Noframes, a.Style, a.Script, a.Title:
			b.addRawText(t)
			return true
		case a.Head:
			return true
		case a.Html, a.Template:
			unsure()
		}
	case tokEnd:
		if t.atom == a.Head {
			b.oe = b.oe[:len(b.oe)-1]
			b.mode = modeAfterHead
			return true
		}
	}
	if b.headAlike(t) {
		return true
	}
	b.oe = b.oe[:len(b.oe)-1] // an implied </head>
	b.mode = modeAfterHead
	return false
}

// headAlike takes the tokens "in head" and "after head" take alike: the
// leading white space of text, end tags but </body>, </html> and </br>
// (ignored), comments and doctypes (ignored); false for the others.
func (b *treeBuilder) headAlike(t *token) bool {
	switch t.typ {
	case tokText:
		return b.leadingText(t)
	case tokEnd:
		switch t.atom {
		case a.Body, a.Html, a.Br:
			return false
		case a.Template:
			unsure()
		}
		return true
	case tokComment:
		b.addComment(t)
		return true
	case tokDoctype:
		return true
	}
	return false
}

func (b *treeBuilder) afterHead(t *token) bool {
	if t.typ == tokStart {
		switch t.atom {
		case a.Body:
			b.addElement(t)
			b.mode = modeInBody
			return true
		case a.Head:
			return true
		case a.Html, a.Frameset, a.Base, a.Basefont, a.Bgsound, a.Link, a.Meta, a.Noframes, a.Script, a.Style, a.Template, a.Title:
			unsure() // back into <head>, framesets
		}
	}
	if b.headAlike(t) {
		return true
	}
	b.implied(a.Body)
	b.mode = modeInBody
	return t.typ == tokEOF
}

func (b *treeBuilder) afterBody(t *token) bool {
	switch t.typ {
	case tokEOF:
		return true
	case tokText:
		if strings.TrimLeft(t.data, whitespace) == "" {
			return b.inBody(t)
		}
	case tokStart:
		if t.atom == a.Html {
			unsure()
		}
	case tokEnd:
		if t.atom == a.Html && b.mode == modeAfterBody {
			b.mode = modeAfterAfterBody
			return true
		}
	case tokComment:
		parent := b.doc
		if b.mode == modeAfterBody {
			parent = b.oe[0]
		}
		appendChild(parent, b.newNode(html.CommentNode, 0, t.data, nil))
		return true
	case tokDoctype:
		if b.mode == modeAfterAfterBody {
			return true
		}
	}
	b.mode = modeInBody
	return false
}

// implied adds an element no tag gave.
func (b *treeBuilder) implied(at a.Atom) {
	b.addElement(&token{typ: tokStart, atom: at, data: at.String()})
}

func (b *treeBuilder) addElement(t *token) {
	n := b.newNode(html.ElementNode, t.atom, t.data, t.attr)
	appendChild(b.top(), n)
	if len(b.oe) >= maxDepth {
		unsure() // html.Parse fails
	}
	b.oe = append(b.oe, n)
	switch {
	case t.atom == a.Script:
		b.found.scripts = append(b.found.scripts, n)
	case t.atom == a.Base && b.found.base == nil && hasAttr(n, "href"):
		b.found.base = n
	}
}

func hasAttr(n *html.Node, key string) bool {
	return slices.ContainsFunc(n.Attr, func(x html.Attribute) bool { return x.Key == key })
}

// addVoid adds an element that has no content.
func (b *treeBuilder) addVoid(t *token) {
	b.addElement(t)
	b.oe = b.oe[:len(b.oe)-1]
}

func (b *treeBuilder) addComment(t *token) {
	appendChild(b.top(), b.newNode(html.CommentNode, 0, t.data, nil))
}

// addText adds text to the current node, joined to a text node before it
// (in a buffer, as html.Parse joins text: a page of many small pieces
// costs no more than one piece).
func (b *treeBuilder) addText(s string) {
	if s == "" {
		return
	}
	n := b.top()
	if last := n.LastChild; last != nil && last.Type == html.TextNode {
		if last != b.joined {
			b.join(last)
		}
		b.joinedText = append(b.joinedText, s...)
		return
	}
	appendChild(n, b.newNode(html.TextNode, 0, s, nil))
}

// join ends the joining of a text node's text, and starts n's (nil: none).
func (b *treeBuilder) join(n *html.Node) {
	if b.joined != nil {
		setString(&b.joined.Data, b.own(string(b.joinedText)))
	}
	b.joined = n
	if n != nil {
		b.joinedText = append(b.joinedText[:0], n.Data...)
	}
}

// addRawText adds a raw text element with its text: html.Parse's text
// insertion mode, which ends at the element's end tag.
func (b *treeBuilder) addRawText(t *token) {
	b.addElement(t)
	text := b.rawText(t.atom, t.data)
	if t.atom == a.Textarea {
		text = skipNewline(text)
	}
	b.addText(text)
	b.oe = b.oe[:len(b.oe)-1]
}

func skipNewline(s string) string {
	s = strings.TrimPrefix(s, "\r")
	return strings.TrimPrefix(s, "\n")
}

func oneOf(at a.Atom, atoms ...a.Atom) bool { return slices.Contains(atoms, at) }

// attrCompare is html.Parse's order of a formatting element's attributes.
func attrCompare(x, y html.Attribute) int {
	return cmp.Or(cmp.Compare(x.Namespace, y.Namespace), cmp.Compare(x.Key, y.Key), cmp.Compare(x.Val, y.Val))
}
