package logfactory

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/wirejson"
)

// Limits of the key=value fields of a text line: a page body or a huge URL
// in an extra must not make a line of megabytes. The JSON lines carry every
// field whole.
const (
	// maxTextValueBytes is how much of one field's text (a string, or the
	// JSON of a nested value) a text line shows; the rest is replaced by
	// "...(N bytes)", N being the whole text's length.
	maxTextValueBytes = 1024
	// maxTextFieldsBytes bounds the fields part of a text line (after the
	// message). Fields that do not fit are left out and counted in a closing
	// "...(N more fields)".
	maxTextFieldsBytes = 8 * 1024
)

// leadingTextKeys are written first, in this order, when a line has them:
// what a reader looks for first. The other fields follow in key order.
var leadingTextKeys = []string{"url", "appid", "crawlid", "spiderid", "uuid", "reason", "error"}

// textRank is where a field goes in a text line: a leading key's place in
// leadingTextKeys, or len(leadingTextKeys) for the others (which follow in
// key order).
func textRank(k string) int8 {
	if i := slices.Index(leadingTextKeys, k); i >= 0 {
		return int8(i)
	}
	return int8(len(leadingTextKeys))
}

// writeTextFields appends the extras as logfmt key=value pairs, each after
// a space, in their order (leading keys first: see sortedFields).
func writeTextFields(b *bytes.Buffer, fields []field) {
	start, omitted := b.Len(), 0
	for i := range fields {
		fd := &fields[i]
		mark := b.Len()
		b.WriteByte(' ')
		writeTextKey(b, fd.key)
		b.WriteByte('=')
		writeTextField(b, fd)
		if b.Len()-start > maxTextFieldsBytes {
			b.Truncate(mark)
			omitted++
		}
	}
	if omitted > 0 {
		b.WriteString(" ...(")
		b.WriteString(strconv.Itoa(omitted))
		b.WriteString(" more fields)")
	}
}

// writeTextKey writes a key as logfmt allows it: characters that would end
// or confuse a key (spaces, '=', '"', control and other unprintable
// characters, invalid UTF-8) become '_'; an empty key is "_".
func writeTextKey(b *bytes.Buffer, k string) {
	if k == "" {
		b.WriteByte('_')
		return
	}
	if len(k) > maxTextValueBytes {
		k = cutUTF8(k, maxTextValueBytes)
	}
	if !needsQuote(k) {
		b.WriteString(k)
		return
	}
	for i := 0; i < len(k); {
		r, size := utf8.DecodeRuneInString(k[i:])
		if needsQuoteRune(r, size) {
			b.WriteByte('_')
		} else {
			b.WriteString(k[i : i+size])
		}
		i += size
	}
}

// writeTextValue writes one extra as a logfmt value: text as is, quoted
// (Go syntax: \" \\ \n \t \u2028 \x00 ...) when it is empty or holds a
// space, '=', '"' or a character that is not printable; numbers and
// booleans as their text, nil as null, errors and fmt.Stringers as their
// text, maps, lists and structs as compact JSON. Text longer than
// maxTextValueBytes is cut with a "...(N bytes)" marker.
func writeTextValue(b *bytes.Buffer, v any) { writeTextString(b, textValue(v)) }

// writeTextString writes a field's text as writeTextValue does: cut,
// quoted when it must be.
func writeTextString(b *bytes.Buffer, s string) {
	if len(s) > maxTextValueBytes {
		s = cutUTF8(s, maxTextValueBytes) + "...(" + strconv.Itoa(len(s)) + " bytes)"
	}
	if needsQuote(s) {
		b.Write(strconv.AppendQuote(b.AvailableBuffer(), s))
		return
	}
	b.WriteString(s)
}

// textValue is the unquoted text of a field.
func textValue(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case json.Number: // numbers of decoded requests
		return string(x)
	case nil:
		return "null"
	}
	if isComposite(v) {
		return string(compactJSON(v))
	}
	switch x := normalize(v, 0, false).(type) {
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case uint64:
		return strconv.FormatUint(x, 10)
	case float64:
		return textFloat(x)
	case string:
		return x
	default: // map[string]any or []any: nested values as compact JSON
		return string(compactJSON(v))
	}
}

// isComposite reports whether v is written as JSON: a map, a list or a
// struct that is neither an error nor a fmt.Stringer (those are their
// text). Telling them apart first saves normalize copying a whole map.
func isComposite(v any) bool {
	switch v.(type) {
	case error, fmt.Stringer:
		return false
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Map, reflect.Struct, reflect.Array:
		return true
	case reflect.Slice:
		return rv.Type().Elem().Kind() != reflect.Uint8
	}
	return false
}

// textFloat writes a number as JSON does (1.5, 1500000, 1e-7), and the
// non-finite ones as NaN, +Inf and -Inf.
func textFloat(f float64) string {
	if w, ok := nonFinite(f, "NaN", "+Inf", "-Inf"); ok {
		return w
	}
	enc, err := wirejson.Append(nil, f, wirejson.Go)
	if err != nil {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return string(enc)
}

// compactJSON encodes a nested value without spaces, as encoding/json
// does without HTML escaping (wirejson.Go). A value encoding/json refuses
// is encoded in its normalized form, or as its type.
func compactJSON(v any) []byte {
	enc, err := wirejson.Append(nil, v, wirejson.Go)
	if err != nil {
		enc, err = wirejson.Append(nil, normalize(v, 0, true), wirejson.Go)
		if err != nil {
			enc, _ = wirejson.Append(nil, fmt.Sprintf("<%T>", v), wirejson.Go)
		}
	}
	return enc
}

// needsQuote reports whether a logfmt value must be quoted.
func needsQuote(s string) bool {
	if s == "" {
		return true
	}
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf { // ASCII: most keys and values
			if c <= ' ' || c == '=' || c == '"' || c == 0x7f {
				return true
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if needsQuoteRune(r, size) {
			return true
		}
		i += size
	}
	return false
}

// needsQuoteRune: a space or control character ends a bare value, '=' and
// '"' confuse logfmt readers, and unprintable characters (U+2028, a
// no-break space, invalid UTF-8) would hide what the value holds.
func needsQuoteRune(r rune, size int) bool {
	if r == utf8.RuneError && size == 1 {
		return true
	}
	return r <= ' ' || r == '=' || r == '"' || !unicode.IsPrint(r)
}

// cutUTF8 is the longest prefix of s of at most n bytes that does not split
// a UTF-8 sequence.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	end := n
	for end > 0 && end > n-utf8.UTFMax && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end]
}
