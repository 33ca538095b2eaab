package domainqueues

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
)

// Parse reads the identity fields of one queue member. It is the hot path
// of info, stop and expire over large queues, so it scans the JSON text
// for the few fields it needs instead of decoding the whole request (about
// ten times faster than crawlrequest.Decode). Members that are not a single
// JSON object, or lack appid or crawlid strings, are rejected: exactly the
// members that crawlrequest.Decode says name no crawl (DecodeError.Named),
// which the tests check on the shared fixtures and by fuzzing.
func Parse(member string) (Entry, bool) {
	var f scanned
	end, ok := scanObject(member, skipSpace(member, 0), &f, true)
	if !ok || skipSpace(member, end) != len(member) {
		return Entry{}, false
	}
	if f.meta != nil {
		f = *f.meta
	}
	if !f.hasAppID || !f.hasCrawlID {
		return Entry{}, false
	}
	return Entry{Member: member, AppID: f.appID, CrawlID: f.crawlID, Priority: f.priority, Expires: f.expires}, true
}

type scanned struct {
	appID, crawlID       string
	hasAppID, hasCrawlID bool
	priority, expires    json.Number
	meta                 *scanned
}

// scanObject reads the object starting at s[i] ('{'), recording the fields
// of interest in f (and, at the top level, a "meta" object), and returns
// the index after it.
func scanObject(s string, i int, f *scanned, top bool) (int, bool) {
	if i >= len(s) || s[i] != '{' {
		return 0, false
	}
	i = skipSpace(s, i+1)
	if i < len(s) && s[i] == '}' {
		return i + 1, true
	}
	for {
		keyStart := i
		end, ok := skipString(s, i)
		if !ok {
			return 0, false
		}
		key, ok := unquote(s[keyStart:end])
		if !ok {
			return 0, false
		}
		i = skipSpace(s, end)
		if i >= len(s) || s[i] != ':' {
			return 0, false
		}
		i = skipSpace(s, i+1)
		valStart := i
		switch {
		case top && key == crawlrequest.FieldMeta && i < len(s) && s[i] == '{':
			f.meta = &scanned{}
			end, ok = scanObject(s, i, f.meta, false)
		default:
			if top && key == crawlrequest.FieldMeta {
				f.meta = nil // of repeated keys the last counts
			}
			end, ok = skipValue(s, i)
		}
		if !ok {
			return 0, false
		}
		raw := s[valStart:end]
		switch key {
		case crawlrequest.FieldAppID:
			f.appID, f.hasAppID = unquote(raw)
		case crawlrequest.FieldCrawlID:
			f.crawlID, f.hasCrawlID = unquote(raw)
		case crawlrequest.FieldPriority:
			f.priority = number(raw)
		case crawlrequest.FieldExpires:
			f.expires = number(raw)
		}
		i = skipSpace(s, end)
		if i >= len(s) {
			return 0, false
		}
		switch s[i] {
		case ',':
			i = skipSpace(s, i+1)
		case '}':
			return i + 1, true
		default:
			return 0, false
		}
	}
}

// skipValue returns the index after the JSON value at s[i].
func skipValue(s string, i int) (int, bool) {
	if i >= len(s) {
		return 0, false
	}
	switch s[i] {
	case '"':
		return skipString(s, i)
	case '{', '[':
		depth := 0
		for i < len(s) {
			switch s[i] {
			case '"':
				end, ok := skipString(s, i)
				if !ok {
					return 0, false
				}
				i = end
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, true
				}
			}
			i++
		}
		return 0, false
	default: // number, true, false, null
		j := i
		for j < len(s) && !delimiter(s[j]) {
			j++
		}
		if j == i || !literal(s[i:j]) {
			return 0, false
		}
		return j, true
	}
}

// skipString returns the index after the string starting at s[i] ('"').
func skipString(s string, i int) (int, bool) {
	if i >= len(s) || s[i] != '"' {
		return 0, false
	}
	for j := i + 1; ; {
		k := strings.IndexByte(s[j:], '"')
		if k < 0 {
			return 0, false
		}
		j += k
		// The quote ends the string unless an odd run of backslashes escapes it.
		n := 0
		for b := j - 1; b > i && s[b] == '\\'; b-- {
			n++
		}
		if n%2 == 0 {
			return j + 1, true
		}
		j++
	}
}

// unquote decodes a JSON string literal as encoding/json does (invalid
// UTF-8 as U+FFFD); ok is false for other values.
func unquote(raw string) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	if body := raw[1 : len(raw)-1]; !escaped(body) && utf8.ValidString(body) {
		return body, true
	}
	var out string
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		return "", false
	}
	return out, true
}

// number keeps a numeric literal; anything else (null, a string) is "".
func number(raw string) json.Number {
	if raw == "" || !(raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') {
		return ""
	}
	return json.Number(raw)
}

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// literal reports whether v is null, true, false or a JSON number.
func literal(v string) bool {
	switch v {
	case "null", "true", "false":
		return true
	}
	i := 0
	if v[i] == '-' {
		i++
	}
	digits := func() int {
		start := i
		for i < len(v) && v[i] >= '0' && v[i] <= '9' {
			i++
		}
		return i - start
	}
	if n := digits(); n == 0 || n > 1 && v[i-n] == '0' {
		return false
	}
	if i < len(v) && v[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(v) && (v[i] == 'e' || v[i] == 'E') {
		i++
		if i < len(v) && (v[i] == '+' || v[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(v)
}

func delimiter(c byte) bool {
	return c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\r' || c == '\n'
}

// escaped reports whether a string literal's body has escapes (or stray quotes).
func escaped(body string) bool {
	for i := 0; i < len(body); i++ {
		if body[i] == '\\' || body[i] == '"' {
			return true
		}
	}
	return false
}
