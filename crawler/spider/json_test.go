package spider_test

import (
	"bytes"
	"encoding/json"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider"
)

// referenceJSON is the crawl result as encoding/json writes it (without
// HTML escaping): the encoding AppendJSON must reproduce byte for byte.
func referenceJSON(t *testing.T, p *spider.Page) []byte {
	t.Helper()
	// plainPage has Page's fields and tags but not its MarshalJSON, so
	// encoding/json writes it field by field.
	type plainPage spider.Page
	f := plainPage(*p)
	if f.Links == nil {
		f.Links = []spider.Link{}
	}
	if f.ResponseHeaders == nil {
		f.ResponseHeaders = map[string][]string{}
	}
	if f.RequestHeaders == nil {
		f.RequestHeaders = map[string][]string{}
	}
	encode := func(v any) []byte {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		return bytes.TrimRight(b.Bytes(), "\n")
	}
	out := encode(&f)
	standard := []string{"url", "response_url", "status_code", "status_msg", "response_headers", "request_headers",
		"body", "encoding", "links", "attrs", "appid", "crawlid", "timestamp"}
	out = out[:len(out)-1]
	for _, k := range slices.Sorted(maps.Keys(p.Extra)) {
		if slices.Contains(standard, k) {
			continue
		}
		out = append(out, ',')
		out = append(out, encode(k)...)
		out = append(out, ':')
		out = append(out, encode(p.Extra[k])...)
	}
	return append(out, '}')
}

func TestAppendJSONWritesWhatEncodingJSONWrites(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []string{"a", "Z", " ", "/", "\x00", "\x1f", "\b", "\f", "\n", "\r", "\t", `"`, `\`, "é", "\u2028", "\u2029",
		"\xff", "\xe2\x80", "<", ">", "&", "\U0001F600", "\x7f"}
	str := func() string {
		var b strings.Builder
		for range rng.IntN(10) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		return b.String()
	}
	headers := func() map[string][]string {
		switch rng.IntN(4) {
		case 0:
			return nil
		case 1:
			return map[string][]string{}
		}
		h := map[string][]string{}
		for range rng.IntN(5) {
			var vs []string
			if rng.IntN(5) > 0 {
				vs = []string{}
				for range rng.IntN(3) {
					vs = append(vs, str())
				}
			}
			h[str()] = vs
		}
		return h
	}
	attrs := []json.RawMessage{nil, json.RawMessage(`{"k": [1, 2.5, "x y"], "n": null}`), json.RawMessage(`"<&>"`), json.RawMessage(`{}`)}
	for range 3000 {
		p := &spider.Page{URL: str(), ResponseURL: str(), StatusCode: rng.IntN(600) - 50, StatusMsg: str(),
			ResponseHeaders: headers(), RequestHeaders: headers(), Body: str(), Encoding: str(),
			Attrs: attrs[rng.IntN(len(attrs))], AppID: str(), CrawlID: str(), Timestamp: str()}
		for range rng.IntN(3) {
			p.Links = append(p.Links, spider.Link{URL: str(), Text: str()})
		}
		if rng.IntN(3) == 0 {
			p.Extra = map[string]any{"truncated": true, str(): str(), "url": "never", "n": rng.IntN(9)}
		}
		want := referenceJSON(t, p)
		got, err := p.AppendJSON([]byte("prefix"))
		if err != nil || string(got) != "prefix"+string(want) {
			t.Fatalf("page %+v:\nAppendJSON %s (%v)\nencoding/json %s", p, got, err, want)
		}
		if m, err := p.MarshalJSON(); err != nil || !bytes.Equal(m, want) {
			t.Fatalf("MarshalJSON %s, %v", m, err)
		}
	}
}

func TestAppendJSONRefusesAttrsThatAreNotJSON(t *testing.T) {
	p := &spider.Page{Attrs: json.RawMessage(`{"a":`)}
	if _, err := p.AppendJSON(nil); err == nil {
		t.Fatal("no error for attrs that are not JSON")
	}
}
