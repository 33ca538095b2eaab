package spider_test

import (
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider"
)

func response(contentType string, body []byte) *spider.Response {
	h := http.Header{}
	if contentType != "" {
		h.Set("Content-Type", contentType)
	}
	return &spider.Response{URL: "http://example.com/", Status: 200, Header: h, Body: body}
}

var (
	sjisNihongo  = []byte{0x93, 0xfa, 0x96, 0x7b, 0x8c, 0xea} // 日本語 in Shift_JIS
	cp1252Cafe   = []byte{'c', 'a', 'f', 0xe9, ' ', 0x80}     // "café €" in windows-1252
	utf16leE     = []byte{0xff, 0xfe, 0xe9, 0x00, 'a', 0x00}  // BOM, "éa" in UTF-16LE
	utf8BOMHello = []byte{0xef, 0xbb, 0xbf, 'h', 'i'}
)

func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func TestTextDecodesByCharset(t *testing.T) {
	tests := []struct {
		name, contentType string
		body              []byte
		truncated         bool
		wantText, wantEnc string
	}{
		{"utf-8 declared in the header", "text/html; charset=UTF-8", []byte("café"), false, "café", "utf-8"},
		{"latin1 in the header decodes as windows-1252, as browsers and Scrapy do", "text/html; charset=iso-8859-1", cp1252Cafe, false, "café €", "windows-1252"},
		{"windows-1252 in the header", "text/html;charset=\"windows-1252\"", cp1252Cafe, false, "café €", "windows-1252"},
		{"Shift_JIS in a meta charset", "text/html", cat([]byte(`<html><head><meta charset="shift_jis"></head><body>`), sjisNihongo), false,
			`<html><head><meta charset="shift_jis"></head><body>日本語`, "shift_jis"},
		{"Shift_JIS in a meta http-equiv", "", cat([]byte(`<meta http-equiv="Content-Type" content="text/html; charset=Shift_JIS">`), sjisNihongo), false,
			`<meta http-equiv="Content-Type" content="text/html; charset=Shift_JIS">日本語`, "shift_jis"},
		{"the header wins over the meta", "text/html; charset=windows-1252", cat([]byte(`<meta charset="shift_jis">`), cp1252Cafe), false,
			`<meta charset="shift_jis">café €`, "windows-1252"},
		{"a header with bytes that change length when lower-cased", "text/html; \xe9\u0130 CHARSET=Windows-1252", cp1252Cafe, false, "café €", "windows-1252"},
		{"an unknown header charset falls back to the meta", "text/html; charset=bogus", cat([]byte(`<meta charset="windows-1252">`), cp1252Cafe), false,
			`<meta charset="windows-1252">café €`, "windows-1252"},
		{"a meta without http-equiv content-type does not count", "", cat([]byte(`<meta content="charset=shift_jis">`), []byte("é")), false,
			`<meta content="charset=shift_jis">é`, "utf-8"},
		{"a meta declaring utf-16 means utf-8", "", []byte(`<meta charset="utf-16">é`), false, `<meta charset="utf-16">é`, "utf-8"},
		{"a UTF-8 BOM is used and removed", "", utf8BOMHello, false, "hi", "utf-8"},
		{"a UTF-16 BOM is used and removed", "", utf16leE, false, "éa", "utf-16le"},
		{"invalid UTF-8 declared UTF-8 is replaced", "text/html; charset=utf-8", []byte("a\xffb\xc3"), false, "a\uFFFDb\uFFFD", "utf-8"},
		{"undeclared ASCII is utf-8", "", []byte("<p>plain</p>"), false, "<p>plain</p>", "utf-8"},
		{"undeclared valid UTF-8 is utf-8", "text/html", []byte("naïve"), false, "naïve", "utf-8"},
		{"undeclared invalid UTF-8 is windows-1252", "text/html", cp1252Cafe, false, "café €", "windows-1252"},
		{"a body cut in a character stays utf-8", "", []byte("caf\xc3\xa9 \xe2\x82"), true, "café \uFFFD", "utf-8"},
		{"an uncut body ending badly is not utf-8", "", []byte("caf\xc3\xa9 \xe2\x82"), false, "cafÃ© â‚", "windows-1252"},
		{"an empty body", "", nil, false, "", "utf-8"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := response(tc.contentType, tc.body)
			r.Truncated = tc.truncated
			text, enc := r.Text()
			if text != tc.wantText || enc != tc.wantEnc {
				t.Fatalf("Text() = %q, %q; want %q, %q", text, enc, tc.wantText, tc.wantEnc)
			}
		})
	}
}

func TestTextOfABinaryBodyIsStillAString(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\xff\xfe\xfd")
	text, enc := response("image/png", png).Text()
	if !utf8.ValidString(text) || utf8.RuneCountInString(text) != len(png) || enc != "windows-1252" {
		t.Fatalf("Text() = %q, %q", text, enc)
	}
}

func TestTextReadsOnlyTheFirstKilobyteForAMeta(t *testing.T) {
	body := strings.Repeat(" ", 1100) + `<meta charset="shift_jis">` + string(sjisNihongo)
	if _, enc := response("", []byte(body)).Text(); enc != "windows-1252" {
		t.Fatalf("encoding %q: a late meta must not count", enc)
	}
}

func FuzzText(f *testing.F) {
	f.Add("text/html", []byte(`<meta charset="shift_jis">`+string(sjisNihongo)))
	f.Add("text/html; charset=utf-16be", utf16leE)
	f.Add("", cp1252Cafe)
	f.Add("\xe9ChArset", []byte("0"))
	f.Add("text/html; charset=\"", []byte("<meta http-equiv=content-type content='charset='>"))
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		r := response("", body)
		r.Header.Set("Content-Type", contentType)
		text, enc := r.Text()
		if !utf8.ValidString(text) || enc == "" {
			t.Fatalf("Text() = %q, %q", text, enc)
		}
	})
}
