package wirejson

import (
	"encoding/json"
	"unicode/utf8"
)

// Text is JSON text, as a string or as bytes.
type Text interface{ ~string | ~[]byte }

// EachMember calls fn, in order, with each member of the JSON object text
// holds (white space around it allowed): its key, unescaped as
// encoding/json unescapes it, and its value's JSON text, sharing text's
// memory where the key has no escapes. It reports whether text is one
// object as far as splitting it can tell: strings closed, brackets
// balanced, literals true, false, null or numbers. It does not check
// inside the values (what json.Valid does, at several times the cost), so
// for text that is valid JSON fn sees exactly what json.Unmarshal into a
// map of json.RawMessage keeps (the last of repeated keys last), and for
// text that is not, it may see members all the same.
func EachMember[T Text](text T, fn func(key, value T)) bool {
	end, ok := eachMember(text, skipSpace(text, 0), fn)
	return ok && skipSpace(text, end) == len(text)
}

// eachMember splits the object at text[i] and returns the index after it.
func eachMember[T Text](text T, i int, fn func(key, value T)) (int, bool) {
	if i >= len(text) || text[i] != '{' {
		return 0, false
	}
	i = skipSpace(text, i+1)
	if i < len(text) && text[i] == '}' {
		return i + 1, true
	}
	for {
		end, ok := skipString(text, i)
		if !ok {
			return 0, false
		}
		key, ok := unquoteKey(text[i:end])
		if !ok {
			return 0, false
		}
		if i = skipSpace(text, end); i >= len(text) || text[i] != ':' {
			return 0, false
		}
		i = skipSpace(text, i+1)
		if end, ok = skipValue(text, i); !ok {
			return 0, false
		}
		fn(key, text[i:end])
		if i = skipSpace(text, end); i >= len(text) {
			return 0, false
		}
		switch text[i] {
		case ',':
			i = skipSpace(text, i+1)
		case '}':
			return i + 1, true
		default:
			return 0, false
		}
	}
}

// skipValue returns the index after the JSON value at text[i].
func skipValue[T Text](text T, i int) (int, bool) {
	if i >= len(text) {
		return 0, false
	}
	switch text[i] {
	case '"':
		return skipString(text, i)
	case '{', '[':
		depth := 0
		for i < len(text) {
			switch text[i] {
			case '"':
				end, ok := skipString(text, i)
				if !ok {
					return 0, false
				}
				i = end
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1, true
				}
			}
			i++
		}
		return 0, false
	}
	j := i
	for j < len(text) && !delimiter(text[j]) {
		j++
	}
	if w := text[i:j]; string(w) == "true" || string(w) == "false" || string(w) == "null" {
		return j, true
	}
	if end, _ := scanNumber(text, i); end != j || j == i {
		return 0, false
	}
	return j, true
}

func delimiter(c byte) bool {
	return c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\r' || c == '\n'
}

// skipString returns the index after the string starting at text[i] ('"').
func skipString[T Text](text T, i int) (int, bool) {
	if i >= len(text) || text[i] != '"' {
		return 0, false
	}
	for j := i + 1; j < len(text); j++ {
		switch text[j] {
		case '\\':
			j++
		case '"':
			return j + 1, true
		}
	}
	return 0, false
}

func skipSpace[T Text](text T, i int) int {
	for i < len(text) && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r') {
		i++
	}
	return i
}

// scanNumber reads the longest JSON number at text[i] (end == i: none) and
// whether it is an integer (no fraction, no exponent).
func scanNumber[T Text](text T, i int) (end int, integer bool) {
	start := i
	digits := func() int {
		from := i
		for i < len(text) && text[i] >= '0' && text[i] <= '9' {
			i++
		}
		return i - from
	}
	if i < len(text) && text[i] == '-' {
		i++
	}
	switch n := digits(); {
	case n == 0, n > 1 && text[i-n] == '0':
		return start, false
	}
	integer = true
	if i < len(text) && text[i] == '.' {
		i++
		integer = false
		if digits() == 0 {
			return start, false
		}
	}
	if i < len(text) && (text[i] == 'e' || text[i] == 'E') {
		i++
		integer = false
		if i < len(text) && (text[i] == '+' || text[i] == '-') {
			i++
		}
		if digits() == 0 {
			return start, false
		}
	}
	return i, integer
}

// IsNumber reports whether s is one JSON number:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func IsNumber(s string) bool {
	end, _ := scanNumber(s, 0)
	return end == len(s) && end > 0
}

// Unquote reads a JSON string literal as encoding/json does (escapes
// decoded, invalid UTF-8 as U+FFFD); ok is false for any other text. The
// usual literal, without escapes, costs only its copy (none for a string).
func Unquote[T Text](lit T) (string, bool) {
	if n := len(lit); n >= 2 && lit[0] == '"' && lit[n-1] == '"' && plain(lit[1:n-1]) {
		return string(lit[1 : n-1]), true
	}
	return unquoteEscaped([]byte(lit))
}

// Strings reads a JSON array of strings as json.Unmarshal into a
// []string does (escapes decoded, invalid UTF-8 as U+FFFD, [] an empty
// list, not nil), white space around it allowed; ok is false for any
// other text, a null element among them (json.Unmarshal reads it as ""),
// for which the caller asks encoding/json. Strings without escapes of a
// string's text share its memory: the list is the one allocation, where
// json.Unmarshal made five or more.
func Strings[T Text](text T) (list []string, ok bool) {
	i := skipSpace(text, 0)
	if i >= len(text) || text[i] != '[' {
		return nil, false
	}
	if i = skipSpace(text, i+1); i < len(text) && text[i] == ']' {
		return []string{}, skipSpace(text, i+1) == len(text)
	}
	list = make([]string, 0, max(1, bytesCount(text[i:], ',')+1))
	for {
		end, ok := skipString(text, i)
		if !ok || hasControl(text[i:end]) {
			return nil, false
		}
		s, ok := Unquote(text[i:end])
		if !ok {
			return nil, false
		}
		list = append(list, s)
		if i = skipSpace(text, end); i >= len(text) {
			return nil, false
		}
		switch text[i] {
		case ',':
			i = skipSpace(text, i+1)
		case ']':
			if skipSpace(text, i+1) != len(text) {
				return nil, false
			}
			return list, true
		default:
			return nil, false
		}
	}
}

// bytesCount is how many times c occurs in text: a bound for a list's
// elements, so that it is allocated once.
func bytesCount[T Text](text T, c byte) int {
	n := 0
	for i := 0; i < len(text); i++ {
		if text[i] == c {
			n++
		}
	}
	return n
}

// hasControl reports a control character in a string literal's text,
// which JSON does not allow there (Unquote's plain form does not check).
func hasControl[T Text](lit T) bool {
	for i := 0; i < len(lit); i++ {
		if lit[i] < ' ' {
			return true
		}
	}
	return false
}

// unquoteEscaped is Unquote by encoding/json (apart, so that the usual
// literal does not pay for the string it decodes into).
func unquoteEscaped(lit []byte) (string, bool) {
	var s string
	if len(lit) == 0 || lit[0] != '"' || json.Unmarshal(lit, &s) != nil {
		return "", false
	}
	return s, true
}

// unquoteKey is Unquote for a key, sharing the literal's memory when it
// has no escapes.
func unquoteKey[T Text](lit T) (T, bool) {
	if body := lit[1 : len(lit)-1]; plain(body) {
		return body, true
	}
	s, ok := Unquote(lit)
	return T(s), ok
}

// plain reports whether a string literal's body is its text: no escapes,
// no quotes, valid UTF-8.
func plain[T Text](body T) bool {
	for i := 0; i < len(body); i++ {
		if c := body[i]; c == '\\' || c == '"' || c >= utf8.RuneSelf {
			return !hasEscape(body[i:]) && validUTF8(body)
		}
	}
	return true
}

func validUTF8[T Text](t T) bool {
	switch v := any(t).(type) {
	case string:
		return utf8.ValidString(v)
	case []byte:
		return utf8.Valid(v)
	}
	return utf8.ValidString(string(t))
}

func hasEscape[T Text](body T) bool {
	for i := 0; i < len(body); i++ {
		if body[i] == '\\' || body[i] == '"' {
			return true
		}
	}
	return false
}
