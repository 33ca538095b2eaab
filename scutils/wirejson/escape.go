package wirejson

import (
	"math"
	"unicode/utf8"
)

// Options say how strings are escaped and values written: one bit per way
// our writers differ from encoding/json's own output without HTML
// escaping (the zero Options, Go).
type Options uint8

const (
	// EscapeHTML writes <, > and & as \u003c, \u003e and \u0026, as
	// json.Marshal does.
	EscapeHTML Options = 1 << iota
	// HexBF writes backspace and form feed as \u0008 and \u000c, as
	// encoding/json did before Go 1.22 (it now writes \b and \f).
	HexBF
	// PythonFloats writes a float64 as Python's repr() writes a float
	// (1.0, 0.1, 1e-05, 1e+16), as the original components do; without it
	// Append leaves floats to encoding/json (1, 0.1, 0.00001, 10000000000000000).
	PythonFloats
)

// The styles our components write. Each is part of a contract (bytes other
// components and the Python original read, fixtures and tests pin them),
// so none changes.
const (
	// Go is encoding/json's output with SetEscapeHTML(false): crawl
	// results, the fields the crawlers write in queue members, the nested
	// values of log lines.
	Go Options = 0
	// KafkaMonitor is what the Kafka Monitor stores: queue members as fed
	// and zk:* values. Floats as Python writes them; strings escaped as
	// json.Marshal escaped them when this was first written (Go 1.21).
	KafkaMonitor = EscapeHTML | HexBF | PythonFloats
	// LogLine is the escaping of a JSON log line's own strings (message,
	// logger, the extras' keys and text values).
	LogLine = HexBF
)

// escapeBits are the Options that change how strings are escaped.
const escapeBits = EscapeHTML | HexBF

// asciiEscapes is, for each combination of escapeBits, each ASCII
// character's escape ("" for a character written as it is).
var asciiEscapes = func() (t [escapeBits + 1][utf8.RuneSelf]string) {
	const hex = "0123456789abcdef"
	for o := range escapeBits + 1 {
		for c := range byte(utf8.RuneSelf) {
			switch {
			case c == '"' || c == '\\':
				t[o][c] = `\` + string(c)
			case c == '\n':
				t[o][c] = `\n`
			case c == '\r':
				t[o][c] = `\r`
			case c == '\t':
				t[o][c] = `\t`
			case c == '\b' && o&HexBF == 0:
				t[o][c] = `\b`
			case c == '\f' && o&HexBF == 0:
				t[o][c] = `\f`
			case c < 0x20, o&EscapeHTML != 0 && (c == '<' || c == '>' || c == '&'):
				t[o][c] = `\u00` + string(hex[c>>4]) + string(hex[c&0xf])
			}
		}
	}
	return t
}()

// plainBytes is, for each combination of escapeBits, whether each byte is
// written as it is: ASCII without an escape.
var plainBytes = func() (t [escapeBits + 1][256]bool) {
	for o := range escapeBits + 1 {
		for c := range byte(utf8.RuneSelf) {
			t[o][c] = asciiEscapes[o][c] == ""
		}
	}
	return t
}()

// AppendString appends s to dst as a JSON string, quotes included: '"',
// '\\' and control characters escaped (\n \r \t, \b \f unless HexBF, the
// others \u00xx), U+2028 and U+2029 as \u2028 and \u2029 (JavaScript
// reads them as line ends), invalid UTF-8 as \ufffd, and with EscapeHTML
// <, > and & as \u003c, \u003e and \u0026. This is the one JSON string
// escaper of the tree: every writer of JSON text goes through it.
func AppendString(dst []byte, s string, opts Options) []byte {
	dst = append(dst, '"')
	dst, _ = AppendText(dst, s, -1, opts)
	return append(dst, '"')
}

// AppendStrings appends list to dst as a JSON array of strings, each as
// AppendString writes it; a nil list as null (as encoding/json writes a
// nil []string), an empty one as [].
func AppendStrings(dst []byte, list []string, opts Options) []byte {
	if list == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i, s := range list {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendString(dst, s, opts)
	}
	return append(dst, ']')
}

// AppendText appends s escaped as AppendString does, without the quotes,
// stopping before the first character whose escaped form would take the
// appended text past room bytes (room < 0: no limit). taken is how many
// bytes of s it wrote.
func AppendText(dst []byte, s string, room int, opts Options) (out []byte, taken int) {
	if room < 0 {
		room = math.MaxInt
	}
	escapes := &asciiEscapes[opts&escapeBits]
	plainByte := &plainBytes[opts&escapeBits]
	html := opts&EscapeHTML != 0
	size := 0  // bytes appended so far
	plain := 0 // start of the run of s written as it is
	i := 0
	for i < len(s) {
		// Bytes written as they are, as many as fit: 8 at a time while
		// they can be, then one at a time up to the next other one.
		end := len(s)
		if left := room - size; left < end-i {
			end = i + left
		}
		j := i
		for j+8 <= end && plainWord(s[j:j+8], html) {
			j += 8
		}
		for j < end && plainByte[s[j]] {
			j++
		}
		size += j - i
		i = j
		if i >= len(s) || size >= room {
			break
		}
		width, esc := 1, ""
		if c := s[i]; c < utf8.RuneSelf {
			esc = escapes[c]
		} else {
			var r rune
			r, width = utf8.DecodeRuneInString(s[i:])
			switch {
			case r == utf8.RuneError && width == 1:
				esc = `\ufffd`
			case r == '\u2028':
				esc = `\u2028`
			case r == '\u2029':
				esc = `\u2029`
			}
		}
		n := width
		if esc != "" {
			n = len(esc)
		}
		if size+n > room {
			break
		}
		if esc != "" {
			dst = append(dst, s[plain:i]...)
			dst = append(dst, esc...)
			plain = i + width
		}
		size += n
		i += width
	}
	return append(dst, s[plain:i]...), i
}

// plainWord reports whether the 8 bytes of w are all written as they are:
// ASCII, not a control character, a quote or a backslash (nor, with html,
// <, > or &). A false "no" only sends them through the byte-by-byte path.
func plainWord(w string, html bool) bool {
	x := uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
		uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
	special := (x - ones*0x20) | hasByte(x, '"') | hasByte(x, '\\') | x
	if html {
		special |= hasByte(x, '<') | hasByte(x, '>') | hasByte(x, '&')
	}
	return special&highs == 0
}

const ones, highs = 0x0101010101010101, 0x8080808080808080

// hasByte sets the high bit of the bytes of x equal to c (and perhaps of
// some after one that is: see plainWord).
func hasByte(x uint64, c byte) uint64 {
	y := x ^ (ones * uint64(c))
	return (y - ones) &^ y
}
