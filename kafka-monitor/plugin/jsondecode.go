package plugin

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// objectRoom is the room a decoded request (the top-level object) is made
// with: its fields, its schema's defaults and the monitor's own fields fit
// without the map growing.
const objectRoom = 24

// maxFastDepth is the deepest nesting decodeFast reads; deeper documents
// go to encoding/json, which has its own limit.
const maxFastDepth = 200

// decodeFast is DecodeJSON for a document that is valid JSON without
// escapes in its object keys: the same values, several times faster than
// encoding/json's decoder. It reports false for anything else (invalid
// JSON, escaped keys, excessive nesting), which DecodeJSON then leaves to
// encoding/json for its value or its exact error. It never accepts what
// encoding/json refuses.
func decodeFast(data []byte) (any, bool) {
	d := fastDecoder{data: data}
	d.space()
	v, ok := d.value(0)
	if !ok {
		return nil, false
	}
	d.space()
	return v, d.i == len(d.data)
}

type fastDecoder struct {
	data []byte
	i    int
}

func (d *fastDecoder) space() {
	for d.i < len(d.data) {
		switch d.data[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *fastDecoder) value(depth int) (any, bool) {
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

func (d *fastDecoder) literal(word string) bool {
	if len(d.data)-d.i < len(word) || string(d.data[d.i:d.i+len(word)]) != word {
		return false
	}
	d.i += len(word)
	return true
}

func (d *fastDecoder) object(depth int) (any, bool) {
	d.i++ // '{'
	room := 0
	if depth == 0 {
		room = objectRoom
	}
	m := make(map[string]any, room)
	d.space()
	if d.i < len(d.data) && d.data[d.i] == '}' {
		d.i++
		return m, true
	}
	for {
		if d.i >= len(d.data) || d.data[d.i] != '"' {
			return nil, false
		}
		key, ok := d.key()
		if !ok {
			return nil, false
		}
		d.space()
		if d.i >= len(d.data) || d.data[d.i] != ':' {
			return nil, false
		}
		d.i++
		d.space()
		v, ok := d.value(depth + 1)
		if !ok {
			return nil, false
		}
		m[key] = v // the last of repeated keys, as encoding/json
		d.space()
		if d.i >= len(d.data) {
			return nil, false
		}
		switch d.data[d.i] {
		case ',':
			d.i++
			d.space()
		case '}':
			d.i++
			return m, true
		default:
			return nil, false
		}
	}
}

func (d *fastDecoder) array(depth int) (any, bool) {
	d.i++ // '['
	a := []any{}
	d.space()
	if d.i < len(d.data) && d.data[d.i] == ']' {
		d.i++
		return a, true
	}
	for {
		v, ok := d.value(depth + 1)
		if !ok {
			return nil, false
		}
		a = append(a, v)
		d.space()
		if d.i >= len(d.data) {
			return nil, false
		}
		switch d.data[d.i] {
		case ',':
			d.i++
			d.space()
		case ']':
			d.i++
			return a, true
		default:
			return nil, false
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
func (d *fastDecoder) key() (string, bool) {
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
func (d *fastDecoder) plainString() (string, bool) {
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
func (d *fastDecoder) string() (any, bool) {
	if s, ok := d.plainString(); ok {
		return s, true
	}
	start := d.i
	j := start + 1
	for ; j < len(d.data) && d.data[j] != '"'; j++ {
		if d.data[j] == '\\' {
			j++
		}
	}
	if j >= len(d.data) {
		return nil, false
	}
	var s string
	if json.Unmarshal(d.data[start:j+1], &s) != nil {
		return nil, false
	}
	d.i = j + 1
	return s, true
}

// number reads a number as DecodeJSON does (see pythonNumbers): an
// integer literal as a json.Number ("-0" as "0"), one with a fraction or
// exponent as a float64.
func (d *fastDecoder) number() (any, bool) {
	start := d.i
	if d.data[d.i] == '-' {
		d.i++
	}
	switch n := d.digits(); {
	case n == 0, n > 1 && d.data[d.i-n] == '0':
		return nil, false
	}
	integer := true
	if d.i < len(d.data) && d.data[d.i] == '.' {
		d.i++
		integer = false
		if d.digits() == 0 {
			return nil, false
		}
	}
	if d.i < len(d.data) && (d.data[d.i] == 'e' || d.data[d.i] == 'E') {
		d.i++
		integer = false
		if d.i < len(d.data) && (d.data[d.i] == '+' || d.data[d.i] == '-') {
			d.i++
		}
		if d.digits() == 0 {
			return nil, false
		}
	}
	lit := string(d.data[start:d.i])
	if integer {
		if lit == "-0" {
			lit = "0"
		}
		return json.Number(lit), true
	}
	f, _ := strconv.ParseFloat(lit, 64) // out of range: ±Inf or ±0, as Python
	return f, true
}

func (d *fastDecoder) digits() int {
	start := d.i
	for d.i < len(d.data) && d.data[d.i] >= '0' && d.data[d.i] <= '9' {
		d.i++
	}
	return d.i - start
}
