package spider

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/extract"
)

// NewPage returns the crawl result of a response, filled as the original's
// link spider fills its item: url (the request's), response_url,
// status_code, status_msg, response_headers and request_headers (every
// header as a list of its values, as Scrapy's headers are), body and encoding (see Text), links (empty), and attrs, appid and
// crawlid from the request. The pipeline sets Timestamp.
//
// status_msg is the response's reason phrase ("Not Found"), or the standard
// one for the code when the server sent none; the original always wrote "OK".
func NewPage(resp *Response) *Page {
	body, enc := resp.Text()
	p := &Page{
		URL:             resp.URL,
		ResponseURL:     resp.URL,
		StatusCode:      resp.Status,
		StatusMsg:       reasonPhrase(resp.Status, resp.StatusText),
		ResponseHeaders: make(map[string][]string, len(resp.Header)),
		RequestHeaders:  make(map[string][]string, len(resp.RequestHeader)),
		Body:            body,
		Encoding:        enc,
		Links:           []Link{},
		RawBody:         resp.Body,
		MaxLinks:        resp.MaxLinks,
	}
	if resp.ShareParse {
		p.Doc = extract.NewDoc(p.ResponseURL, body)
	}
	cloneHeader(p.ResponseHeaders, resp.Header)
	cloneHeader(p.RequestHeaders, resp.RequestHeader)
	if r := resp.Request; r != nil {
		p.URL = r.URL
		p.AppID = r.AppID
		p.CrawlID = r.CrawlID
		p.Attrs = slices.Clone(r.Attrs)
	}
	return p
}

// cloneHeader copies h into dst, every value list a copy of its own (nil
// stays nil), all of them cut from one allocation: a list per header was
// the crawler's second most frequent allocation per page (pprof of
// BenchmarkCrawlCost). Each list's capacity is its length, so appending
// to one never writes into the next.
func cloneHeader(dst map[string][]string, h http.Header) {
	n := 0
	for _, v := range h {
		n += len(v)
	}
	all := make([]string, 0, n)
	for k, v := range h {
		if v == nil {
			dst[k] = nil
			continue
		}
		start := len(all)
		all = append(all, v...)
		dst[k] = all[start:len(all):len(all)]
	}
}

// reasonPhrase is the status message: the server's own, without the code
// should a fetcher pass the whole status line ("404 Not Found"), else the
// standard phrase.
func reasonPhrase(code int, text string) string {
	if text != "" && text == http.StatusText(code) {
		return text // the usual case, without formatting the code
	}
	text = strings.TrimSpace(text)
	if rest, ok := strings.CutPrefix(text, strconv.Itoa(code)); ok && (rest == "" || rest[0] == ' ') {
		text = strings.TrimSpace(rest)
	}
	if text == "" {
		return http.StatusText(code)
	}
	return text
}

// standardFields are the JSON names of Page's own fields; Extra cannot use them.
var standardFields = map[string]bool{
	"url": true, "response_url": true, "status_code": true, "status_msg": true,
	"response_headers": true, "request_headers": true, "body": true, "encoding": true,
	"links": true, "attrs": true, "appid": true, "crawlid": true, "timestamp": true,
}

// MarshalJSON writes the crawl result: the standard fields in the spec's
// names, then the Extra fields (sorted; an Extra key naming a standard field
// is left out). links is [] when there are none, response_headers and
// request_headers {} when unset, attrs null when unset. HTML characters are
// not escaped (the body stays readable and as small as the original's);
// encode Pages with an Encoder that has SetEscapeHTML(false), as
// json.Marshal escapes them again. AppendJSON writes the same bytes.
func (p Page) MarshalJSON() ([]byte, error) { return p.AppendJSON(nil) }

func encodeNoEscape(b *bytes.Buffer, v any) error {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
