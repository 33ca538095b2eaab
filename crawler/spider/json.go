package spider

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// AppendJSON appends the crawl result's JSON to b, exactly as MarshalJSON
// writes it, without reflection and without the intermediate copies an
// Encoder makes: the crawler writes one per page.
func (p *Page) AppendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"url":`...)
	b, _, _ = AppendJSONString(b, p.URL, -1)
	b = append(b, `,"response_url":`...)
	b, _, _ = AppendJSONString(b, p.ResponseURL, -1)
	b = append(b, `,"status_code":`...)
	b = strconv.AppendInt(b, int64(p.StatusCode), 10)
	b = append(b, `,"status_msg":`...)
	b, _, _ = AppendJSONString(b, p.StatusMsg, -1)
	b = append(b, `,"response_headers":`...)
	b = appendHeaders(b, p.ResponseHeaders)
	b = append(b, `,"request_headers":`...)
	b = appendHeaders(b, p.RequestHeaders)
	b = append(b, `,"body":`...)
	b, _, _ = AppendJSONString(b, p.Body, -1)
	b = append(b, `,"encoding":`...)
	b, _, _ = AppendJSONString(b, p.Encoding, -1)
	b = append(b, `,"links":[`...)
	for i, l := range p.Links {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"url":`...)
		b, _, _ = AppendJSONString(b, l.URL, -1)
		b = append(b, `,"text":`...)
		b, _, _ = AppendJSONString(b, l.Text, -1)
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
	b, _, _ = AppendJSONString(b, p.AppID, -1)
	b = append(b, `,"crawlid":`...)
	b, _, _ = AppendJSONString(b, p.CrawlID, -1)
	b = append(b, `,"timestamp":`...)
	b, _, _ = AppendJSONString(b, p.Timestamp, -1)
	for _, k := range slices.Sorted(maps.Keys(p.Extra)) {
		if standardFields[k] {
			continue
		}
		b = append(b, ',')
		b, _, _ = AppendJSONString(b, k, -1)
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
		b, _, _ = AppendJSONString(b, k, -1)
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
			b, _, _ = AppendJSONString(b, v, -1)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

// AppendJSONString appends s as a JSON string, quotes included, escaped as
// encoding/json does without HTML escaping (see AppendJSONText).
func AppendJSONString(dst []byte, s string, room int) (out []byte, taken, size int) {
	dst = append(dst, '"')
	dst, taken, size = AppendJSONText(dst, s, room)
	return append(dst, '"'), taken, size
}

// AppendJSONText escapes s as encoding/json does inside a string, without
// HTML escaping: '"', '\\' and control characters escaped (\b \f \n \r \t
// short, others \u00xx), U+2028 and U+2029 as \u2028 and \u2029, invalid
// UTF-8 as \ufffd. It stops before the first character that would take the
// escaped text past room bytes (room < 0: no limit) and returns dst with
// the escaped text appended (dst nil: only measured), how many bytes of s
// it took and how many it wrote.
func AppendJSONText(dst []byte, s string, room int) (out []byte, taken, size int) {
	measure := dst == nil
	if room < 0 {
		room = math.MaxInt
	}
	plain := 0 // start of the run of bytes written as they are
	i := 0
	for i < len(s) {
		// Skip 8 plain ASCII bytes at a time while they fit.
		for i+8 <= len(s) && size+8 <= room && plainWord(s[i:i+8]) {
			i += 8
			size += 8
		}
		if i >= len(s) {
			break
		}
		c, width, esc := s[i], 1, ""
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				if size+1 > room {
					break
				}
				size++
				i++
				continue
			}
			switch c {
			case '"':
				esc = `\"`
			case '\\':
				esc = `\\`
			case '\b':
				esc = `\b`
			case '\f':
				esc = `\f`
			case '\n':
				esc = `\n`
			case '\r':
				esc = `\r`
			case '\t':
				esc = `\t`
			default:
				esc = `\u00` + string(lowerHex[c>>4]) + string(lowerHex[c&0xf])
			}
		} else {
			var r rune
			r, width = utf8.DecodeRuneInString(s[i:])
			switch {
			case r == utf8.RuneError && width == 1:
				esc = `\ufffd`
			case r == '\u2028':
				esc = `\u2028`
			case r == '\u2029':
				esc = `\u2029`
			}
		}
		n := width
		if esc != "" {
			n = len(esc)
		}
		if size+n > room {
			break
		}
		if esc != "" {
			if !measure {
				dst = append(dst, s[plain:i]...)
				dst = append(dst, esc...)
			}
			plain = i + width
		}
		size += n
		i += width
	}
	if !measure {
		dst = append(dst, s[plain:i]...)
	}
	return dst, i, size
}

// plainWord reports whether the 8 bytes of w are all written as they are:
// ASCII, not a control character, a quote or a backslash. (A false
// "no" only sends them through the byte-by-byte path.)
func plainWord(w string) bool {
	x := uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
		uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	quote, backslash := x^(ones*'"'), x^(ones*'\\')
	special := (x - ones*0x20) | (quote-ones) & ^quote | (backslash-ones) & ^backslash | x
	return special&highs == 0
}

const lowerHex = "0123456789abcdef"
