package plugin

import (
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"
)

// quickSchema is a schema written with the few Draft 4 keywords request
// schemas use (type, properties, required, additionalProperties false,
// minLength, maxLength, integral minimum and maximum, string enums,
// uniqueItems and items), compiled so that the usual valid request is
// recognised without the validator. accepts answers "valid" only when it
// is sure; anything else (an invalid request, a value it does not judge)
// goes to the validator, which gives the verdict and its reason. So a
// request gets the same verdict either way, faster when it is valid.
type quickSchema struct {
	types          typeSet // 0: any type
	props          map[string]*quickSchema
	required       []string
	closed         bool // additionalProperties false
	minLen, maxLen int  // -1: none
	min, max       *int64
	enum           []string // nil: none
	unique         bool
	items          *quickSchema
}

// typeSet is a set of JSON Schema types.
type typeSet uint8

const (
	typeObject typeSet = 1 << iota
	typeArray
	typeString
	typeInteger
	typeNumber
	typeBoolean
	typeNull
)

var typeNames = map[string]typeSet{
	"object": typeObject, "array": typeArray, "string": typeString, "integer": typeInteger,
	"number": typeNumber, "boolean": typeBoolean, "null": typeNull,
}

// compileQuick compiles a schema document (as wirejson.Decode reads it); ok is
// false when it uses a keyword or a form quickSchema does not know.
func compileQuick(doc map[string]any) (q *quickSchema, ok bool) { return compileQuickSub(doc, true) }

// compileQuickSub compiles a schema (root) or one of its subschemas.
func compileQuickSub(doc map[string]any, root bool) (q *quickSchema, ok bool) {
	q = &quickSchema{minLen: -1, maxLen: -1}
	for k, v := range doc {
		switch k {
		case "title", "description", "default":
		case "$schema":
			if !root || v != "http://json-schema.org/draft-04/schema#" {
				return nil, false
			}
		case "type":
			if q.types, ok = compileTypes(v); !ok {
				return nil, false
			}
		case "properties":
			props, isObject := v.(map[string]any)
			if !isObject {
				return nil, false
			}
			q.props = make(map[string]*quickSchema, len(props))
			for name, sub := range props {
				subDoc, isObject := sub.(map[string]any)
				if !isObject {
					return nil, false
				}
				if q.props[name], ok = compileQuickSub(subDoc, false); !ok {
					return nil, false
				}
			}
		case "required":
			if q.required, ok = stringList(v); !ok {
				return nil, false
			}
		case "additionalProperties":
			allowed, isBool := v.(bool)
			if !isBool {
				return nil, false
			}
			q.closed = !allowed
		case "minLength", "maxLength":
			n, isInt := integral(v)
			if !isInt || n < 0 || n > math.MaxInt32 {
				return nil, false
			}
			if k == "minLength" {
				q.minLen = int(n)
			} else {
				q.maxLen = int(n)
			}
		case "minimum", "maximum":
			n, isInt := integral(v)
			if !isInt {
				return nil, false
			}
			if k == "minimum" {
				q.min = &n
			} else {
				q.max = &n
			}
		case "enum":
			if q.enum, ok = stringList(v); !ok {
				return nil, false
			}
		case "uniqueItems":
			if q.unique, ok = v.(bool); !ok {
				return nil, false
			}
		case "items":
			sub, isObject := v.(map[string]any)
			if !isObject {
				return nil, false
			}
			if q.items, ok = compileQuickSub(sub, false); !ok {
				return nil, false
			}
		default:
			return nil, false
		}
	}
	return q, true
}

// stringList reads a schema's list of strings (never nil when ok).
func stringList(v any) ([]string, bool) {
	values, isList := v.([]any)
	if !isList {
		return nil, false
	}
	out := make([]string, 0, len(values))
	for _, x := range values {
		s, isString := x.(string)
		if !isString {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

func compileTypes(v any) (typeSet, bool) {
	names := []any{v}
	if list, isList := v.([]any); isList {
		names = list
	}
	var ts typeSet
	for _, n := range names {
		name, _ := n.(string)
		t, known := typeNames[name]
		if !known {
			return 0, false
		}
		ts |= t
	}
	return ts, ts != 0
}

// integral reads a number of a schema that is a whole number within 2^53,
// where float64 and int64 agree.
func integral(v any) (int64, bool) {
	var f float64
	switch n := v.(type) {
	case json.Number:
		i, err := strconv.ParseInt(string(n), 10, 64)
		if err != nil || i > 1<<53 || i < -(1<<53) {
			return 0, false
		}
		return i, true
	case float64:
		f = n
	default:
		return 0, false
	}
	if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int64(f), true
}

// accepts reports whether v (as wirejson.Decode returns it) is surely valid.
func (q *quickSchema) accepts(v any) bool {
	switch t := v.(type) {
	case map[string]any:
		return q.is(typeObject) && q.acceptsObject(t)
	case []any:
		return q.is(typeArray) && q.acceptsArray(t)
	case string:
		return q.is(typeString) && q.acceptsString(t)
	case json.Number:
		// An integer literal (wirejson.Decode makes no other json.Number).
		i, err := strconv.ParseInt(string(t), 10, 64)
		return err == nil && (q.is(typeInteger) || q.is(typeNumber)) && q.inRange(i)
	case float64:
		// Not an integer to the original; and 1e400 is not judged here.
		return q.is(typeNumber) && !math.IsInf(t, 0) && !math.IsNaN(t) && q.inRangeFloat(t)
	case bool:
		return q.is(typeBoolean) && q.enum == nil
	case nil:
		return q.is(typeNull) && q.enum == nil
	}
	return false
}

func (q *quickSchema) is(t typeSet) bool { return q.types == 0 || q.types&t != 0 }

func (q *quickSchema) acceptsObject(obj map[string]any) bool {
	if q.enum != nil {
		return false
	}
	for _, name := range q.required {
		if _, ok := obj[name]; !ok {
			return false
		}
	}
	for k, x := range obj {
		sub, known := q.props[k]
		switch {
		case known:
			if !sub.accepts(x) {
				return false
			}
		case q.closed:
			return false
		}
	}
	return true
}

func (q *quickSchema) acceptsArray(a []any) bool {
	if q.enum != nil {
		return false
	}
	if q.items != nil {
		for _, x := range a {
			if !q.items.accepts(x) {
				return false
			}
		}
	}
	if q.unique && len(a) > 1 {
		seen := make(map[string]bool, len(a))
		for _, x := range a {
			s, isString := x.(string)
			if !isString || seen[s] {
				return false
			}
			seen[s] = true
		}
	}
	return true
}

func (q *quickSchema) acceptsString(s string) bool {
	if q.minLen >= 0 || q.maxLen >= 0 {
		n := utf8.RuneCountInString(s)
		if n < q.minLen || q.maxLen >= 0 && n > q.maxLen {
			return false
		}
	}
	if q.enum == nil {
		return true
	}
	for _, e := range q.enum {
		if s == e {
			return true
		}
	}
	return false
}

// inRange checks an integer against minimum and maximum.
func (q *quickSchema) inRange(i int64) bool {
	return q.enum == nil && (q.min == nil || i >= *q.min) && (q.max == nil || i <= *q.max)
}

// inRangeFloat checks a float against minimum and maximum, which are whole
// numbers float64 holds exactly, so the comparison is exact.
func (q *quickSchema) inRangeFloat(f float64) bool {
	return q.enum == nil && (q.min == nil || f >= float64(*q.min)) && (q.max == nil || f <= float64(*q.max))
}
