package spider

import (
	"bytes"
	"strings"
	"unicode/utf8"
	"unsafe"

	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding"
)

// prescanBytes is how much of a body is searched for a <meta> charset
// declaration, as browsers do (the HTML standard's prescan).
const prescanBytes = 1024

// Text returns the body decoded to UTF-8 and the name of the encoding used
// ("utf-8", "windows-1252", "shift_jis", ...: the WHATWG Encoding Standard's
// names). The encoding is, in order: the Content-Type header's charset, a
// byte order mark, a <meta charset> or <meta http-equiv="Content-Type">
// declaration in the first 1024 bytes, then detection: UTF-8 when the body
// is valid UTF-8 (ASCII included), windows-1252 otherwise. That is the
// original's order (Scrapy's TextResponse: header, BOM, meta, then
// auto-detection), with two differences that follow the Encoding Standard
// the browsers use: labels map to encodings as it says (so "iso-8859-1"
// and "latin1" decode, and are reported, as "windows-1252", which is what
// Scrapy does too, naming it "cp1252"), and an undeclared ASCII page is
// "utf-8" where Scrapy says "ascii".
//
// When the body is UTF-8 the text shares its memory (a body may be as
// large as DOWNLOAD_MAXSIZE): Body must not be changed once fetched.
//
// Text never fails: invalid sequences become U+FFFD, and a body that is not
// text at all (an image) still decodes, byte by byte, as windows-1252. A
// body cut at the size limit (Truncated) does not lose its UTF-8 detection
// to a character cut in half at the end.
func (r *Response) Text() (text string, encodingName string) {
	body := r.Body
	enc, name := r.encoding()
	if bom, bomName := sniffBOM(body); bom > 0 && bomName == name {
		body = body[bom:]
	}
	// The body can be as large as DOWNLOAD_MAXSIZE: it is not copied
	// into the text when it is UTF-8 already (Body is never changed), nor
	// is a decoded body copied again.
	if name == "utf-8" {
		if utf8.Valid(body) {
			return unsafe.String(unsafe.SliceData(body), len(body)), name
		}
		return strings.ToValidUTF8(unsafe.String(unsafe.SliceData(body), len(body)), "\uFFFD"), name
	}
	out, err := enc.NewDecoder().Bytes(body)
	if err != nil {
		// x/text decoders replace what they cannot decode; this is a
		// safety net, never expected.
		return strings.ToValidUTF8(unsafe.String(unsafe.SliceData(body), len(body)), "\uFFFD"), name
	}
	return unsafe.String(unsafe.SliceData(out), len(out)), name
}

// encoding decides the body's encoding (see Text).
func (r *Response) encoding() (encoding.Encoding, string) {
	if cs := charsetParam(lastValue(r.Header, "Content-Type")); cs != "" {
		if e, name := charset.Lookup(cs); e != nil {
			return e, name
		}
	}
	if n, name := sniffBOM(r.Body); n > 0 {
		e, name := charset.Lookup(name)
		return e, name
	}
	if e, name := metaCharset(r.Body); e != nil {
		return e, name
	}
	body := r.Body
	if r.Truncated {
		body = trimPartialRune(body)
	}
	if utf8.Valid(body) {
		return charset.Lookup("utf-8")
	}
	return charset.Lookup("windows-1252")
}

// lastValue is the header's last value, as Scrapy's Headers.get returns it.
func lastValue(h map[string][]string, name string) string {
	for k, v := range h {
		if strings.EqualFold(k, name) && len(v) > 0 {
			return v[len(v)-1]
		}
	}
	return ""
}

// sniffBOM returns the length of the body's byte order mark and its encoding.
func sniffBOM(b []byte) (int, string) {
	switch {
	case bytes.HasPrefix(b, []byte{0xEF, 0xBB, 0xBF}):
		return 3, "utf-8"
	case bytes.HasPrefix(b, []byte{0xFE, 0xFF}):
		return 2, "utf-16be"
	case bytes.HasPrefix(b, []byte{0xFF, 0xFE}):
		return 2, "utf-16le"
	}
	return 0, ""
}

// trimPartialRune drops an incomplete UTF-8 sequence at the end of b.
func trimPartialRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if b[i] < utf8.RuneSelf {
			return b
		}
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			return b
		}
	}
	return b
}

// charsetParam finds charset=VALUE in a Content-Type value or a <meta>
// content attribute, leniently as browsers do: case-insensitive, value
// quoted or not, whatever else the value holds.
func charsetParam(s string) string {
	for {
		i := indexFoldASCII(s, "charset")
		if i < 0 {
			return ""
		}
		s = s[i+len("charset"):]
		rest := strings.TrimLeft(s, " \t\n\f\r")
		if !strings.HasPrefix(rest, "=") {
			continue
		}
		rest = strings.TrimLeft(rest[1:], " \t\n\f\r")
		if rest == "" {
			return ""
		}
		if q := rest[0]; q == '"' || q == '\'' {
			end := strings.IndexByte(rest[1:], q)
			if end < 0 {
				return ""
			}
			return rest[1 : 1+end]
		}
		if end := strings.IndexAny(rest, "; \t\n\f\r\"'"); end >= 0 {
			return rest[:end]
		}
		return rest
	}
}

// indexFoldASCII is strings.Index ignoring ASCII case (lower must be lower-case).
func indexFoldASCII(s, lower string) int {
	for i := 0; i+len(lower) <= len(s); i++ {
		j := 0
		for ; j < len(lower); j++ {
			c := s[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != lower[j] {
				break
			}
		}
		if j == len(lower) {
			return i
		}
	}
	return -1
}

// metaCharset is the HTML standard's prescan: the first <meta charset> or
// <meta http-equiv="content-type" content="...charset=..."> in the first
// 1024 bytes. A declared UTF-16 means UTF-8 (the declaration was readable
// as ASCII, so the document is not UTF-16).
func metaCharset(body []byte) (encoding.Encoding, string) {
	if len(body) > prescanBytes {
		body = body[:prescanBytes]
	}
	z := html.NewTokenizer(bytes.NewReader(body))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return nil, ""
		case html.StartTagToken, html.SelfClosingTagToken:
			tag, hasAttr := z.TagName()
			if string(tag) != "meta" {
				continue
			}
			var label, content string
			pragma, seen := false, map[string]bool{}
			for hasAttr {
				var k, v []byte
				k, v, hasAttr = z.TagAttr()
				key := string(k)
				if seen[key] {
					continue // the first of a repeated attribute counts
				}
				seen[key] = true
				switch key {
				case "charset":
					label = string(v)
				case "content":
					content = string(v)
				case "http-equiv":
					pragma = strings.EqualFold(strings.TrimSpace(string(v)), "content-type")
				}
			}
			if label == "" && pragma {
				label = charsetParam(content)
			}
			if label == "" {
				continue
			}
			e, name := charset.Lookup(label)
			if e == nil {
				continue
			}
			if strings.HasPrefix(name, "utf-16") {
				return charset.Lookup("utf-8")
			}
			return e, name
		}
	}
}
