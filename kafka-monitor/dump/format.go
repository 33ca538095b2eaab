package dump

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Format says how Render turns a message into the text printed for it. The
// zero value prints JSON objects compacted on one line and anything else as
// it came.
type Format struct {
	// Pretty indents JSON objects by four spaces, as the original's
	// json.dumps(item, indent=4). Other messages are printed as they came.
	Pretty bool
	// DecodeBase64 replaces a JSON object's "body" string, base64-encoded by
	// a crawler with KAFKA_BASE_64_ENCODE, by its decoded text, read in the
	// character set the object's "encoding" field names (default UTF-8).
	DecodeBase64 bool
	// NoBody drops the "body" field of JSON objects.
	NoBody bool
	// JustBody prints only the "body" field of JSON objects: a string as raw
	// text, another value as JSON. Messages without one print nothing.
	JustBody bool
}

// Validate reports options that contradict each other.
func (f Format) Validate() error {
	switch {
	case f.NoBody && f.JustBody:
		return errors.New("no-body and just-body exclude each other")
	case f.Pretty && f.JustBody:
		return errors.New("pretty and just-body exclude each other")
	}
	return nil
}

// ErrNoBody is the note Render gives, with JustBody, for a message that has
// no "body" field, printed as nothing.
var ErrNoBody = errors.New("message has no body field")

// Render returns the text printed for one message value, ending in a
// newline, or nil when nothing is printed. Render never fails: when the
// message cannot be transformed as asked (a body that is not base64, a
// missing body with JustBody) it still returns the best text it can and a
// note saying why, for the log.
func (f Format) Render(value []byte) ([]byte, error) {
	fields, ok := parseObject(value)
	if !ok {
		if f.JustBody {
			return nil, fmt.Errorf("%w: not a JSON object", ErrNoBody)
		}
		return text(value), nil
	}

	var note error
	if f.DecodeBase64 && !f.NoBody {
		if err := decodeBody(fields); err != nil {
			note = err
		}
	}
	if f.JustBody {
		body, ok := lastField(fields, "body")
		if !ok {
			return nil, ErrNoBody
		}
		var s string
		if json.Unmarshal(body, &s) == nil {
			return text([]byte(s)), note
		}
		return text(compact(body)), note
	}
	if f.NoBody {
		fields = withoutField(fields, "body")
	}

	obj := encodeObject(fields)
	var out bytes.Buffer
	if f.Pretty {
		if err := json.Indent(&out, obj, "", "    "); err != nil {
			return text(value), fmt.Errorf("indent message: %w", err) // cannot happen: obj was parsed
		}
	} else {
		out.Write(compact(obj))
	}
	out.WriteByte('\n')
	return out.Bytes(), note
}

// text is a message printed as it came, on its own line(s).
func text(b []byte) []byte {
	out := make([]byte, 0, len(b)+1)
	return append(append(out, b...), '\n')
}

func compact(b []byte) []byte {
	var out bytes.Buffer
	if json.Compact(&out, b) != nil {
		return b
	}
	return out.Bytes()
}

// field is one member of a JSON object, kept in the order it came so the
// printed message reads like the produced one.
type field struct {
	key   string
	value json.RawMessage
}

// parseObject splits a JSON object into its members; ok is false for
// anything else (text, arrays, scalars, broken JSON).
func parseObject(b []byte) (fields []field, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		key, isKey := tok.(string)
		if !isKey {
			return nil, false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		fields = append(fields, field{key: key, value: v})
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false // trailing data: not one JSON object
	}
	return fields, true
}

func encodeObject(fields []field) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range fields {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(encodeString(f.key))
		b.WriteByte(':')
		b.Write(f.value)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// encodeString writes s as a JSON string, leaving <, > and & as they are:
// the output is read by people and jq, not embedded in HTML.
func encodeString(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// lastField returns the value of key; as in Python's json.loads, the last of
// duplicate keys wins.
func lastField(fields []field, key string) (json.RawMessage, bool) {
	for i := len(fields) - 1; i >= 0; i-- {
		if fields[i].key == key {
			return fields[i].value, true
		}
	}
	return nil, false
}

func withoutField(fields []field, key string) []field {
	out := fields[:0:0]
	for _, f := range fields {
		if f.key != key {
			out = append(out, f)
		}
	}
	return out
}

// decodeBody replaces the base64 "body" string of fields by its text. A
// message without a body is left alone; a body that is not a base64 string
// is left alone with an error saying so.
func decodeBody(fields []field) error {
	idx := -1
	for i := range fields {
		if fields[i].key == "body" {
			idx = i
		}
	}
	if idx < 0 {
		return nil
	}
	var encoded string
	if err := json.Unmarshal(fields[idx].value, &encoded); err != nil {
		return errors.New("decode base64 body: body is not a string")
	}
	raw, err := decodeBase64(encoded)
	if err != nil {
		return fmt.Errorf("decode base64 body: %w", err)
	}
	charset := "utf-8"
	if v, ok := lastField(fields, "encoding"); ok {
		var s string
		if json.Unmarshal(v, &s) == nil && s != "" {
			charset = s
		}
	}
	body, err := decodeText(raw, charset)
	fields[idx].value = encodeString(body)
	return err
}

// decodeBase64 reads standard base64, with or without padding, ignoring
// line breaks and spaces as Python's b64decode does.
func decodeBase64(s string) ([]byte, error) {
	s = strings.Map(func(r rune) rune {
		switch r {
		case '\n', '\r', ' ', '\t':
			return -1
		}
		return r
	}, s)
	if b, err := base64.StdEncoding.DecodeString(s); err == nil {
		return b, nil
	}
	b, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		return nil, fmt.Errorf("not base64: %w", err)
	}
	return b, nil
}

// decodeText reads raw in charset. UTF-8 (and ASCII), ISO-8859-1 and
// windows-1252, the charsets Scrapy reports for nearly every page, are
// decoded; other bytes that are not UTF-8 are replaced by U+FFFD and the
// error says so, the text is still returned.
func decodeText(raw []byte, charset string) (string, error) {
	switch strings.ToLower(strings.NewReplacer("_", "-", " ", "-").Replace(strings.TrimSpace(charset))) {
	case "latin-1", "latin1", "iso-8859-1", "iso8859-1", "l1", "iso-ir-100":
		return decodeSingleByte(raw, nil), nil
	case "cp1252", "windows-1252", "win-1252":
		return decodeSingleByte(raw, &cp1252), nil
	}
	if utf8.Valid(raw) {
		return string(raw), nil
	}
	return strings.ToValidUTF8(string(raw), "\uFFFD"),
		fmt.Errorf("decode base64 body: bytes are not valid in charset %q: replaced by U+FFFD", charset)
}

// decodeSingleByte maps each byte to its code point (ISO-8859-1), with high
// overriding 0x80-0x9F (windows-1252).
func decodeSingleByte(raw []byte, high *[32]rune) string {
	var b strings.Builder
	b.Grow(len(raw) + len(raw)/4)
	for _, c := range raw {
		if high != nil && c >= 0x80 && c <= 0x9F {
			b.WriteRune(high[c-0x80])
			continue
		}
		b.WriteRune(rune(c))
	}
	return b.String()
}

// cp1252 is windows-1252 at 0x80-0x9F; undefined bytes map to their C1 code
// points, as browsers (WHATWG encoding standard) do.
var cp1252 = [32]rune{
	'€', 0x81, '‚', 'ƒ', '„', '…', '†', '‡', 'ˆ', '‰', 'Š', '‹', 'Œ', 0x8D, 'Ž', 0x8F,
	0x90, '‘', '’', '“', '”', '•', '–', '—', '˜', '™', 'š', '›', 'œ', 0x9D, 'ž', 'Ÿ',
}
