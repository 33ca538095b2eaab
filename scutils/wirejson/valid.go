package wirejson

import "encoding/json"

// Valid reports whether data is valid JSON, exactly as json.Valid does,
// at a fraction of its cost for the documents our components read (queue
// members of a few hundred bytes: encoding/json's scanner steps a state
// machine through a function call per byte). A document the fast check
// cannot vouch for (invalid, or nested deeper than maxValidDepth) is
// judged by json.Valid itself.
func Valid[T Text](data T) bool {
	v := validator[T]{data: data}
	v.i = skipSpace(data, 0)
	if v.value(0) && skipSpace(data, v.i) == len(data) {
		return true
	}
	return json.Valid([]byte(data))
}

// maxValidDepth bounds the nesting the fast check follows.
const maxValidDepth = 64

type validator[T Text] struct {
	data T
	i    int
}

// value checks the value at v.i and moves past it.
func (v *validator[T]) value(depth int) bool {
	if v.i >= len(v.data) || depth > maxValidDepth {
		return false
	}
	switch c := v.data[v.i]; {
	case c == '{':
		return v.container('}', depth, true)
	case c == '[':
		return v.container(']', depth, false)
	case c == '"':
		return v.str()
	case c == '-' || c >= '0' && c <= '9':
		end, _ := scanNumber(v.data, v.i)
		if end == v.i {
			return false
		}
		v.i = end
		return true
	case c == 't':
		return literalAt(v.data, &v.i, "true")
	case c == 'f':
		return literalAt(v.data, &v.i, "false")
	case c == 'n':
		return literalAt(v.data, &v.i, "null")
	}
	return false
}

// container checks an object (members: keyed) or an array at v.i.
func (v *validator[T]) container(closing byte, depth int, keyed bool) bool {
	return elementsAt(v.data, &v.i, closing, func() bool {
		if keyed {
			if v.i >= len(v.data) || v.data[v.i] != '"' || !v.str() {
				return false
			}
			if v.i = skipSpace(v.data, v.i); v.i >= len(v.data) || v.data[v.i] != ':' {
				return false
			}
			v.i = skipSpace(v.data, v.i+1)
		}
		return v.value(depth + 1)
	})
}

// str checks the string at v.i: no control characters, valid escapes
// (any other bytes, invalid UTF-8 included, json.Valid accepts).
func (v *validator[T]) str() bool {
	d := v.data
	for j := v.i + 1; j < len(d); j++ {
		switch c := d[j]; {
		case c == '"':
			v.i = j + 1
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if j+1 >= len(d) {
				return false
			}
			switch d[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j++
			case 'u':
				if j+5 >= len(d) || !isHex(d[j+2]) || !isHex(d[j+3]) || !isHex(d[j+4]) || !isHex(d[j+5]) {
					return false
				}
				j += 5
			default:
				return false
			}
		}
	}
	return false
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }
