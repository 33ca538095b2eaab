package spider

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/wirejson"
)

// AppendJSON appends the crawl result's JSON to b, exactly as MarshalJSON
// writes it, without reflection and without the intermediate copies an
// Encoder makes: the crawler writes one per page. Strings are escaped by
// wirejson in its Go style (encoding/json without HTML escaping).
func (p *Page) AppendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"url":`...)
	b = wirejson.AppendString(b, p.URL, wirejson.Go)
	b = append(b, `,"response_url":`...)
	b = wirejson.AppendString(b, p.ResponseURL, wirejson.Go)
	b = append(b, `,"status_code":`...)
	b = strconv.AppendInt(b, int64(p.StatusCode), 10)
	b = append(b, `,"status_msg":`...)
	b = wirejson.AppendString(b, p.StatusMsg, wirejson.Go)
	b = append(b, `,"response_headers":`...)
	b = appendHeaders(b, p.ResponseHeaders)
	b = append(b, `,"request_headers":`...)
	b = appendHeaders(b, p.RequestHeaders)
	b = append(b, `,"body":`...)
	b = wirejson.AppendString(b, p.Body, wirejson.Go)
	b = append(b, `,"encoding":`...)
	b = wirejson.AppendString(b, p.Encoding, wirejson.Go)
	b = append(b, `,"links":[`...)
	for i, l := range p.Links {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"url":`...)
		b = wirejson.AppendString(b, l.URL, wirejson.Go)
		b = append(b, `,"text":`...)
		b = wirejson.AppendString(b, l.Text, wirejson.Go)
		b = append(b, '}')
	}
	b = append(b, `],"attrs":`...)
	if p.Attrs == nil {
		b = append(b, "null"...)
	} else {
		// As encoding/json writes a json.RawMessage: checked and compacted.
		buf := bytes.NewBuffer(b)
		if err := json.Compact(buf, p.Attrs); err != nil {
			return nil, fmt.Errorf("json: error calling MarshalJSON for type json.RawMessage: %w", err)
		}
		b = buf.Bytes()
	}
	b = append(b, `,"appid":`...)
	b = wirejson.AppendString(b, p.AppID, wirejson.Go)
	b = append(b, `,"crawlid":`...)
	b = wirejson.AppendString(b, p.CrawlID, wirejson.Go)
	b = append(b, `,"timestamp":`...)
	b = wirejson.AppendString(b, p.Timestamp, wirejson.Go)
	for _, k := range slices.Sorted(maps.Keys(p.Extra)) {
		if standardFields[k] {
			continue
		}
		b = append(b, ',')
		b = wirejson.AppendString(b, k, wirejson.Go)
		b = append(b, ':')
		var v bytes.Buffer
		if err := encodeNoEscape(&v, p.Extra[k]); err != nil {
			return nil, err
		}
		b = append(b, bytes.TrimRight(v.Bytes(), "\n")...)
	}
	return append(b, '}'), nil
}

// appendHeaders writes a header map as encoding/json does: {} for none,
// names sorted, each value a list (null for a nil one).
func appendHeaders(b []byte, h map[string][]string) []byte {
	b = append(b, '{')
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	slices.Sort(names)
	for i, k := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = wirejson.AppendString(b, k, wirejson.Go)
		b = append(b, ':')
		vs := h[k]
		if vs == nil {
			b = append(b, "null"...)
			continue
		}
		b = append(b, '[')
		for j, v := range vs {
			if j > 0 {
				b = append(b, ',')
			}
			b = wirejson.AppendString(b, v, wirejson.Go)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}
