package extract

import (
	"golang.org/x/net/html"
)

// A TokenSink sees a page's tokens as golang.org/x/net/html's tokenizer
// gives them (Doc.Scan): tag names in lower case, a start tag written
// <name/> as self-closing, the text of a raw text element (script, style,
// noscript, title...) as one text token, comments and doctypes left out.
// The attributes are the tag's, for the call only: a sink keeps their
// strings, never the slice.
type TokenSink interface {
	StartTag(name string, attr []html.Attribute, selfClosing bool)
	EndTag(name string)
	Text(s string)
}

// Doc is a page parsed once, when first needed, for all that reads it:
// its extract rules (Rules.ApplyDoc) and a reader of its tokens (Scan), so
// that a crawler's link extraction and rules share one read of the page.
// A Doc is for one goroutine; Release gives its memory back.
type Doc struct {
	p page
}

// NewDoc is the page of pageURL with the text (UTF-8); nothing is parsed
// yet.
func NewDoc(pageURL, text string) *Doc {
	return &Doc{p: page{url: pageURL, text: text}}
}

// Of reports whether d is the page of pageURL with the text (a reader
// whose page was changed since the Doc was made reads it on its own).
func (d *Doc) Of(pageURL, text string) bool { return d.p.url == pageURL && d.p.text == text }

// Scan builds the page's tree, sink seeing its tokens as they are read,
// and reports whether sink saw every token of the page. It is false, and
// what sink saw is to be thrown away, when the tree is already built or
// its fast builder gave up on the page (which html.Parse then parses: the
// tree stands for the rules; the tokens are left to the caller's own
// tokenizer).
func (d *Doc) Scan(sink TokenSink) bool {
	if d.p.parsed {
		return false
	}
	return d.p.build(sink)
}

// Release gives the tree's memory back once the rules are applied and
// the tokens read: nothing may use the Doc after it.
func (d *Doc) Release() { d.p.release() }

// ReadsTree reports whether some rule that applies to pageURL reads the
// page's tree (css, xpath, jsonld): what a Doc shares.
func (rs *Rules) ReadsTree(pageURL string) bool {
	if rs == nil || !rs.tree {
		return false
	}
	for i := range rs.rules {
		if r := &rs.rules[i]; r.kind != kindRegex && (r.onURL == nil || r.onURL.MatchString(pageURL)) {
			return true
		}
	}
	return false
}

// emit gives the sink a token as the tokenizer gives it (before the tree's
// insertion modes trim its text).
func (b *treeBuilder) emit(t *token) {
	switch t.typ {
	case tokText:
		b.sink.Text(t.data)
	case tokStart:
		b.sink.StartTag(t.data, t.attr, t.selfClosing)
	case tokEnd:
		b.sink.EndTag(t.data)
	}
}
