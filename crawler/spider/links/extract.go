// Package links finds the links of a fetched page and decides which ones a
// crawl follows, as the original's link extractor does (a Scrapy
// LxmlLinkExtractor made tolerant of bad HTML, spiders/lxmlhtml.py).
//
// Extract reads <a href> and <area href> (Scrapy's default tags and
// attribute) with the golang.org/x/net/html tokenizer, which accepts any
// input: malformed markup, bad encodings, huge attributes. Each href is
// trimmed, loses its tabs and newlines, is resolved against the document's
// first <base href> (itself resolved against the page URL) or the page URL,
// loses its fragment, and is kept only when it is an http or https URL with
// a host: javascript:, mailto:, tel:, data: and the like are dropped (Scrapy
// also keeps file: and ftp:, which no crawler here can fetch). The first of
// several links to one URL is kept. A link's text is the text inside the
// element, whitespace runs collapsed to one space.
//
// A page with a Doc (spider.Response.ShareParse: a crawl whose extract
// rules read the page's tree) has its links read from the tokens that tree
// is built from (extract.Doc.Scan), the same tokens the tokenizer gives, so
// that the page is read once; pages the tree's fast builder gives up on,
// and pages with long inert runs (below), are tokenized as others are.
//
// Follow applies a Filter built from the crawl request (allowed_domains,
// allow_regex, deny_regex, deny_extensions), which sees the resolved URL,
// and returns the links in canonical form (fingerprint.Canonicalize), because
// the original's extractor canonicalizes the links it returns: the
// results' links and the queued requests carry these URLs.
//
// Differences from the original, on purpose:
//   - <base href> counts wherever it is (browsers' rule); Scrapy looks only
//     in the first 4096 characters.
//   - Link text is collapsed and at most 4 KiB; the original keeps the raw
//     text, newlines and all, of any length.
//   - Text in <script> and <style> is no link text (lxml's string() took
//     it). Links inside <noscript>, <noframes> and <noembed> are found, as
//     lxml finds them, although the tokenizer reads those as raw text.
//   - allowed_domains compares the host name, so a port does not matter
//     ("example.com" allows http://example.com:8080/); an entry with a port
//     ("127.0.0.1:8080") must match host and port. Scrapy compared the whole
//     host:port.
//   - deny_extensions is case-insensitive on both sides, takes entries with
//     or without the dot, and understands two-part extensions ("tar.gz").
//   - hrefs longer than 8 KiB are dropped by Extract, and links longer
//     than MaxURLLength by Follow, as Scrapy's
//     UrlLengthMiddleware drops the requests (the original still listed
//     them in the result).
//   - Responses that are not markup (images, PDF, JSON...) have no links;
//     the original's spider failed on them.
//   - An invalid regular expression is an error: Follow returns it and no
//     link, and the spider publishes the page without following anything
//     (following everything would ignore a deny rule the user asked for).
//     Go regular expressions are RE2: no look-around or back-references.
package links

import (
	"io"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/idna"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider"
)

// maxTextBytes bounds a link's text, so one unclosed <a> cannot copy a
// whole page into every result.
const maxTextBytes = 4096

// rawLink is an href as written, with its text so far: one piece of text
// is kept as it came (most links have one), more are gathered in text.
type rawLink struct {
	href  string
	first string
	text  strings.Builder
	full  bool
}

// addText adds s to the link's text; owned reports that s is the link's
// own copy (a tokenizer's token, converted), which it may keep as it is.
func (l *rawLink) addText(s string, owned bool) {
	if l.full {
		return
	}
	have := len(l.first) + l.text.Len()
	if have+len(s) > maxTextBytes {
		n := maxTextBytes - have
		for n > 0 && !utf8.RuneStart(s[n]) {
			n-- // cut at a character boundary
		}
		s, l.full = s[:n], true
	}
	switch {
	case have == 0 && owned:
		l.first = s
	case have == 0:
		l.first = strings.Clone(s) // a tree's text may live in a buffer it reuses
	default:
		if l.first != "" {
			l.text.WriteString(l.first)
			l.first = ""
		}
		l.text.WriteString(s)
	}
}

// String is the link's text.
func (l *rawLink) String() string {
	if l.first != "" {
		return l.first
	}
	return l.text.String()
}

// scanner collects the hrefs and the base of a document, from its tokens
// as golang.org/x/net/html's tokenizer gives them: read by scan, or seen
// while the page's tree is built (extract.Doc.Scan; scanner is its
// extract.TokenSink).
type scanner struct {
	*hrefs
	open     *rawLink // the <a> whose text is being collected
	skipText bool     // the next token is a script's or style's text
	ownsText bool     // text tokens are copies of their own (the tokenizer's, converted)
	top      bool     // not inside an inert element's text
	inert    bool     // the next token is an inert element's text
}

// Text, StartTag and EndTag make a scanner an extract.TokenSink.
func (s *scanner) Text(t string)      { onText(s, t) }
func (s *scanner) EndTag(name string) { onEndTag(s, name) }
func (s *scanner) StartTag(name string, attr []html.Attribute, selfClosing bool) {
	s.startTag(kindOf(name), selfClosing, func(key string) (string, bool) {
		for _, a := range attr {
			if a.Key == key {
				return a.Val, true
			}
		}
		return "", false
	})
}

// hrefs are what a document's scanners found.
type hrefs struct {
	links   []*rawLink
	base    string
	hasBase bool
	// most is the most hrefs kept (0: every one); over counts the hrefs
	// found after them, which are not kept.
	most, over int
}

// Extract returns the links of an HTML document fetched from pageURL, in
// document order, resolved, without fragments or duplicates (see the
// package doc). It never fails; a document without links gives none.
func Extract(pageURL, doc string) []spider.Link { return linksOf(extract(pageURL, doc)) }

func linksOf(links []found) []spider.Link {
	out := make([]spider.Link, len(links))
	for i, l := range links {
		out[i] = l.Link
	}
	return out
}

// found is an extracted link with its parsed URL.
type found struct {
	spider.Link
	u *url.URL
}

func extract(pageURL, doc string) []found {
	got, _ := extractSome(pageURL, doc, 0)
	return got
}

// ExtractUpTo is Extract of the document's first most hrefs (0: every
// one), with how many hrefs it found after them, unread.
func ExtractUpTo(pageURL, doc string, most int) (read []spider.Link, unread int) {
	got, over := extractSome(pageURL, doc, most)
	return linksOf(got), over
}

// extractSome is extract of the document's first most hrefs (0: all),
// with how many hrefs it found after them.
func extractSome(pageURL, doc string, most int) ([]found, int) {
	s := scanner{hrefs: &hrefs{most: most}, top: true}
	s.scan(doc)
	return resolveAll(baseOf(pageURL), s.hrefs), s.over
}

// extractPage is extract of the page's body; from the tokens its Doc's
// tree is built from, when it has a Doc whose tree is not built yet and
// which the tree's fast builder reads to its end (the same tokens as the
// tokenizer's, TestLinksFromTheTreeAreTheTokenizers, FuzzLinksFromTheTree).
// A page with long inert runs (which scan reads without their middles) is
// left to scan. Only the page's first most hrefs are read (0: all); the
// number found after them is returned beside.
func extractPage(page *spider.Page, most int) ([]found, int) {
	if got, over, ok := fromDoc(page, most); ok {
		return got, over
	}
	return extractSome(page.ResponseURL, page.Body, most)
}

// fromDoc is extractPage from the tokens of the page's Doc; false when
// they are not to be read.
func fromDoc(page *spider.Page, most int) ([]found, int, bool) {
	if page.Doc == nil || !page.Doc.Of(page.ResponseURL, page.Body) || inertMiddles(page.Body) != nil {
		return nil, 0, false
	}
	s := scanner{hrefs: &hrefs{most: most}, top: true}
	if !page.Doc.Scan(&s) {
		return nil, 0, false
	}
	return resolveAll(baseOf(page.ResponseURL), s.hrefs), s.over, true
}

// baseOf is the URL links resolve against, but for a <base href>: the
// page's, when it is absolute; nil (only absolute links) otherwise.
func baseOf(pageURL string) *url.URL {
	base, err := url.Parse(pageURL)
	if err != nil || !isHTTP(base) {
		return nil
	}
	return base
}

// resolveAll resolves what a document's scan found, against its base or
// base.
func resolveAll(base *url.URL, s *hrefs) []found {
	if s.hasBase {
		if b, ok := resolve(base, s.base); ok {
			base = b
		}
	}
	out := make([]found, 0, len(s.links))
	seen := make(map[string]bool, len(s.links))
	prefix := plainPrefix(base)
	for _, l := range s.links {
		if len(l.href) > maxHrefBytes {
			continue
		}
		u, abs, ok := resolvePlain(base, prefix, l.href)
		if !ok {
			if u, ok = resolve(base, l.href); !ok {
				continue
			}
			abs = u.String()
		}
		if seen[abs] {
			continue
		}
		seen[abs] = true
		out = append(out, found{spider.Link{URL: abs, Text: collapse(l.String())}, u})
	}
	return out
}

// tagKind is what a tag is to links.
type tagKind int

const (
	tagOther  tagKind = iota
	tagA              // <a>
	tagArea           // <area>
	tagBase           // <base>
	tagScript         // <script>, <style>: their text is no link text
	tagInert          // <noscript>, <noframes>, <noembed>: their text is markup
)

// kindOf is the kind of a tag named name (as written: any case).
func kindOf[S ~string | ~[]byte](name S) tagKind {
	switch {
	case equalFold(name, "a"):
		return tagA
	case equalFold(name, "area"):
		return tagArea
	case equalFold(name, "base"):
		return tagBase
	case equalFold(name, "script"), equalFold(name, "style"):
		return tagScript
	case equalFold(name, "noscript"), equalFold(name, "noframes"), equalFold(name, "noembed"):
		return tagInert
	}
	return tagOther
}

// scan tokenizes doc. The raw text of <noscript>, <noframes> and <noembed>
// is markup to a parser without scripting (lxml); it is scanned once more
// (top level only: such elements do not nest as raw text).
func (s *scanner) scan(doc string) {
	s.ownsText = true
	z := html.NewTokenizer(withoutInertMiddles(doc))
	for {
		switch tt := z.Next(); tt {
		case html.ErrorToken:
			return
		case html.TextToken:
			onText(s, z.Text())
		case html.StartTagToken, html.SelfClosingTagToken:
			// Most tags are of no interest: look at the name as written
			// before asking the tokenizer, which copies it.
			s.startTag(kindOf(rawTagName(z.Raw())), tt == html.SelfClosingTagToken, func(name string) (string, bool) { return attr(z, name) })
		case html.EndTagToken:
			onEndTag(s, rawTagName(z.Raw()))
		default:
			s.skipText, s.inert = false, false
		}
	}
}

// onText is a text token.
func onText[S ~string | ~[]byte](s *scanner, t S) {
	skip, inert := s.skipText, s.inert
	s.skipText, s.inert = false, false
	switch {
	case inert:
		nested := scanner{hrefs: s.hrefs}
		nested.scan(string(t))
	case s.open != nil && !skip:
		s.open.addText(string(t), s.ownsText)
	}
}

// startTag is a start tag of kind k; attr gives its attributes' values.
func (s *scanner) startTag(k tagKind, selfClosing bool, attr func(name string) (string, bool)) {
	s.skipText, s.inert = false, false
	switch k {
	case tagA, tagArea:
		s.open = nil // an <a> ends at the next one, as HTML parsers do
		if href, ok := attr("href"); ok {
			if s.most > 0 && len(s.links) >= s.most {
				s.over++
				break
			}
			l := &rawLink{href: href}
			s.links = append(s.links, l)
			if k == tagA { // <a/> opens an <a> too, in HTML
				s.open = l
			}
		}
	case tagBase:
		if href, ok := attr("href"); ok && !s.hasBase {
			s.base, s.hasBase = href, true
		}
	case tagScript:
		s.skipText = !selfClosing
	case tagInert:
		s.inert = !selfClosing && s.top
	}
}

// onEndTag is an end tag named name (as written).
func onEndTag[S ~string | ~[]byte](s *scanner, name S) {
	inert := s.inert
	s.skipText, s.inert = false, false
	if !inert && equalFold(name, "a") { // an inert element's empty text: its end tag is skipped
		s.open = nil
	}
}

// Inert runs. The tokenizer holds a whole token in memory, in a buffer it
// grows by doubling: a page that is one 10 MB token (a compression bomb of
// zero bytes, an endless attribute) would cost it 16 MB, and 32 MB
// allocated. A run of bytes without '<', '>', quotes, '=' or '-' cannot
// start or end a tag, comment, attribute value or element, so only its
// start (the text of a link, at most maxTextBytes of it) and its end (next
// to the markup that follows) can matter for links: the middle of a long
// one is skipped. An href that long may have lost its middle: hrefs longer
// than maxHrefBytes are dropped (no link that long is followed:
// MaxURLLength).
const (
	inertRunMax  = 64 << 10 // longer runs lose their middle
	inertRunKeep = 8 << 10  // how much of their start and end is kept
	maxHrefBytes = inertRunKeep
)

// structural are the bytes that end an inert run.
var structural = [256]bool{'<': true, '>': true, '"': true, '\'': true, '=': true, '-': true}

// withoutInertMiddles reads doc without the middles of its long inert runs.
func withoutInertMiddles(doc string) io.Reader {
	cuts := inertMiddles(doc)
	if cuts == nil {
		return strings.NewReader(doc)
	}
	parts := make([]io.Reader, 0, len(cuts)+1)
	at := 0
	for _, c := range cuts {
		parts = append(parts, strings.NewReader(doc[at:c[0]]))
		at = c[1]
	}
	return io.MultiReader(append(parts, strings.NewReader(doc[at:]))...)
}

// inertMiddles are the spans [from, to) of doc's long inert runs that
// withoutInertMiddles leaves out, in order; nil when it reads all of doc.
func inertMiddles(doc string) [][2]int {
	var cuts [][2]int
	start := 0
	for i := 0; i <= len(doc); i++ {
		if i < len(doc) && !structural[doc[i]] {
			continue
		}
		if i-start > inertRunMax {
			cuts = append(cuts, [2]int{start + inertRunKeep, i - inertRunKeep})
		}
		start = i + 1
	}
	return cuts
}

// rawTagName is the name of a tag token as written: after "<" or "</", up
// to white space, "/" or ">", as the tokenizer reads it.
func rawTagName(raw []byte) []byte {
	i := 1
	if i < len(raw) && raw[i] == '/' {
		i++
	}
	j := i
	for j < len(raw) {
		switch raw[j] {
		case ' ', '\t', '\n', '\f', '\r', '/', '>':
			return raw[i:j]
		}
		j++
	}
	return raw[i:j]
}

// equalFold compares an ASCII tag name case-insensitively.
func equalFold[S ~string | ~[]byte](name S, lower string) bool {
	if len(name) != len(lower) {
		return false
	}
	for i := range len(name) {
		c := name[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// attr returns the first value of the named attribute (HTML parsers ignore
// repeated attributes).
func attr(z *html.Tokenizer, name string) (string, bool) {
	for more := true; more; {
		var k, v []byte
		k, v, more = z.TagAttr()
		if string(k) == name {
			return string(v), true
		}
	}
	return "", false
}

// resolve makes an href absolute against base (nil: absolute hrefs only).
// It reports false for what is not an http(s) URL with a host.
func resolve(base *url.URL, href string) (*url.URL, bool) {
	href = cleanHref(href)
	ref, err := url.Parse(href)
	if err != nil {
		return nil, false
	}
	u := ref
	if base != nil {
		u = base.ResolveReference(ref)
	}
	if !isHTTP(u) || u.Opaque != "" {
		return nil, false
	}
	if host := u.Hostname(); !isASCII(host) {
		ascii, err := idna.Lookup.ToASCII(host)
		if err != nil {
			return nil, false
		}
		if port := u.Port(); port != "" {
			ascii += ":" + port
		}
		u.Host = ascii
	}
	u.Fragment, u.RawFragment = "", ""
	u.ForceQuery = false
	u.RawQuery = escapeQuery(u.RawQuery)
	return u, true
}

// plainPrefix is base's scheme, userinfo and host as base.String() writes
// them, for resolvePlain; "" when base is nil or its host is not ASCII.
func plainPrefix(base *url.URL) string {
	if base == nil || !isASCII(base.Host) {
		return ""
	}
	return (&url.URL{Scheme: base.Scheme, User: base.User, Host: base.Host}).String()
}

// resolvePlain is resolve and String for the hrefs most pages are made of,
// an absolute path of letters, digits, "/", "-", ".", "_" and "~" without
// dot segments ("/a/b.html"), against base (its prefix from plainPrefix):
// base's scheme, userinfo and host with that path, as resolve gives it,
// without parsing and resolving (four allocations per link). ok is false
// for any other href (or no prefix): resolve it.
func resolvePlain(base *url.URL, prefix, href string) (u *url.URL, abs string, ok bool) {
	if prefix == "" || len(href) == 0 || href[0] != '/' || len(href) > 1 && href[1] == '/' {
		return nil, "", false
	}
	segment := 0 // where the current path segment starts
	for i := 0; i <= len(href); i++ {
		if i == len(href) || href[i] == '/' {
			if seg := href[segment:i]; seg == "." || seg == ".." {
				return nil, "", false
			}
			segment = i + 1
			continue
		}
		if c := href[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~') {
			return nil, "", false
		}
	}
	return &url.URL{Scheme: base.Scheme, User: base.User, Host: base.Host, Path: href}, prefix + href, true
}

func isHTTP(u *url.URL) bool { return (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" }

// cleanHref trims an href (as Python's str.strip, which the original uses),
// drops tabs and newlines (the URL standard), and makes what Go's URL
// parser refuses parseable: other control characters and a "%" that starts
// no escape are percent-encoded. Canonicalization later turns "%25zz" back
// into "%zz", as the original writes it.
func cleanHref(s string) string {
	s = strings.TrimFunc(s, unicode.IsSpace)
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || c == '%' && !escapeAt(s, i) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\t' || c == '\n' || c == '\r':
		case c < 0x20 || c == 0x7f || c == '%' && !escapeAt(s, i):
			b.WriteByte('%')
			b.WriteByte(upperHex[c>>4])
			b.WriteByte(upperHex[c&15])
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

const upperHex = "0123456789ABCDEF"

func escapeAt(s string, i int) bool { return i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) }

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// escapeQuery percent-encodes what may not stand in a query (spaces,
// quotes, angle brackets, non-ASCII...), which Go's parser keeps raw.
func escapeQuery(q string) string {
	ok := true
	for i := 0; i < len(q); i++ {
		if !queryByte(q[i]) {
			ok = false
			break
		}
	}
	if ok {
		return q
	}
	var b strings.Builder
	for i := 0; i < len(q); i++ {
		if c := q[i]; queryByte(c) {
			b.WriteByte(c)
		} else {
			b.WriteByte('%')
			b.WriteByte(upperHex[c>>4])
			b.WriteByte(upperHex[c&15])
		}
	}
	return b.String()
}

// queryByte reports an RFC 3986 unreserved or reserved character, or "%".
func queryByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		strings.IndexByte("-._~:/?#[]@!$&'()*+,;=%", c) >= 0
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// collapse trims s and turns each run of white space into one space.
func collapse(s string) string {
	if isCollapsed(s) {
		return s
	}
	return strings.ToValidUTF8(strings.Join(strings.Fields(s), " "), "\uFFFD")
}

// isCollapsed reports an ASCII s that collapse leaves as it is: no white
// space at either end, none but single spaces within.
func isCollapsed(s string) bool {
	space := true // at the start: a space there is one too many
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= utf8.RuneSelf || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r':
			return false
		case c == ' ':
			if space {
				return false
			}
			space = true
		default:
			space = false
		}
	}
	return !space || s == ""
}
