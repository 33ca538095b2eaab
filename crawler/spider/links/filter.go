package links

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/fingerprint"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/memo"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// IgnoredExtensions are the extensions of links not followed unless a
// request's deny_extensions says otherwise: Scrapy's IGNORED_EXTENSIONS
// (its current list, which adds archives, ico, cdr, webm, dmg, iso and apk
// to the one of Scrapy 1.5 that the original shipped with). Filters use
// the list as it is at start-up; a crawl sets its own with deny_extensions.
var IgnoredExtensions = []string{
	// archives
	"7z", "7zip", "bz2", "rar", "tar", "tar.gz", "xz", "zip",
	// images
	"mng", "pct", "bmp", "gif", "jpg", "jpeg", "png", "pst", "psp", "tif", "tiff", "ai", "drw", "dxf", "eps", "ps",
	"svg", "cdr", "ico",
	// audio
	"mp3", "wma", "ogg", "wav", "ra", "aac", "mid", "au", "aiff",
	// video
	"3gp", "asf", "asx", "avi", "mov", "mp4", "mpg", "qt", "rm", "swf", "wmv", "m4a", "m4v", "flv", "webm",
	// office suites
	"xls", "xlsx", "ppt", "pptx", "pps", "doc", "docx", "odt", "ods", "odg", "odp",
	// other
	"css", "pdf", "exe", "bin", "rss", "dmg", "iso", "apk",
}

// defaultExtensions is IgnoredExtensions as a set.
var defaultExtensions = extensionSet(IgnoredExtensions)

// extensionSet lower-cases extensions and gives them their leading dot.
func extensionSet(exts []string) map[string]bool {
	set := make(map[string]bool, len(exts))
	for _, e := range exts {
		if e = strings.TrimPrefix(strings.ToLower(strings.TrimSpace(e)), "."); e != "" {
			set["."+e] = true
		}
	}
	return set
}

// MaxURLLength is the longest link followed, Scrapy's URLLENGTH_LIMIT.
const MaxURLLength = 2083

// Filter decides which links a crawl follows, from its request's
// allowed_domains, allow_regex, deny_regex and deny_extensions.
type Filter struct {
	domains     []domain
	allow, deny []*regexp.Regexp
	extensions  map[string]bool // lower-case, with the leading dot
}

// domain is an allowed_domains entry, lower-case.
type domain struct {
	name     string
	withPort bool // "host:port": the link's host and port must match
}

// NewFilter builds the filter of a crawl request. Every invalid regular
// expression is reported, in one error naming the field; the filter is nil
// then.
func NewFilter(r *crawlrequest.Request) (*Filter, error) {
	f := &Filter{}
	for _, d := range r.AllowedDomains {
		if d = strings.Trim(strings.ToLower(strings.TrimSpace(d)), "."); d != "" {
			_, _, err := net.SplitHostPort(d)
			f.domains = append(f.domains, domain{d, err == nil})
		}
	}
	var errs []error
	compile := func(field string, exprs []string) []*regexp.Regexp {
		out := make([]*regexp.Regexp, 0, len(exprs))
		for _, e := range exprs {
			re, err := regexp.Compile(e)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s %q: %w", field, e, err))
				continue
			}
			out = append(out, re)
		}
		return out
	}
	f.allow = compile("allow_regex", r.AllowRegex)
	f.deny = compile("deny_regex", r.DenyRegex)
	if r.DenyExtensions == nil {
		f.extensions = defaultExtensions
	} else {
		f.extensions = extensionSet(r.DenyExtensions)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("invalid link filter: %w", errors.Join(errs...))
	}
	return f, nil
}

// filters keeps the Filters of crawl requests by their filter fields
// (filterKey), so that a crawl's regular expressions are compiled once per
// process, not once per page (compiling them was about 3% of the crawler's
// CPU per page in BenchmarkCrawlCost). A Filter is never changed once
// built, and a regexp.Regexp is safe for concurrent use, so pages share
// them.
var filters memo.Cache[*Filter]

// cachedFilter returns NewFilter(r), building it only the first time r's
// filter fields are seen.
func cachedFilter(r *crawlrequest.Request) (*Filter, error) {
	var buf [256]byte
	return filters.GetBytes(filterKey(buf[:0], r), func() (*Filter, error) { return NewFilter(r) })
}

// filterKey appends to b what NewFilter reads of r: each of the four lists
// as its length and its strings, each string as its length and its bytes
// (so no two different requests share a key), with DenyExtensions' nil (the
// default list) told from empty (none).
func filterKey(b []byte, r *crawlrequest.Request) []byte {
	for _, list := range [...][]string{r.AllowedDomains, r.AllowRegex, r.DenyRegex} {
		b = binary.AppendUvarint(b, uint64(len(list)))
		for _, s := range list {
			b = binary.AppendUvarint(b, uint64(len(s)))
			b = append(b, s...)
		}
	}
	if r.DenyExtensions == nil {
		return append(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(r.DenyExtensions))+1)
	for _, s := range r.DenyExtensions {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b
}

// Allowed reports whether a link is followed: its host is one of the
// allowed domains or a subdomain of one (when the request lists any), at
// least one allow_regex matches it (when there are any), no deny_regex
// matches it (deny wins), and its path does not end in a denied extension.
// The regular expressions search the whole absolute URL, as Python's
// re.search does.
func (f *Filter) Allowed(link string) bool { return f.Refusal(link) == "" }

// Refusal is why a link is not followed, as the crawl ledger counts it:
// ledger.RefusedInvalidURL (it cannot be parsed), RefusedOffDomain
// (allowed_domains), RefusedRegex (allow_regex, deny_regex) or
// RefusedExtension (deny_extensions), the first that applies in that
// order; "" when it is followed.
func (f *Filter) Refusal(link string) ledger.Reason {
	u, err := url.Parse(link)
	if err != nil {
		return ledger.RefusedInvalidURL
	}
	return f.refusal(u, link)
}

func (f *Filter) refusal(u *url.URL, link string) ledger.Reason {
	if len(f.domains) > 0 && !f.domainAllowed(u) {
		return ledger.RefusedOffDomain
	}
	if len(f.allow) > 0 && !matchAny(f.allow, link) {
		return ledger.RefusedRegex
	}
	if matchAny(f.deny, link) {
		return ledger.RefusedRegex
	}
	if f.extensionDenied(u.EscapedPath()) {
		return ledger.RefusedExtension
	}
	return ""
}

func (f *Filter) domainAllowed(u *url.URL) bool {
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	hostPort := host
	if p := u.Port(); p != "" {
		hostPort = net.JoinHostPort(host, p)
	}
	for _, d := range f.domains {
		h := host
		if d.withPort {
			h = hostPort
		}
		if h == d.name || strings.HasSuffix(h, "."+d.name) {
			return true
		}
	}
	return false
}

func matchAny(res []*regexp.Regexp, s string) bool {
	for _, re := range res {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}

// extensionDenied looks at the last path segment without its ;params, as
// Python's urlparse and posixpath.splitext see it (a name that is only an
// extension, ".png", has none).
func (f *Filter) extensionDenied(path string) bool {
	if len(f.extensions) == 0 {
		return false
	}
	seg := path[strings.LastIndexByte(path, '/')+1:]
	seg, _, _ = strings.Cut(seg, ";")
	seg = strings.TrimLeft(seg, ".")
	// Every suffix starting at a dot (but not the whole name) is a candidate:
	// "a.tar.gz" has ".tar.gz" and ".gz".
	for i := strings.IndexByte(seg, '.'); i > 0; {
		if f.extensions[strings.ToLower(seg[i:])] {
			return true
		}
		next := strings.IndexByte(seg[i+1:], '.')
		if next < 0 {
			break
		}
		i += 1 + next
	}
	return false
}

// Select returns the links f allows, each in canonical form
// (fingerprint.Canonicalize), without duplicates of a canonical URL or URLs
// longer than MaxURLLength, in their order; and how many it left out, by
// reason (Refusal; a URL that cannot be parsed or is too long is
// ledger.RefusedInvalidURL). A link found twice on the page is one link:
// its copies are not counted.
func (f *Filter) Select(links []spider.Link) ([]spider.Link, map[ledger.Reason]int) {
	parsed := make([]found, 0, len(links))
	var refused map[ledger.Reason]int
	for _, l := range links {
		if u, err := url.Parse(l.URL); err == nil {
			parsed = append(parsed, found{l, u})
		} else {
			refused = count(refused, ledger.RefusedInvalidURL)
		}
	}
	out, more := f.selectFound(parsed)
	for r, n := range more {
		if refused == nil {
			refused = map[ledger.Reason]int{}
		}
		refused[r] += n
	}
	return out, refused
}

func count(m map[ledger.Reason]int, r ledger.Reason) map[ledger.Reason]int {
	if m == nil {
		m = map[ledger.Reason]int{}
	}
	m[r]++
	return m
}

func (f *Filter) selectFound(links []found) ([]spider.Link, map[ledger.Reason]int) {
	out := make([]spider.Link, 0, len(links))
	seen := make(map[string]bool, len(links))
	refusedSeen := map[string]bool{}
	var refused map[ledger.Reason]int
	for _, l := range links {
		c := fingerprint.Canonicalize(l.URL)
		if seen[c] {
			continue
		}
		r := f.refusal(l.u, l.URL)
		if r == "" && len(c) > MaxURLLength {
			r = ledger.RefusedInvalidURL
		}
		if r != "" {
			if !refusedSeen[c] { // a link found twice is refused once
				refusedSeen[c] = true
				refused = count(refused, r)
			}
			continue
		}
		seen[c] = true
		out = append(out, spider.Link{URL: c, Text: l.Text})
	}
	return out, refused
}

// Follow returns the links of page that the crawl of r follows: Extract
// from the body (when the response is markup), then r's Filter.Select,
// with the links it left out counted by reason (for Output.Refused).
// An invalid regular expression in r is an error, and no link is followed.
//
// A page with more links than page.MaxLinks (MAX_LINKS_PER_PAGE; 0: no
// limit) has its first MaxLinks links that the filter allows followed, in
// document order. Only the page's first ScannedPerFollowed × MaxLinks
// hrefs are read, so that a page of a million links costs a bounded
// memory: the filter's refusals are counted among those; the links the
// filter allows after the first MaxLinks, and every href after those
// read, each time it is written, are counted as ledger.RefusedTooManyLinks.
func Follow(page *spider.Page, r *crawlrequest.Request) ([]spider.Link, map[ledger.Reason]int, error) {
	f, err := cachedFilter(r)
	if err != nil {
		return nil, nil, err
	}
	if !isMarkup(page) {
		return []spider.Link{}, nil, nil
	}
	most := max(page.MaxLinks, 0)
	found, over := extractPage(page, most*ScannedPerFollowed)
	out, refused := f.selectFound(found)
	if most > 0 && len(out) > most {
		over += len(out) - most
		out = out[:most:most]
	}
	if over > 0 {
		if refused == nil {
			refused = map[ledger.Reason]int{}
		}
		refused[ledger.RefusedTooManyLinks] += over
	}
	return out, refused, nil
}

// MaxPerPage is MAX_LINKS_PER_PAGE, read by the crawler's engine (into
// spider.Response.MaxLinks) and the REST service's /try.
var MaxPerPage = settings.Int("MAX_LINKS_PER_PAGE", 6000, "the most links of one page a crawl follows, in the page's order: the rest are counted in the crawl ledger as "+
	"`refused:too_many_links`, and only the page's first 4 × this many hrefs are read, so a page of a million links costs a bounded memory "+
	"([a page of too many links](crawler.md#a-page-of-too-many-links-go))").Ours().Within(1, 1000000)

// ScannedPerFollowed is how many of a page's hrefs Follow reads for each
// link it may follow (page.MaxLinks): room for the page's duplicates and
// the links its crawl's filter refuses.
const ScannedPerFollowed = 4

// isMarkup reports whether a page can hold links: HTML, XML or other text
// by its Content-Type, or, without one, by sniffing the body.
func isMarkup(page *spider.Page) bool {
	ct := ""
	for k, v := range page.ResponseHeaders {
		if strings.EqualFold(k, "Content-Type") && len(v) > 0 {
			ct = v[len(v)-1]
		}
	}
	// What mime.ParseMediaType would give, but for white space before a
	// ";", which the checks below do not mind, without parsing the
	// parameters into a map (one per page).
	media, _, _ := strings.Cut(strings.ToLower(strings.TrimSpace(ct)), ";")
	if media == "" {
		head := page.RawBody
		if head == nil {
			head = []byte(page.Body[:min(len(page.Body), 512)])
		}
		media, _, _ = strings.Cut(http.DetectContentType(head), ";")
	}
	return strings.HasPrefix(media, "text/") || strings.Contains(media, "html") || strings.Contains(media, "xml")
}
