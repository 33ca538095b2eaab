package testsite

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// leafPaths are the HTML pages "/" links to besides the tree and the files.
var leafPaths = []string{"/allow/1", "/allow/2", "/deny/1", "/deny/2", "/private/1"}

// files are the non-HTML files "/" links to: extensions Scrapy's link
// extractor ignores by default (matched case-insensitively).
var files = []fixedFile{
	{"/files/report.pdf", "application/pdf", "%PDF-1.4\n%test site\n"},
	{"/files/photo.jpg", "image/jpeg", "\xff\xd8\xff\xe0test site\xff\xd9"},
	{"/files/archive.zip", "application/zip", "PK\x05\x06" + strings.Repeat("\x00", 18)},
	{"/static/style.css", "text/css; charset=utf-8", "body { color: black; }\n"},
	{"/files/IMAGE.PNG", "image/png", "\x89PNG\r\n\x1a\ntest site"},
}

// fixedFile is a response served as it is written.
type fixedFile struct{ path, contentType, body string }

// FilePaths are the paths of the non-HTML files "/" links to.
func FilePaths() []string {
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = f.path
	}
	return out
}

// specialLinks are the hrefs on the special pages that hold links (their
// bodies are written by hand and must hold exactly these).
var specialLinks = map[string][]string{
	"/malformed":    {"/page/1", "/page/2", "/allow/1"},
	"/latin1":       {"/page/1"},
	"/meta-charset": {"/page/1"},
	"/shift-jis":    {"/page/1"},
	"/binary":       {"/page/1"},
	"/gzip":         {"/page/1"},
	"/deflate":      {"/page/1"},
	"/set-cookie":   {"/echo-headers"},
}

// specialPages are the pages /special links to.
var specialPages = []string{
	"/status/404", "/status/500", "/status/504", "/slow/100", "/hang", "/hang-body", "/truncated-body", "/reset",
	"/redirect?to=/page/1", "/redirect-chain/3", "/loop/a", "/private/1", "/malformed", "/latin1",
	"/meta-charset", "/shift-jis", "/binary", "/huge/1048576", "/gzip", "/deflate", "/bad-gzip", "/set-cookie",
	"/echo-headers",
}

// treeIndices parses /page/i/j/... into its indices; ok is false for paths
// that are not tree pages of this site.
func (s *Site) treeIndices(path string) (idx []int, ok bool) {
	rest, found := strings.CutPrefix(path, "/page/")
	if !found {
		return nil, false
	}
	for _, part := range strings.Split(rest, "/") {
		n, err := strconv.Atoi(part)
		if err != nil || strconv.Itoa(n) != part {
			return nil, false
		}
		limit := s.opts.fanout
		if len(idx) == 0 {
			limit = s.opts.pages
		}
		if n < 1 || n > limit {
			return nil, false
		}
		idx = append(idx, n)
	}
	return idx, len(idx) <= s.opts.depth
}

func treePath(idx []int) string {
	var b strings.Builder
	b.WriteString("/page")
	for _, n := range idx {
		b.WriteByte('/')
		b.WriteString(strconv.Itoa(n))
	}
	return b.String()
}

// hrefs returns the links of the HTML page at path as written in it
// (relative, root-relative or absolute), in page order, duplicates included;
// ok is false when path is not an HTML page with links.
func (s *Site) hrefs(path string) (out []string, ok bool) {
	switch {
	case path == "/":
		for i := 1; i <= s.opts.pages; i++ {
			out = append(out, treePath([]int{i}))
		}
		out = append(out, "/page/1", "/#top")
		out = append(out, leafPaths...)
		out = append(out, FilePaths()...)
		return append(out, s.peerLinks()...), true
	case path == "/special":
		return slices.Clone(specialPages), true
	case slices.Contains(leafPaths[:4], path) || strings.HasPrefix(path, "/private/"):
		return []string{"/"}, true
	}
	if idx, ok := s.treeIndices(path); ok {
		parent := s.URL(treePath(idx[:len(idx)-1]))
		if len(idx) == 1 {
			parent = s.URL("/")
		}
		out = append(out, parent)
		if len(idx) < s.opts.depth {
			for c := 1; c <= s.opts.fanout; c++ {
				out = append(out, treePath(append(slices.Clone(idx), c)))
			}
			out = append(out, treePath(append(slices.Clone(idx), 1)))
		}
		return append(out, "#top"), true
	}
	if links, ok := specialLinks[path]; ok {
		return links, true
	}
	// Status pages with a body, slow pages and the end of the redirect chain link home.
	if code, ok := statusCode(path); ok && code != http.StatusNoContent && code != http.StatusNotModified {
		return []string{"/"}, true
	}
	if _, ok := slowDelay(path); ok || path == "/redirect-chain/0" {
		return []string{"/"}, true
	}
	return nil, false
}

// statusCode parses /status/<code>, for codes 200-599.
func statusCode(path string) (int, bool) {
	rest, ok := strings.CutPrefix(path, "/status/")
	code, err := strconv.Atoi(rest)
	return code, ok && err == nil && code >= 200 && code <= 599
}

// slowDelay parses /slow/<ms>, up to maxSlow.
func slowDelay(path string) (time.Duration, bool) {
	rest, ok := strings.CutPrefix(path, "/slow/")
	ms, err := strconv.Atoi(rest)
	d := time.Duration(ms) * time.Millisecond
	return d, ok && err == nil && ms >= 0 && d <= maxSlow
}

// Links returns the absolute URLs the page at path links to, in page order
// (except /malformed, where parsers may differ), duplicates and fragments included (a link extractor that drops them finds
// fewer). It is nil for pages without links, redirects and unknown paths.
func (s *Site) Links(path string) []string {
	hrefs, ok := s.hrefs(path)
	if !ok {
		return nil
	}
	base, err := url.Parse(s.URL(path))
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(hrefs))
	for _, h := range hrefs {
		if u, err := base.Parse(h); err == nil {
			out = append(out, u.String())
		}
	}
	return out
}

// redirectTarget returns where a redirecting path sends the client (as
// written in Location, possibly relative).
func (s *Site) redirectTarget(path string, query url.Values) (string, bool) {
	switch {
	case path == "/redirect":
		to := query.Get("to")
		return to, to != ""
	case path == "/loop/a":
		return "b", true
	case path == "/loop/b":
		return "/loop/a", true
	case path == "/set-cookie":
		next := query.Get("next")
		return next, next != ""
	}
	if rest, ok := strings.CutPrefix(path, "/redirect-chain/"); ok {
		if n, err := strconv.Atoi(rest); err == nil && n > 0 && strconv.Itoa(n) == rest {
			return strconv.Itoa(n - 1), true
		}
	}
	return "", false
}

// maxRedirects is how many redirects Reachable follows, as the crawler's
// REDIRECT_MAX_TIMES default.
const maxRedirects = 20

// Reachable returns the URLs a crawl seeded at seed with maxdepth maxDepth
// requests, sorted: the seed (depth 0) and, breadth first, every link of a
// page at depth < maxDepth that follow accepts (the crawl's allowed_domains,
// allow/deny regexes and deny_extensions; nil follows everything), each URL
// once with its fragment removed (the duplicate filter). A redirecting URL
// counts as requested and its links are those of the page it ends at (the
// fetcher follows redirects). sites are the sites whose pages are known;
// links to other hosts are requested but have no links.
//
// Robots rules are not applied: with ROBOTSTXT_OBEY, exclude /private/ in follow.
func Reachable(seed string, maxDepth int, follow func(link string) bool, sites ...*Site) []string {
	type item struct {
		url   string
		depth int
	}
	seen := map[string]bool{stripFragment(seed): true}
	queue := []item{{stripFragment(seed), 0}}
	for i := 0; i < len(queue); i++ {
		it := queue[i]
		if it.depth >= maxDepth {
			continue
		}
		for _, link := range linksAt(it.url, sites) {
			key := stripFragment(link)
			if seen[key] || (follow != nil && !follow(link)) {
				continue
			}
			seen[key] = true
			queue = append(queue, item{key, it.depth + 1})
		}
	}
	out := make([]string, 0, len(queue))
	for _, it := range queue {
		out = append(out, it.url)
	}
	slices.Sort(out)
	return out
}

// linksAt returns the links of the page a request for raw ends at.
func linksAt(raw string, sites []*Site) []string {
	u, err := url.Parse(raw)
	if err != nil {
		return nil
	}
	for hop := 0; ; hop++ {
		site := siteFor(u, sites)
		if site == nil {
			return nil
		}
		path := u.Path
		if path == "" {
			path = "/"
		}
		loc, ok := site.redirectTarget(path, u.Query())
		if !ok {
			return site.Links(path)
		}
		if hop == maxRedirects {
			return nil
		}
		if u, err = u.Parse(loc); err != nil {
			return nil
		}
	}
}

func siteFor(u *url.URL, sites []*Site) *Site {
	for _, s := range sites {
		if strings.EqualFold(u.Host, s.Addr()) {
			return s
		}
	}
	return nil
}

func stripFragment(raw string) string {
	if i := strings.IndexByte(raw, '#'); i >= 0 {
		return raw[:i]
	}
	return raw
}
