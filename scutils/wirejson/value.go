package wirejson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/pyrepr"
)

// maxDepth is the nesting appendValue writes before it leaves a value to
// encoding/json: more than any document Decode reads holds (encoding/json
// reads at most 10000 levels), so only a value that holds itself gets
// there, and encoding/json refuses it.
const maxDepth = 10000

// Append appends v to dst as compact JSON written with opts. What decoded
// JSON holds (nil, bool, string, json.Number, float64, []any and
// map[string]any, keys sorted), and int, int64 and []string, it writes
// itself, strings escaped by AppendString (and a nil list or map as [] or
// {}, where encoding/json writes null: the bytes our writers always
// wrote); any
// other value goes to
// encoding/json (with PythonFloats, after the floats of its maps and lists
// are turned into Python's repr), whose strings follow EscapeHTML but
// not HexBF. A value encoding/json refuses (a non-finite float, a channel,
// a cycle, a failing or panicking MarshalJSON) is an error, dst unchanged.
func Append(dst []byte, v any, opts Options) ([]byte, error) {
	if out, ok := appendValue(dst, v, opts, 0); ok {
		return out, nil
	}
	return appendEncoded(dst, v, opts)
}

// appendValue writes the values Append writes itself; ok is false, with
// dst as it was, for any other (a json.Number that is not a number, a
// float without PythonFloats or not finite, nesting past maxDepth).
func appendValue(dst []byte, v any, opts Options, depth int) (_ []byte, ok bool) {
	if depth > maxDepth {
		return dst, false
	}
	start := len(dst)
	switch t := v.(type) {
	case nil:
		return append(dst, "null"...), true
	case bool:
		return strconv.AppendBool(dst, t), true
	case string:
		return AppendString(dst, t, opts), true
	case json.Number:
		if !IsNumber(string(t)) {
			return dst, false
		}
		return append(dst, t...), true
	case float64:
		if opts&PythonFloats == 0 || math.IsInf(t, 0) || math.IsNaN(t) {
			return dst, false
		}
		return append(dst, pyrepr.Float(t)...), true
	case int:
		return strconv.AppendInt(dst, int64(t), 10), true
	case int64:
		return strconv.AppendInt(dst, t, 10), true
	case []any:
		dst, ok = appendList(dst, t, opts, depth)
	case []string:
		dst, ok = appendList(dst, t, opts, depth)
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		dst, ok = append(dst, '{'), true
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(AppendString(dst, k, opts), ':')
			if dst, ok = appendValue(dst, t[k], opts, depth+1); !ok {
				break
			}
		}
		dst = append(dst, '}')
	}
	if !ok {
		return dst[:start], false
	}
	return dst, true
}

// appendList writes a list (a nil one as []).
func appendList[T any](dst []byte, xs []T, opts Options, depth int) (_ []byte, ok bool) {
	dst = append(dst, '[')
	for i, x := range xs {
		if i > 0 {
			dst = append(dst, ',')
		}
		if dst, ok = appendValue(dst, x, opts, depth+1); !ok {
			return dst, false
		}
	}
	return append(dst, ']'), true
}

// appendEncoded is Append by encoding/json.
func appendEncoded(dst []byte, v any, opts Options) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = dst, fmt.Errorf("marshal %T: panic: %v", v, r)
		}
	}()
	if opts&PythonFloats != 0 {
		v = pythonFloats(v, 0)
	}
	buf := bytes.NewBuffer(dst)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(opts&EscapeHTML != 0)
	if err := enc.Encode(v); err != nil {
		return dst, err
	}
	out = buf.Bytes()
	return out[:len(out)-1], nil // without Encode's newline
}

// pythonFloats returns a copy of v with its finite floats as json.Number
// in Python's repr (infinities stay floats, for encoding/json to refuse),
// down to maxDepth (below, a value that holds itself is left for
// encoding/json to refuse).
func pythonFloats(v any, depth int) any {
	if depth > maxDepth {
		return v
	}
	switch t := v.(type) {
	case float64:
		if math.IsInf(t, 0) || math.IsNaN(t) {
			return t
		}
		return json.Number(pyrepr.Float(t))
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = pythonFloats(x, depth+1)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = pythonFloats(x, depth+1)
		}
		return out
	}
	return v
}
