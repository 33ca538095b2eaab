package logfactory

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/pyrepr"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/wirejson"
)

const (
	// textTimeLayout is Python logging's asctime: local time, milliseconds
	// after a comma.
	textTimeLayout = "2006-01-02 15:04:05,000"
	// jsonTimeLayout is the original's datetime.utcnow().strftime(
	// '%Y-%m-%dT%H:%M:%S.%fZ'): UTC with microseconds.
	jsonTimeLayout = "2006-01-02T15:04:05.000000Z"

	// clashPrefix is put before an extra field whose key is one of the
	// fields every line carries, as logrus does for its own clashes.
	clashPrefix = "fields."

	// maxDepth bounds how deep a value is walked when it has to be rendered
	// by reflection, so self-referencing values cannot recurse forever.
	maxDepth = 32
)

// isReserved reports whether k is one of the fields every JSON line
// carries.
func isReserved(k string) bool {
	switch k {
	case "message", "logger", "timestamp", "level":
		return true
	}
	return false
}

// line is one log line to format: the extras as the caller gave them.
type line struct {
	time  time.Time
	level Level
	name  string
	msg   string
	extra Extra
	typed []Field // LogFields' fields, instead of extra
}

// field is one extra as written: its key (renamed when it clashes with a
// field every line carries) and its value.
type field struct {
	key   string
	value any  // kindAny's
	rank  int8 // text lines only: textRank
	kind  fieldKind
	str   string // kindString's
	num   int64  // kindInt's, kindBool's (1 for true)
}

// lineBuffer is what formatting a line needs, kept in a pool.
type lineBuffer struct {
	buf    bytes.Buffer
	fields []field
}

// formatter renders lines in the original's text or JSON layout.
type formatter struct {
	json         bool
	includeExtra bool
	textFields   bool
	// orders remembers the field order of recent lines, by their number
	// of fields (modulo its size): a component logs the same set of keys
	// (a crawl request's, a page's) over and over, and finding them all in
	// a line's extras costs less than sorting them again.
	orders [8]atomic.Pointer[[]string]
}

// format writes ln into lb.buf, ending with a newline.
func (f *formatter) format(lb *lineBuffer, ln *line) {
	var fields []field
	switch {
	case !f.json && !f.includeExtra && !f.textFields:
	case len(ln.typed) > 0:
		lb.fields = typedFields(lb.fields[:0], ln.typed, f.textFields && !f.json && !f.includeExtra)
		fields = lb.fields
	case len(ln.extra) > 0:
		lb.fields = f.orderedFields(lb.fields[:0], ln.extra)
		fields = lb.fields
	}
	if f.json {
		f.formatJSON(&lb.buf, ln, fields)
	} else {
		f.formatText(&lb.buf, ln, fields)
	}
}

// orderedFields is sortedFields, in the remembered order when the line's
// keys are the ones it was found for.
func (f *formatter) orderedFields(dst []field, extra Extra) []field {
	slot := &f.orders[len(extra)%len(f.orders)]
	if order := slot.Load(); order != nil && len(*order) == len(extra) {
		for _, k := range *order {
			v, ok := extra[k]
			if !ok {
				dst = dst[:0]
				break
			}
			dst = append(dst, field{key: k, value: v})
		}
		if len(dst) == len(extra) {
			return dst
		}
	}
	dst = sortedFields(dst, extra, f.textFields && !f.json && !f.includeExtra)
	order := make([]string, len(dst))
	for i, fd := range dst {
		if _, ok := extra[fd.key]; !ok { // renamed: its order is not the keys'
			return dst
		}
		order[i] = fd.key
	}
	slot.Store(&order)
	return dst
}

// sortedFields appends extra's fields to dst in key order (Go maps have no
// order, and a stable one keeps lines comparable), or, with leadingFirst,
// leadingTextKeys first in their order and then the others in key order.
// A clashing key is renamed "fields.<key>" (again while that too is
// taken).
func sortedFields(dst []field, extra Extra, leadingFirst bool) []field {
	taken := func(k string) bool { return hasKey(extra, k) }
	for k, v := range extra {
		key, rank := placed(k, taken, leadingFirst)
		dst = append(dst, field{key: key, value: v, rank: rank})
	}
	sortPlaced(dst)
	return dst
}

// placed is how a line writes a field's key k, and its rank: k renamed
// "fields.<key>" while it clashes with a reserved name or, once renamed,
// with another of the line's keys (taken); the rank of leadingTextKeys
// with leadingFirst, 0 otherwise.
func placed(k string, taken func(string) bool, leadingFirst bool) (key string, rank int8) {
	key = k
	for isReserved(key) || (key != k && taken(key)) {
		key = clashPrefix + key
	}
	if leadingFirst {
		rank = textRank(key)
	}
	return key, rank
}

// sortPlaced orders a line's fields by rank, then key.
func sortPlaced(fields []field) {
	slices.SortFunc(fields, func(a, b field) int {
		if a.rank != b.rank {
			return int(a.rank) - int(b.rank)
		}
		return strings.Compare(a.key, b.key)
	})
}

func (f *formatter) formatText(b *bytes.Buffer, ln *line, fields []field) {
	b.Write(textStamp.append(b.AvailableBuffer(), ln.time))
	b.WriteString(" [")
	b.WriteString(ln.name)
	b.WriteString("] ")
	b.WriteString(ln.level.String())
	b.WriteString(": ")
	b.WriteString(ln.msg)
	switch {
	case len(fields) == 0:
	case f.includeExtra:
		// str(dict) of the extras, as the original appends them.
		b.WriteString(" {")
		for i, fd := range fields {
			if i > 0 {
				b.WriteString(", ")
			}
			writePyString(b, fd.key)
			b.WriteString(": ")
			writePyRepr(b, normalize(fields[i].boxed(), 0, false))
		}
		b.WriteByte('}')
	case f.textFields:
		writeTextFields(b, fields)
	}
	b.WriteByte('\n')
}

func (f *formatter) formatJSON(b *bytes.Buffer, ln *line, fields []field) {
	// Python's json.dumps separators (", " and ": ") so lines look like the
	// original's; any JSON reader (Logstash's json codec) accepts both.
	b.WriteString(`{"message": `)
	writeJSONString(b, ln.msg)
	b.WriteString(`, "logger": `)
	writeJSONString(b, ln.name)
	b.WriteString(`, "timestamp": "`)
	b.Write(jsonStamp.append(b.AvailableBuffer(), ln.time))
	b.WriteString(`", "level": "`)
	b.WriteString(ln.level.String())
	b.WriteByte('"')
	for i, fd := range fields {
		b.WriteString(", ")
		writeJSONString(b, fd.key)
		b.WriteString(": ")
		writeJSONField(b, &fields[i])
	}
	b.WriteString("}\n")
}

// writeJSONValue encodes one extra value. A value encoding/json refuses
// (channels, functions, NaN, cycles, failing MarshalJSON) is rendered by
// reflection instead, so a line is never lost to a bad field.
func writeJSONValue(b *bytes.Buffer, v any) {
	switch x := v.(type) {
	case string:
		writeJSONString(b, x)
		return
	case bool:
		b.WriteString(strconv.FormatBool(x))
		return
	case int:
		b.WriteString(strconv.Itoa(x))
		return
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
		return
	case nil:
		b.WriteString("null")
		return
	}
	if e, ok := v.(error); ok {
		// encoding/json would write most errors as {}; Python writes str(e).
		if _, custom := v.(json.Marshaler); !custom {
			if s, ok := safeText(func() (string, error) { return e.Error(), nil }); ok {
				writeJSONString(b, s)
				return
			}
		}
	}
	writeSpaced(b, compactJSON(v))
}

// writeSpaced copies compact JSON, adding a space after each ',' and ':'
// outside strings, as Python's json.dumps writes nested values.
func writeSpaced(b *bytes.Buffer, compact []byte) {
	inString, escaped := false, false
	for _, c := range compact {
		b.WriteByte(c)
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case !inString && (c == ',' || c == ':'):
			b.WriteByte(' ')
		}
	}
}

// writeJSONString writes s as a JSON string, escaped as a JSON line's own
// strings are (wirejson.LogLine).
func writeJSONString(b *bytes.Buffer, s string) {
	b.Write(wirejson.AppendString(b.AvailableBuffer(), s, wirejson.LogLine))
}

// normalize turns any value into a tree of nil, bool, int64, uint64, float64,
// string, map[string]any, []any (and, for JSON, json.RawMessage), walking at
// most maxDepth levels. Errors and, for text, fmt.Stringers become their
// text; structs become maps of their exported fields (named by json tags);
// channels and functions become "<type>". For JSON, non-finite floats become
// the strings "NaN", "Infinity" and "-Infinity" (the words Python writes).
func normalize(v any, depth int, forJSON bool) any {
	if v == nil {
		return nil
	}
	if depth > maxDepth {
		return "..."
	}
	if own, ok := ownForm(v, forJSON); ok {
		return own
	}
	return normalizeKind(reflect.ValueOf(v), depth, forJSON)
}

// ownForm is the form v gives itself, if it has one: for JSON its
// MarshalJSON or MarshalText, and its Error or, for text, its String.
func ownForm(v any, forJSON bool) (any, bool) {
	if forJSON {
		if m, ok := v.(json.Marshaler); ok {
			if enc, err := wirejson.Append(nil, m, wirejson.Go); err == nil {
				return json.RawMessage(enc), true
			}
		}
		if m, ok := v.(encoding.TextMarshaler); ok {
			if s, ok := safeText(func() (string, error) {
				t, err := m.MarshalText()
				return string(t), err
			}); ok {
				return s, true
			}
		}
	}
	if e, ok := v.(error); ok {
		if s, ok := safeText(func() (string, error) { return e.Error(), nil }); ok {
			return s, true
		}
	}
	if s, ok := v.(fmt.Stringer); ok && !forJSON {
		if s, ok := safeText(func() (string, error) { return s.String(), nil }); ok {
			return s, true
		}
	}
	return nil, false
}

// normalizeKind is normalize by the value's kind.
func normalizeKind(rv reflect.Value, depth int, forJSON bool) any {
	switch rv.Kind() {
	case reflect.Bool:
		return rv.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return rv.Uint()
	case reflect.Float32, reflect.Float64:
		return normalizeFloat(rv.Float(), forJSON)
	case reflect.Complex64, reflect.Complex128:
		return fmt.Sprint(rv.Complex())
	case reflect.String:
		return rv.String()
	case reflect.Map:
		if rv.IsNil() {
			return nil
		}
		m := make(map[string]any, rv.Len())
		it := rv.MapRange()
		for it.Next() {
			m[mapKey(it.Key())] = normalizeValue(it.Value(), depth+1, forJSON)
		}
		return m
	case reflect.Slice:
		if rv.IsNil() {
			return nil
		}
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			return string(rv.Bytes())
		}
		fallthrough
	case reflect.Array:
		s := make([]any, rv.Len())
		for i := range s {
			s[i] = normalizeValue(rv.Index(i), depth+1, forJSON)
		}
		return s
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return nil
		}
		return normalizeValue(rv.Elem(), depth+1, forJSON)
	case reflect.Struct:
		return normalizeStruct(rv, depth, forJSON)
	default: // channels, functions, unsafe pointers
		return "<" + rv.Type().String() + ">"
	}
}

// normalizeFloat keeps f, except a non-finite one for JSON: Python's word.
func normalizeFloat(f float64, forJSON bool) any {
	if w, ok := nonFinite(f, "NaN", "Infinity", "-Infinity"); ok && forJSON {
		return w
	}
	return f
}

// nonFinite names a non-finite f with the word given for it; ok is false
// for a finite f.
func nonFinite(f float64, nan, posInf, negInf string) (string, bool) {
	switch {
	case math.IsNaN(f):
		return nan, true
	case math.IsInf(f, 1):
		return posInf, true
	case math.IsInf(f, -1):
		return negInf, true
	}
	return "", false
}

// normalizeStruct is a struct's exported fields by name (a json tag's, if
// it has one; "-" leaves the field out).
func normalizeStruct(rv reflect.Value, depth int, forJSON bool) map[string]any {
	m := make(map[string]any)
	t := rv.Type()
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		name := sf.Name
		if tag, _, _ := strings.Cut(sf.Tag.Get("json"), ","); tag == "-" {
			continue
		} else if tag != "" {
			name = tag
		}
		m[name] = normalizeValue(rv.Field(i), depth+1, forJSON)
	}
	return m
}

func normalizeValue(rv reflect.Value, depth int, forJSON bool) any {
	if !rv.IsValid() || !rv.CanInterface() {
		return nil
	}
	return normalize(rv.Interface(), depth, forJSON)
}

// mapKey renders a map key as encoding/json would, falling back to fmt.
func mapKey(k reflect.Value) string {
	switch k.Kind() {
	case reflect.String:
		return k.String()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(k.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return strconv.FormatUint(k.Uint(), 10)
	}
	if k.CanInterface() {
		if s, ok := safeText(func() (string, error) { return fmt.Sprint(k.Interface()), nil }); ok {
			return s
		}
	}
	return "<" + k.Type().String() + ">"
}

// safeText calls a user method that yields text, treating an error or a
// panic (say, a method on a nil pointer) as "no text".
func safeText(f func() (string, error)) (s string, ok bool) {
	defer func() {
		if recover() != nil {
			s, ok = "", false
		}
	}()
	s, err := f()
	return s, err == nil
}

// writePyRepr writes a normalized value as Python's repr() would write the
// equivalent Python value: None, True, 4, 4.0, 'text', [..], {'k': v}.
func writePyRepr(b *bytes.Buffer, v any) {
	switch x := v.(type) {
	case nil:
		b.WriteString("None")
	case bool:
		if x {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case uint64:
		b.WriteString(strconv.FormatUint(x, 10))
	case float64:
		b.WriteString(pyrepr.Float(x))
	case string:
		writePyString(b, x)
	case []any:
		writePyItems(b, "[]", len(x), func(i int) { writePyRepr(b, x[i]) })
	case map[string]any:
		keys := slices.Sorted(maps.Keys(x))
		writePyItems(b, "{}", len(keys), func(i int) {
			writePyString(b, keys[i])
			b.WriteString(": ")
			writePyRepr(b, x[keys[i]])
		})
	default: // not produced by normalize; kept total all the same
		writePyString(b, fmt.Sprintf("<%T>", v))
	}
}

// writePyItems writes n items, each by item, between brackets[0] and
// brackets[1], separated by ", " as Python's repr() separates them.
func writePyItems(b *bytes.Buffer, brackets string, n int, item func(i int)) {
	b.WriteByte(brackets[0])
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		item(i)
	}
	b.WriteByte(brackets[1])
}

// writePyString writes s as Python's repr() of a str: single quotes unless
// the text holds a single quote and no double quote, backslash escapes for
// the quote, backslash, \t \n \r and for characters that are not printable.
func writePyString(b *bytes.Buffer, s string) {
	quote := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		quote = '"'
	}
	b.WriteByte(quote)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(b, `\x%02x`, s[i])
		case r == '\\' || r == rune(quote):
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case unicode.IsPrint(r): // includes ' ', excludes DEL
			b.WriteString(s[i : i+size])
		case r <= 0xff:
			fmt.Fprintf(b, `\x%02x`, r)
		case r <= 0xffff:
			fmt.Fprintf(b, `\u%04x`, r)
		default:
			fmt.Fprintf(b, `\U%08x`, r)
		}
		i += size
	}
	b.WriteByte(quote)
}
