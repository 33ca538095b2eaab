package wirejson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Decode reads one JSON document as Python's json.loads reads it, as the
// original reads requests: an integer literal is a json.Number keeping
// its exact digits ("-0" reads as 0), a literal with a fraction or
// exponent a float64 (Python's float, so 1.00000000000000000001 is 1.0 and
// 1e400 is +Inf); objects are map[string]any (the last of repeated keys
// counts), lists []any. Trailing data after the document is an error.
// Unlike Python, NaN and Infinity literals are not JSON and are refused.
//
// A document that is valid JSON without escapes in its object keys (every
// request, in practice) is read by a decoder of its own; encoding/json
// reads any other, for its value or its exact error (see the package doc
// for what that saves).
func Decode(data []byte) (any, error) {
	if v, ok := decodeFast(data); ok {
		return v, nil
	}
	return decodeStd(data)
}

// decodeStd is Decode by encoding/json.
func decodeStd(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("invalid JSON: data after the JSON value")
	}
	return pythonNumbers(v), nil
}

// pythonNumbers converts number literals as json.loads would.
func pythonNumbers(v any) any {
	switch t := v.(type) {
	case json.Number:
		if !strings.ContainsAny(string(t), ".eE") {
			if t == "-0" {
				return json.Number("0")
			}
			return t
		}
		f, _ := strconv.ParseFloat(string(t), 64) // out of range: ±Inf or ±0, as Python
		return f
	case map[string]any:
		for k, x := range t {
			t[k] = pythonNumbers(x)
		}
	case []any:
		for i, x := range t {
			t[i] = pythonNumbers(x)
		}
	}
	return v
}

// objectRoom is the room a decoded request (the top-level object) is made
// with: its fields, its schema's defaults and the monitor's own fields fit
// without the map growing.
const objectRoom = 24

// maxFastDepth is the deepest nesting decodeFast reads; deeper documents
// go to encoding/json, which has its own limit.
const maxFastDepth = 200

// decodeFast is Decode for a document that is valid JSON without escapes
// in its object keys: the same values as decodeStd. It reports false for
// anything else (invalid JSON, escaped keys, excessive nesting), which
// Decode then leaves to encoding/json. It never accepts what encoding/json
// refuses.
func decodeFast(data []byte) (any, bool) {
	d := decoder{data: data}
	d.i = skipSpace(d.data, 0)
	v, ok := d.value(0)
	return v, ok && skipSpace(d.data, d.i) == len(d.data)
}

type decoder struct {
	data []byte
	i    int
}

func (d *decoder) value(depth int) (any, bool) {
	if d.i >= len(d.data) || depth > maxFastDepth {
		return nil, false
	}
	switch c := d.data[d.i]; {
	case c == '{':
		return d.object(depth)
	case c == '[':
		return d.array(depth)
	case c == '"':
		return d.string()
	case c == '-' || c >= '0' && c <= '9':
		return d.number()
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	}
	return nil, false
}

func (d *decoder) literal(word string) bool { return literalAt(d.data, &d.i, word) }

// literalAt reports whether word is at text[*i], and moves *i past it.
func literalAt[T Text](text T, i *int, word string) bool {
	if len(text)-*i < len(word) || string(text[*i:*i+len(word)]) != word {
		return false
	}
	*i += len(word)
	return true
}

func (d *decoder) object(depth int) (any, bool) {
	room := 0
	if depth == 0 {
		room = objectRoom
	}
	m := make(map[string]any, room)
	ok := d.elements('}', func() bool {
		if d.i >= len(d.data) || d.data[d.i] != '"' {
			return false
		}
		key, ok := d.key()
		if !ok {
			return false
		}
		if d.i = skipSpace(d.data, d.i); d.i >= len(d.data) || d.data[d.i] != ':' {
			return false
		}
		d.i = skipSpace(d.data, d.i+1)
		v, ok := d.value(depth + 1)
		m[key] = v // the last of repeated keys, as encoding/json
		return ok
	})
	return m, ok
}

func (d *decoder) array(depth int) (any, bool) {
	a := []any{}
	ok := d.elements(']', func() bool {
		v, ok := d.value(depth + 1)
		a = append(a, v)
		return ok
	})
	return a, ok
}

// elements reads the elements of the object or array at d.i, each by
// element, up to the closing byte.
func (d *decoder) elements(closing byte, element func() bool) bool {
	return elementsAt(d.data, &d.i, closing, element)
}

// elementsAt reads the elements of the object or array at text[*i], each
// by element (which reads from *i on), up to the closing byte, and moves
// *i past it.
func elementsAt[T Text](text T, i *int, closing byte, element func() bool) bool {
	*i = skipSpace(text, *i+1) // past '{' or '['
	if *i < len(text) && text[*i] == closing {
		*i++
		return true
	}
	for {
		if !element() {
			return false
		}
		if *i = skipSpace(text, *i); *i >= len(text) {
			return false
		}
		switch text[*i] {
		case ',':
			*i = skipSpace(text, *i+1)
		case closing:
			*i++
			return true
		default:
			return false
		}
	}
}

// commonKeys are the field names of the built-in requests, shared by
// every request that has them instead of allocated each time.
var commonKeys = func() map[string]string {
	m := map[string]string{}
	for _, k := range []string{
		"url", "appid", "crawlid", "spiderid", "priority", "maxdepth", "domain_max_pages", "allowed_domains",
		"allow_regex", "deny_regex", "deny_extensions", "expires", "useragent", "cookie", "attrs",
		"uuid", "action", "stats", "domain", "hits", "window", "scale",
	} {
		m[k] = k
	}
	return m
}()

// key reads an object's key: a string without escapes.
func (d *decoder) key() (string, bool) {
	start := d.i + 1
	for j := start; j < len(d.data) && j-start <= 16; j++ {
		if d.data[j] == '"' {
			if k, ok := commonKeys[string(d.data[start:j])]; ok {
				d.i = j + 1
				return k, true
			}
			break
		}
	}
	return d.plainString()
}

// plainString reads a string without escapes, of valid UTF-8 and no
// control characters (what a key must be here).
func (d *decoder) plainString() (string, bool) {
	start := d.i + 1
	for j := start; j < len(d.data); j++ {
		switch c := d.data[j]; {
		case c == '"':
			s := d.data[start:j]
			if !utf8.Valid(s) {
				return "", false
			}
			d.i = j + 1
			return string(s), true
		case c == '\\' || c < 0x20:
			return "", false
		}
	}
	return "", false
}

// string reads a string value; one with escapes is unquoted by
// encoding/json, so that it reads exactly as there.
func (d *decoder) string() (any, bool) {
	if s, ok := d.plainString(); ok {
		return s, true
	}
	end, ok := skipString(d.data, d.i)
	if !ok {
		return nil, false
	}
	var s string
	if json.Unmarshal(d.data[d.i:end], &s) != nil {
		return nil, false
	}
	d.i = end
	return s, true
}

// number reads a number as Decode does: an integer literal as a
// json.Number ("-0" as "0"), one with a fraction or exponent as a float64.
func (d *decoder) number() (any, bool) {
	start := d.i
	end, integer := scanNumber(d.data, start)
	if end == start {
		return nil, false
	}
	d.i = end
	lit := string(d.data[start:end])
	if integer {
		if lit == "-0" {
			lit = "0"
		}
		return json.Number(lit), true
	}
	f, _ := strconv.ParseFloat(lit, 64) // out of range: ±Inf or ±0, as Python
	return f, true
}
