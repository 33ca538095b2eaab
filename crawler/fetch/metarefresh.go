package fetch

import (
	"html"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// metaRefreshWindow is how much of a page is searched for its meta
// refresh: Scrapy's get_meta_refresh reads the first 4096 characters.
const metaRefreshWindow = 4096

// The forms w3lib's get_meta_refresh accepts: http-equiv before content,
// or after it; the content "<delay>; url=<target>" quoted either way.
var (
	metaRefreshBefore = regexp.MustCompile(`(?is)<meta\s[^>]*http-equiv[^>]*refresh[^>]*content\s*=\s*(?:"(\d*\.?\d+)\s*;\s*url=\s*([^"]*)"|'(\d*\.?\d+)\s*;\s*url=\s*([^']*)')`)
	metaRefreshAfter  = regexp.MustCompile(`(?is)<meta\s[^>]*content\s*=\s*(?:"(\d*\.?\d+)\s*;\s*url=\s*([^"]*)"|'(\d*\.?\d+)\s*;\s*url=\s*([^']*)')[^>]*?\shttp-equiv\s*=[^>]*refresh`)
	htmlComment       = regexp.MustCompile(`(?s)<!--.*?(?:-->|$)`)
)

// MetaRefresh returns the target and delay (seconds) of the
// <meta http-equiv="refresh" content="<delay>; url=<target>"> of an HTML
// response, as Scrapy's MetaRefreshMiddleware finds it (w3lib's
// get_meta_refresh on the first 4096 characters, comments left out, the
// target resolved against the response's URL); ok is false when the page
// has none, names no URL, or names one that is not http(s). A refresh
// without a URL (a page reloading itself) is not a redirect, as in Scrapy.
func MetaRefresh(res *Result) (target string, delay float64, ok bool) {
	if res == nil {
		return "", 0, false
	}
	// The words first: parsing the Content-Type costs more than looking
	// for them, and most pages have none.
	window := res.Body[:min(len(res.Body), metaRefreshWindow)]
	if !mayHaveMetaRefresh(window) || !isHTML(res) {
		return "", 0, false
	}
	text := htmlComment.ReplaceAllString(string(window), "")
	m := metaRefreshBefore.FindStringSubmatch(text)
	if m == nil {
		if m = metaRefreshAfter.FindStringSubmatch(text); m == nil {
			return "", 0, false
		}
	}
	num, ref := m[1], m[2]
	if num == "" {
		num, ref = m[3], m[4]
	}
	delay, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return "", 0, false
	}
	ref = strings.Trim(html.UnescapeString(strings.TrimSpace(ref)), ` "'`)
	base, err := url.Parse(res.URL)
	if err != nil || ref == "" {
		return "", 0, false
	}
	u, err := base.Parse(ref)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", 0, false
	}
	return u.String(), delay, true
}

// mayHaveMetaRefresh reports whether window names both "http-equiv" and
// "refre", as every page the expressions above match does (they need
// "refresh"; the check leaves out the "sh" that (?i) would also match as
// "ſh"). Most pages have neither, and running the expressions on every
// page cost about 6% of the crawler's CPU (pprof of BenchmarkCrawlCost).
func mayHaveMetaRefresh(window []byte) bool {
	return containsFoldASCII(window, "http-equiv") && containsFoldASCII(window, "refre")
}

// containsFoldASCII reports whether b contains lower, a lower-case ASCII
// word, in any case. It may say yes for a few non-letters ("\r" for "-"),
// never no for a match.
func containsFoldASCII(b []byte, lower string) bool {
	for i := 0; i+len(lower) <= len(b); i++ {
		j := 0
		for j < len(lower) && b[i+j]|0x20 == lower[j] {
			j++
		}
		if j == len(lower) {
			return true
		}
	}
	return false
}

// isHTML reports whether res is an HTML response, by its Content-Type or,
// without one, by its first bytes (Scrapy's HtmlResponse).
func isHTML(res *Result) bool {
	ct := res.Header.Get("Content-Type")
	if ct == "" {
		ct = http.DetectContentType(res.Body)
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "text/html" || mt == "application/xhtml+xml")
}
