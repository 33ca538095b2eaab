package extract

import (
	"net/url"
	"strings"
	"sync"
	"unsafe"

	"github.com/antchfx/xpath"

	"golang.org/x/net/html"
)

// innerText is an element's text: the text of the text nodes under it, in
// order (htmlquery.InnerText); a node with one text child gives that
// child's text, not a copy.
func innerText(n *html.Node) string {
	switch {
	case n.Type == html.TextNode:
		return n.Data
	case n.Type == html.CommentNode:
		return ""
	case n.FirstChild == nil:
		return ""
	case n.FirstChild == n.LastChild && n.FirstChild.Type == html.TextNode:
		return n.FirstChild.Data
	}
	var b strings.Builder
	var add func(n *html.Node)
	add = func(n *html.Node) {
		switch n.Type {
		case html.TextNode:
			b.WriteString(n.Data)
		case html.CommentNode:
		default:
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				add(c)
			}
		}
	}
	add(n)
	return b.String()
}

// resolvePrefix is base's "scheme://host" when fastResolve may put it
// before a path: an http(s) URL whose host is written as url.URL.String
// writes it; "" otherwise.
func resolvePrefix(base *url.URL) string {
	if base == nil || base.Scheme != "http" && base.Scheme != "https" || base.User != nil || base.Opaque != "" || base.Host == "" {
		return ""
	}
	for i := 0; i < len(base.Host); i++ {
		if c := base.Host[i]; !(isLetter(c) || '0' <= c && c <= '9' || c == '.' || c == '-' || c == ':') {
			return ""
		}
	}
	return base.Scheme + "://" + base.Host
}

// plainPath are the bytes fastResolve lets through: unreserved ones, '/',
// and a query's '?', '=' and '&'.
var plainPath = bytesOf("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~/?=&")

// plainFragment are the bytes a fragment fastResolve resolves may hold.
var plainFragment = bytesOf("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~/")

// fastResolve is url.URL.Parse's resolution of v against a base whose
// prefix is given (resolvePrefix), for the hrefs most pages hold: a path
// from the root of plain characters ("/product/12?p=2"), without dot
// segments or a fragment, or an absolute http(s) URL of such a path and a
// plain host ("http://shop.example:8080/a"), which resolves to itself. ok
// is false for any other v.
// The resolved URL is made by j (nil: a string of its own).
func fastResolve(j *joiner, prefix, v string) (string, bool) {
	if prefix == "" || len(v) < 1 {
		return "", false
	}
	if v[0] != '/' {
		return v, isPlainAbsolute(v)
	}
	if len(v) > 1 && v[1] == '/' || !isPlainPath(v) {
		return "", false
	}
	return j.join(prefix, v), true
}

// A joiner makes the strings a page's values are made of (resolved URLs)
// many to one allocation: the bytes of each are written once after those
// of the last in a buffer, and a string of them is a view of its bytes
// without a copy. A nil *joiner gives each string its own allocation.
// The values of the 200 KB page's 20 rules (BenchmarkExtract) joined 2,130
// strings a page, one allocation each.
//
// A joiner whose strings outlive the page (Apply's values) never writes
// over a byte it gave: a full buffer is left to those strings and the
// next one is twice as large, up to maxJoinerChunk. One whose strings
// are copied out before the next page (ApplyJSON's scratch: reuse) keeps
// its largest buffer and writes the next page's strings over the last's:
// after the first pages it allocates nothing.
type joiner struct {
	buf   []byte
	reuse bool // its buffer is set to the last page's, to be written over
}

// joinerChunk is the first buffer's size; each next one is twice the last,
// up to maxJoinerChunk (a page with one URL to resolve holds little).
const joinerChunk, maxJoinerChunk = 256, 16 << 10

// join is x+y.
func (j *joiner) join(x, y string) string {
	if j == nil {
		return x + y
	}
	n := len(x) + len(y)
	if n == 0 {
		return ""
	}
	if cap(j.buf)-len(j.buf) < n {
		size := max(2*cap(j.buf), joinerChunk)
		if !j.reuse {
			size = min(size, maxJoinerChunk)
		}
		j.buf = make([]byte, 0, max(size, n)) // the strings made keep the last buffer
	}
	start := len(j.buf)
	j.buf = append(append(j.buf, x...), y...)
	return unsafe.String(&j.buf[start], n)
}

// isPlainPath is whether v is of plainPath bytes, without dot segments.
func isPlainPath(v string) bool {
	for i := 0; i < len(v); i++ {
		if !plainPath[v[i]] {
			return false
		}
	}
	return !strings.Contains(v, "/.")
}

// isPlainAbsolute is whether v is "http://" or "https://", a host of
// letters, digits, dots and dashes with an optional port, and nothing or a
// plain path (isPlainPath) without "//".
func isPlainAbsolute(v string) bool {
	rest, ok := strings.CutPrefix(v, "http://")
	if !ok {
		if rest, ok = strings.CutPrefix(v, "https://"); !ok {
			return false
		}
	}
	host, path := rest, ""
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		host, path = rest[:i], rest[i:]
	}
	name, port, hasPort := strings.Cut(host, ":")
	if name == "" || hasPort && port == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !(isLetter(c) || '0' <= c && c <= '9' || c == '.' || c == '-') {
			return false
		}
	}
	for i := 0; i < len(port); i++ {
		if port[i] < '0' || port[i] > '9' {
			return false
		}
	}
	return isPlainPath(path) && !strings.Contains(path, "//")
}

// fastFragment is url.URL.Parse's resolution of a fragment of plain
// characters ("#top") against a base written fragBase without its
// fragment; ok is false for any other v.
// The resolved URL is made by j (nil: a string of its own).
func fastFragment(j *joiner, fragBase, v string) (string, bool) {
	if fragBase == "" || len(v) < 2 || v[0] != '#' {
		return "", false
	}
	for i := 1; i < len(v); i++ {
		if !plainFragment[v[i]] {
			return "", false
		}
	}
	return j.join(fragBase, v), true
}

// xpathExprs hands out copies of an xpath rule's compiled expression, one
// to each page being extracted at once: an xpath.Expr keeps the state of
// an evaluation in itself (Evaluate is not safe for concurrent use), and a
// crawl's rules serve all the crawler's pages at once.
type xpathExprs struct {
	pool sync.Pool
}

func newXPathExprs(src string, first *xpath.Expr) *xpathExprs {
	x := &xpathExprs{}
	x.pool.New = func() any {
		e, err := xpath.Compile(src)
		if err != nil { // it compiled once
			panic(err)
		}
		return e
	}
	x.pool.Put(first)
	return x
}

func (x *xpathExprs) get() *xpath.Expr  { return x.pool.Get().(*xpath.Expr) }
func (x *xpathExprs) put(e *xpath.Expr) { x.pool.Put(e) }
