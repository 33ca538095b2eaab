package plugin

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/pyrepr"
)

// MarshalPython encodes v as JSON the way the original writes it, so stored
// values look the same: floats as Python's repr does (1.0, 0.9, 1e+16,
// 1.5e-05), everything else as encoding/json. Infinite and NaN floats are an
// error, as they are not JSON.
func MarshalPython(v any) ([]byte, error) {
	b, ok := appendJSON(make([]byte, 0, 512), v)
	if ok {
		return b, nil
	}
	// Types DecodeJSON never produces: let encoding/json handle them.
	if hasFloat(v) {
		v = pythonFloats(v)
	}
	return json.Marshal(v)
}

// AppendPython appends v to b as MarshalPython writes it.
func AppendPython(b []byte, v any) ([]byte, error) {
	if out, ok := appendJSON(b, v); ok {
		return out, nil
	}
	j, err := MarshalPython(v)
	if err != nil {
		return b, err
	}
	return append(b, j...), nil
}

// appendJSON writes the types DecodeJSON produces (with keys sorted, as
// encoding/json) without reflection; ok is false for any other type or a
// non-finite float.
func appendJSON(b []byte, v any) ([]byte, bool) {
	switch t := v.(type) {
	case nil:
		return append(b, "null"...), true
	case bool:
		return strconv.AppendBool(b, t), true
	case string:
		return appendJSONString(b, t), true
	case json.Number:
		if t == "" {
			return b, false
		}
		return append(b, t...), true
	case float64:
		if math.IsInf(t, 0) || math.IsNaN(t) {
			return b, false
		}
		return append(b, pyrepr.Float(t)...), true
	case []any:
		b = append(b, '[')
		for i, x := range t {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = appendJSON(b, x); !ok {
				return b, false
			}
		}
		return append(b, ']'), true
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, k)
			b = append(b, ':')
			var ok bool
			if b, ok = appendJSON(b, t[k]); !ok {
				return b, false
			}
		}
		return append(b, '}'), true
	}
	return b, false
}

// appendJSONString writes s as a JSON string, escaping as encoding/json
// does (quotes, backslashes, control characters, <, >, &, U+2028/2029) and
// writing invalid UTF-8 as U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

func hasFloat(v any) bool {
	switch t := v.(type) {
	case float64:
		return true
	case map[string]any:
		for _, x := range t {
			if hasFloat(x) {
				return true
			}
		}
	case []any:
		for _, x := range t {
			if hasFloat(x) {
				return true
			}
		}
	}
	return false
}

// pythonFloats returns a copy of v with finite floats as json.Number in
// Python's repr (infinities stay floats, so encoding fails on them).
func pythonFloats(v any) any {
	switch t := v.(type) {
	case float64:
		if math.IsInf(t, 0) || math.IsNaN(t) {
			return t
		}
		return json.Number(pyrepr.Float(t))
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = pythonFloats(x)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = pythonFloats(x)
		}
		return out
	}
	return v
}
