package logfactory

import (
	"bytes"
	"strconv"
)

// Field is one extra field of a line logged with LogFields: a key and a
// value of one kind (String, Int, Bool, or Any for the others). A line of
// Fields is written byte for byte as the same line with an Extra holding
// those keys and values would be, without a map to build, fill and sort.
type Field struct {
	Key  string
	kind fieldKind
	str  string
	num  int64
	val  any
}

type fieldKind uint8

const (
	kindAny fieldKind = iota
	kindString
	kindInt
	kindBool
)

// String is a field of text.
func String(key, value string) Field { return Field{Key: key, kind: kindString, str: value} }

// Int is a field of a number: an Extra's int.
func Int(key string, value int) Field { return Field{Key: key, kind: kindInt, num: int64(value)} }

// Bool is a field of a boolean.
func Bool(key string, value bool) Field {
	var n int64
	if value {
		n = 1
	}
	return Field{Key: key, kind: kindBool, num: n}
}

// Any is a field of any other value, written as an Extra's value is.
func Any(key string, value any) Field { return Field{Key: key, val: value} }

// Value is the field's value as an Extra holds it (a string, an int, a
// bool, or Any's value).
func (f Field) Value() any {
	switch f.kind {
	case kindString:
		return f.str
	case kindInt:
		return int(f.num)
	case kindBool:
		return f.num != 0
	}
	return f.val
}

// InfoFields writes an INFO line with fields (see LogFields).
func (l *Logger) InfoFields(msg string, fields ...Field) { l.LogFields(LevelInfo, msg, fields) }

// LogFields is Log with the extras given as a list of fields instead of a
// map: the same line, byte for byte, in every format, and the same
// callbacks, which see the fields as an Extra (built only when a callback
// is registered for lvl). A line below the logger's level costs the level
// check alone. Fields with the same key, or a logger made by With, take
// Log's path (an Extra; the last of equal keys wins).
func (l *Logger) LogFields(lvl Level, msg string, fields []Field) {
	c := l.core
	if lvl < c.level {
		return
	}
	if len(l.fields) > 0 || hasDuplicateKey(fields) {
		l.Log(lvl, msg, fieldsExtra(fields))
		return
	}
	lvl = min(lvl, LevelCritical)
	c.write(&line{time: c.now(), level: lvl, name: l.name, msg: msg, typed: fields})
	c.cbMu.RLock()
	cbs := len(c.callbacks[lvl])
	c.cbMu.RUnlock()
	if cbs > 0 {
		c.fire(lvl, msg, fieldsExtra(fields))
	}
}

// fieldsExtra is fields as an Extra (nil for none, as Log's merge gives).
func fieldsExtra(fields []Field) Extra {
	if len(fields) == 0 {
		return nil
	}
	m := make(Extra, len(fields))
	for _, f := range fields {
		m[f.Key] = f.Value()
	}
	return m
}

// hasDuplicateKey reports whether two fields share a key (a quadratic
// look: lines have a dozen fields at most, usually).
func hasDuplicateKey(fields []Field) bool {
	if len(fields) > 32 {
		seen := make(map[string]struct{}, len(fields))
		for _, f := range fields {
			if _, ok := seen[f.Key]; ok {
				return true
			}
			seen[f.Key] = struct{}{}
		}
		return false
	}
	for i, f := range fields {
		for _, g := range fields[:i] {
			if f.Key == g.Key {
				return true
			}
		}
	}
	return false
}

// typedFields is sortedFields for a line's Fields (distinct keys): the
// same keys, renamed and ordered as the map's would be.
func typedFields(dst []field, fields []Field, leadingFirst bool) []field {
	taken := func(k string) bool { return hasField(fields, k) }
	for _, f := range fields {
		key, rank := placed(f.Key, taken, leadingFirst)
		dst = append(dst, field{key: key, value: f.val, rank: rank, kind: f.kind, str: f.str, num: f.num})
	}
	sortPlaced(dst)
	return dst
}

func hasField(fields []Field, k string) bool {
	for _, f := range fields {
		if f.Key == k {
			return true
		}
	}
	return false
}

// boxed is fd's value as an Extra would hold it.
func (fd *field) boxed() any {
	return Field{kind: fd.kind, str: fd.str, num: fd.num, val: fd.value}.Value()
}

// writeJSONField writes fd's value as writeJSONValue writes it.
func writeJSONField(b *bytes.Buffer, fd *field) { writeField(b, fd, writeJSONString, writeJSONValue) }

// writeTextField writes fd's value as writeTextValue writes it.
func writeTextField(b *bytes.Buffer, fd *field) { writeField(b, fd, writeTextString, writeTextValue) }

// writeField writes fd's value: text by text, Any's value by value,
// numbers and booleans as their text (what both formats write for them).
func writeField(b *bytes.Buffer, fd *field, text func(*bytes.Buffer, string), value func(*bytes.Buffer, any)) {
	switch fd.kind {
	case kindString:
		text(b, fd.str)
	case kindInt:
		b.Write(strconv.AppendInt(b.AvailableBuffer(), fd.num, 10))
	case kindBool:
		b.WriteString(strconv.FormatBool(fd.num != 0))
	default:
		value(b, fd.value)
	}
}
