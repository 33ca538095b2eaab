package extract

import (
	"net/url"
	"strings"
	"sync"

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

// fastResolve is url.URL.Parse's resolution of v against a base whose
// prefix is given (resolvePrefix), for the hrefs most pages hold: a path
// from the root of plain characters ("/product/12?p=2"), without dot
// segments or a fragment. ok is false for any other v.
func fastResolve(prefix, v string) (string, bool) {
	if prefix == "" || len(v) < 1 || v[0] != '/' || len(v) > 1 && v[1] == '/' || strings.Contains(v, "/.") {
		return "", false
	}
	for i := 0; i < len(v); i++ {
		if !plainPath[v[i]] {
			return "", false
		}
	}
	return prefix + v, true
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
