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

// TestExtraValuesAreWrittenAsEncodingJSONWritesThem: the values extract
// rules give (and any other) are written as encoding/json writes them.
func TestExtraValuesAreWrittenAsEncodingJSONWritesThem(t *testing.T) {
	values := []any{
		"plain", "<a href=\"x\">&amp;</a>", "bad \xff utf-8 \u2028", "", true, false, nil, 12.5, 3.0, 1e21, 1e-7,
		json.Number("42"), []any{}, []any(nil), map[string]any(nil), map[string]any{},
		[]any{"a", 1.5, true, nil, []any{"b"}, map[string]any{"z": "1", "a": []any{}, "é": false}},
		map[string]any{"title": "Lamp", "links": []any{"http://shop.example/1?a=1&b=2"}, "n": 3.0,
			"ld": []any{map[string]any{"@type": "Product", "offers": map[string]any{"price": "12.50"}}}},
		[]string{"typed"}, []string{}, []string(nil), []string{"<a href=\"x\">&amp;</a>", "bad \xff utf-8 \u2028", ""},
		map[string]any{"links": []string{"http://shop.example/1?a=1&b=2"}}, map[string]string{"k": "v"}, 7,
	}
	for _, v := range values {
		p := &spider.Page{Extra: map[string]any{"extracted": v}}
		got, err := p.AppendJSON(nil)
		if err != nil {
			t.Fatalf("%#v: %v", v, err)
		}
		if want := referenceJSON(t, p); !bytes.Equal(got, want) {
			t.Errorf("%#v:\n got %s\nwant %s", v, got, want)
		}
	}
}

// BenchmarkExtractedValue: a test-site page's extracted field (five rules'
// values) written by AppendJSON and by encoding/json, as AppendJSON wrote
// it before; ns/op, allocs/op.
func BenchmarkExtractedValue(b *testing.B) {
	v := map[string]any{"title": "Page 1.2", "heading": "Page 1.2", "level": "2", "ld": []any{},
		"links": []string{"http://127.0.0.1:8080/page/1/2/1", "http://127.0.0.1:8080/page/1/2/2", "http://127.0.0.1:8080/page/1/2/3"}}
	p := &spider.Page{Extra: map[string]any{"extracted": v}}
	b.Run("AppendJSON", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 4096)
		for b.Loop() {
			if _, err := p.AppendJSON(buf[:0]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var out bytes.Buffer
			enc := json.NewEncoder(&out)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(v); err != nil {
				b.Fatal(err)
			}
		}
	})
}
