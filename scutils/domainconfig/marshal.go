package domainconfig

import (
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/pyrepr"
)

// Marshal writes d as the original Redis Monitor does, with PyYAML's
// yaml.dump(d, default_flow_style=False): keys sorted, list items at their
// key's indentation, empty collections as [] and {}, scale always with a
// fraction ("1.0"), and domains quoted only where YAML needs it (in PyYAML's
// styles, including its line folding and escapes, so any string survives).
// Duplicates in Blacklist are written as they are.
func (d Document) Marshal() []byte {
	e := &emitter{whitespace: true, indention: true}
	// The root block mapping: indent 0.
	e.simpleKey("blacklist")
	if len(d.Blacklist) == 0 {
		e.writeIndicator("[", true, true, false)
		e.writeIndicator("]", false, false, false)
	} else {
		// A sequence inside a mapping is "indentless": its "-" stays at
		// the key's column.
		for _, item := range d.Blacklist {
			e.writeIndent(0)
			e.writeIndicator("-", true, false, true)
			e.scalar(item, 2, false)
		}
	}
	e.simpleKey("domains")
	if len(d.Domains) == 0 {
		e.writeIndicator("{", true, true, false)
		e.writeIndicator("}", false, false, false)
	} else {
		for _, name := range slices.Sorted(maps.Keys(d.Domains)) {
			dom := d.Domains[name]
			e.writeIndent(2)
			if isSimpleKey(name) {
				e.scalar(name, 4, true)
				e.writeIndicator(":", false, false, false)
			} else {
				// A long, empty or multi-line key: "? key" then ": value".
				e.writeIndicator("?", true, false, true)
				e.scalar(name, 4, false)
				e.writeIndent(2)
				e.writeIndicator(":", true, false, true)
			}
			e.field(4, "hits", strconv.Itoa(dom.Hits))
			e.field(4, "scale", yamlFloat(dom.Scale))
			e.field(4, "window", strconv.Itoa(dom.Window))
		}
	}
	e.writeIndent(0) // the document ends with a line break
	return []byte(e.out.String())
}

// yamlNonFinite are PyYAML's spellings of the floats repr writes as inf,
// -inf and nan.
var yamlNonFinite = map[string]string{"inf": ".inf", "-inf": "-.inf", "nan": ".nan"}

// yamlFloat formats f as PyYAML's represent_float: repr(f) lower-cased
// (pyrepr.Float already is), ".0" added to an exponent form without a point
// ("1.0e+16"), and .inf, -.inf, .nan.
func yamlFloat(f float64) string {
	s := pyrepr.Float(f)
	if y, ok := yamlNonFinite[s]; ok {
		return y
	}
	if !strings.Contains(s, ".") {
		s = strings.Replace(s, "e", ".0e", 1)
	}
	return s
}

// emitter is the part of PyYAML's Emitter (yaml/emitter.py) that this
// document's shape uses: block mappings and sequences, plain, single- and
// double-quoted scalars, with the same column bookkeeping, so folding and
// indentation come out the same. Columns count code points, as Python's
// len does.
type emitter struct {
	out        strings.Builder
	column     int
	whitespace bool // the last character written was white space
	indention  bool // only indentation (spaces, "-", "?", ":") on this line so far
}

// bestWidth is PyYAML's default line width.
const bestWidth = 80

// simpleKey writes a root-level key ("blacklist:").
func (e *emitter) simpleKey(key string) {
	e.writeIndent(0)
	e.scalar(key, 2, true)
	e.writeIndicator(":", false, false, false)
}

// field writes "name: value" of a domain's throttle at indent.
func (e *emitter) field(indent int, name, value string) {
	e.writeIndent(indent)
	e.writePlain([]rune(name), indent+2, false)
	e.writeIndicator(":", false, false, false)
	e.writePlain([]rune(value), indent+2, true)
}

func (e *emitter) write(s string, width int) {
	e.out.WriteString(s)
	e.column += width
}

func (e *emitter) writeRunes(r []rune) { e.write(string(r), len(r)) }

// writeIndicator writes an indicator ("-", ":", "?", a quote, a bracket),
// preceded by a space when needWhitespace and the last character is not
// one; whitespace and indention say what the indicator counts as.
func (e *emitter) writeIndicator(indicator string, needWhitespace, whitespace, indention bool) {
	if !e.whitespace && needWhitespace {
		indicator = " " + indicator
	}
	e.whitespace = whitespace
	e.indention = e.indention && indention
	e.write(indicator, len(indicator))
}

// writeIndent starts a new line unless the current one holds only
// indentation up to indent, then pads to indent.
func (e *emitter) writeIndent(indent int) {
	if !e.indention || e.column > indent || (e.column == indent && !e.whitespace) {
		e.writeLineBreak('\n')
	}
	if e.column < indent {
		e.whitespace = true
		e.write(strings.Repeat(" ", indent-e.column), indent-e.column)
	}
}

func (e *emitter) writeLineBreak(br rune) {
	e.whitespace = true
	e.indention = true
	e.out.WriteRune(br)
	e.column = 0
}

// scalar writes a string in the style PyYAML chooses for it. indent is the
// indentation of continuation lines; key says it is a simple mapping key,
// which is never folded.
func (e *emitter) scalar(s string, indent int, key bool) {
	text := []rune(s)
	a := analyzeScalar(text)
	switch {
	case resolvesToString(s) && !(key && (a.empty || a.multiline)) && a.allowBlockPlain:
		e.writePlain(text, indent, !key)
	case a.allowSingleQuoted && !(key && a.multiline):
		e.writeSingleQuoted(text, indent, !key)
	default:
		e.writeDoubleQuoted(text, indent, !key)
	}
}

// isSimpleKey is PyYAML's check_simple_key for a string key: shorter than
// 128 characters counting its tag ("!!str", never written), not empty, one
// line.
func isSimpleKey(s string) bool {
	text := []rune(s)
	a := analyzeScalar(text)
	return len("!!str")+len(text) < 128 && !a.empty && !a.multiline
}

type scalarAnalysis struct {
	empty, multiline                   bool
	allowBlockPlain, allowSingleQuoted bool
}

func isBreak(r rune) bool { return r == '\n' || r == '\x85' || r == '\u2028' || r == '\u2029' }

func isSpaceOrBreak(r rune) bool { return r == 0 || r == ' ' || r == '\t' || r == '\r' || isBreak(r) }

// whitespaceSeen is what analyzeScalar records of one kind of whitespace,
// spaces or line breaks: whether one starts or ends the text (PyYAML's
// leading_/trailing_space, leading_/trailing_break) and whether one follows
// the other kind (break_space for spaces, space_break for breaks).
type whitespaceSeen struct{ atEdge, afterOther bool }

// see records a character of this kind at index i of a text of n.
func (w *whitespaceSeen) see(i, n int, afterOther bool) {
	if i == 0 || i == n-1 {
		w.atEdge = true
	}
	if afterOther {
		w.afterOther = true
	}
}

// analyzeScalar is PyYAML's analyze_scalar for block context, with
// allow_unicode off (yaml.dump's default): every character outside printable
// ASCII is special and needs double quotes.
func analyzeScalar(text []rune) scalarAnalysis {
	if len(text) == 0 {
		return scalarAnalysis{empty: true, allowBlockPlain: true, allowSingleQuoted: true}
	}
	var blockIndicators, lineBreaks, special bool
	var spaces, breaks whitespaceSeen
	s := string(text)
	if strings.HasPrefix(s, "---") || strings.HasPrefix(s, "...") {
		blockIndicators = true
	}
	precededByWhitespace := true
	followedByWhitespace := len(text) == 1 || isSpaceOrBreak(text[1])
	previousSpace, previousBreak := false, false
	for i, ch := range text {
		if i == 0 {
			if strings.ContainsRune("#,[]{}&*!|>'\"%@`", ch) {
				blockIndicators = true
			}
			if (ch == '?' || ch == ':') && followedByWhitespace {
				blockIndicators = true
			}
			if ch == '-' && followedByWhitespace {
				blockIndicators = true
			}
		} else {
			if ch == ':' && followedByWhitespace {
				blockIndicators = true
			}
			if ch == '#' && precededByWhitespace {
				blockIndicators = true
			}
		}
		if isBreak(ch) {
			lineBreaks = true
		}
		if !(ch == '\n' || (ch >= 0x20 && ch <= 0x7e)) {
			special = true
		}
		switch {
		case ch == ' ':
			spaces.see(i, len(text), previousBreak)
			previousSpace, previousBreak = true, false
		case isBreak(ch):
			breaks.see(i, len(text), previousSpace)
			previousSpace, previousBreak = false, true
		default:
			previousSpace, previousBreak = false, false
		}
		precededByWhitespace = isSpaceOrBreak(ch)
		followedByWhitespace = i+2 >= len(text) || isSpaceOrBreak(text[i+2])
	}
	a := scalarAnalysis{multiline: lineBreaks, allowBlockPlain: true, allowSingleQuoted: true}
	if spaces.atEdge || breaks.atEdge {
		a.allowBlockPlain = false
	}
	if spaces.afterOther {
		a.allowBlockPlain, a.allowSingleQuoted = false, false
	}
	if breaks.afterOther || special {
		a.allowBlockPlain, a.allowSingleQuoted = false, false
	}
	if lineBreaks || blockIndicators {
		a.allowBlockPlain = false
	}
	return a
}

// implicitResolvers are PyYAML's YAML 1.1 implicit resolvers by first
// character: a plain scalar matching one of them would read back as a bool,
// number, null, timestamp, merge key or "=", so a string like that is
// quoted. Python's "$" also matches before a final line break, hence \n?\z.
var implicitResolvers = func() map[rune][]*regexp.Regexp {
	m := map[rune][]*regexp.Regexp{}
	add := func(first string, pattern string) {
		re := regexp.MustCompile(`^(?:` + pattern + `)\n?\z`)
		for _, ch := range first {
			m[ch] = append(m[ch], re)
		}
	}
	add("yYnNtTfFoO", `yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF`)
	add("-+0123456789.", `[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?`+
		`|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?`+
		`|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*`+
		`|[-+]?\.(?:inf|Inf|INF)`+
		`|\.(?:nan|NaN|NAN)`)
	add("-+0123456789", `[-+]?0b[0-1_]+`+
		`|[-+]?0[0-7_]+`+
		`|[-+]?(?:0|[1-9][0-9_]*)`+
		`|[-+]?0x[0-9a-fA-F_]+`+
		`|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+`)
	add("<", `<<`)
	add("~nN", `~|null|Null|NULL|`)
	add("0123456789", `[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]`+
		`|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?`+
		`(?:[Tt]|[ \t]+)[0-9][0-9]?`+
		`:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?`+
		`(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?`)
	add("=", `=`)
	add("!&*", `!|&|\*`)
	return m
}()

// resolvesToString reports whether s, written plain, reads back as a string.
func resolvesToString(s string) bool {
	if s == "" {
		return false // the empty plain scalar is null
	}
	first := []rune(s)[0]
	for _, re := range implicitResolvers[first] {
		if re.MatchString(s) {
			return false
		}
	}
	return true
}

// writePlain is PyYAML's write_plain.
func (e *emitter) writePlain(text []rune, indent int, split bool) {
	if len(text) == 0 {
		return
	}
	if !e.whitespace {
		e.write(" ", 1)
	}
	e.whitespace, e.indention = false, false
	scanRuns(text, nil, func(kind runKind, start, end int) {
		switch {
		case kind == spaceRun && start+1 == end && e.column > bestWidth && split:
			e.writeIndent(indent)
			e.whitespace, e.indention = false, false
		case kind == breakRun:
			e.writeBreaks(text[start:end])
			e.writeIndent(indent)
			e.whitespace, e.indention = false, false
		default:
			e.writeRunes(text[start:end])
		}
	})
}

// writeBreaks writes a run of line breaks inside a scalar; a leading "\n"
// needs an extra one, since a single break folds into a space.
func (e *emitter) writeBreaks(brs []rune) {
	if brs[0] == '\n' {
		e.writeLineBreak('\n')
	}
	for _, br := range brs {
		e.writeLineBreak(br)
	}
}

// writeSingleQuoted is PyYAML's write_single_quoted.
func (e *emitter) writeSingleQuoted(text []rune, indent int, split bool) {
	e.writeIndicator("'", true, false, false)
	scanRuns(text, func() { e.write("''", 2) }, func(kind runKind, start, end int) {
		switch {
		case kind == spaceRun && start+1 == end && e.column > bestWidth && split && start != 0 && end != len(text):
			e.writeIndent(indent)
		case kind == breakRun:
			e.writeBreaks(text[start:end])
			e.writeIndent(indent)
		default:
			e.writeRunes(text[start:end])
		}
	})
	e.writeIndicator("'", false, false, false)
}

// runKind is what a run of a scalar's text holds.
type runKind int

const (
	otherRun runKind = iota // neither spaces nor line breaks
	spaceRun
	breakRun
)

// scanRuns splits text as PyYAML's plain and single-quoted writers do: into
// runs of spaces, of line breaks and of other characters, calling write with
// each run's kind and bounds when it ends. With quote, a single quote ends any
// run and is written by quote instead of by a run.
func scanRuns(text []rune, quote func(), write func(kind runKind, start, end int)) {
	kind, start := otherRun, 0
	for end := 0; end <= len(text); end++ {
		ch, ok := runeAt(text, end)
		isQuote := ok && ch == '\'' && quote != nil
		var ends bool
		switch kind {
		case spaceRun:
			ends = ch != ' '
		case breakRun:
			ends = !ok || !isBreak(ch)
		default:
			ends = !ok || ch == ' ' || isBreak(ch) || isQuote
		}
		if ends && (kind != otherRun || start < end) {
			write(kind, start, end)
			start = end
		}
		if isQuote {
			quote()
			start = end + 1
		}
		if ok {
			kind = runKindOf(ch)
		}
	}
}

// runKindOf is the kind of run ch belongs to.
func runKindOf(ch rune) runKind {
	switch {
	case ch == ' ':
		return spaceRun
	case isBreak(ch):
		return breakRun
	}
	return otherRun
}

var escapes = map[rune]string{
	0: "0", '\x07': "a", '\x08': "b", '\t': "t", '\n': "n", '\x0b': "v", '\x0c': "f",
	'\r': "r", '\x1b': "e", '"': "\"", '\\': "\\", '\x85': "N", '\xa0': "_",
	'\u2028': "L", '\u2029': "P",
}

// writeDoubleQuoted is PyYAML's write_double_quoted with allow_unicode off.
func (e *emitter) writeDoubleQuoted(text []rune, indent int, split bool) {
	e.writeIndicator("\"", true, false, false)
	start := 0
	for end := 0; end <= len(text); end++ {
		ch, ok := runeAt(text, end)
		if !ok || ch == '"' || ch == '\\' || ch < 0x20 || ch > 0x7e {
			if start < end {
				e.writeRunes(text[start:end])
				start = end
			}
			if ok {
				var esc string
				switch r, named := escapes[ch]; {
				case named:
					esc = "\\" + r
				case ch <= 0xff:
					esc = "\\x" + hex(ch, 2)
				case ch <= 0xffff:
					esc = "\\u" + hex(ch, 4)
				default:
					esc = "\\U" + hex(ch, 8)
				}
				e.write(esc, len(esc))
				start = end + 1
			}
		}
		if 0 < end && end < len(text)-1 && (ch == ' ' || start >= end) &&
			e.column+(end-start) > bestWidth && split {
			// After an escape start is end+1: the slice is empty, as in Python.
			chunk := text[min(start, end):end]
			e.write(string(chunk)+"\\", len(chunk)+1)
			if start < end {
				start = end
			}
			e.writeIndent(indent)
			e.whitespace, e.indention = false, false
			if text[start] == ' ' {
				e.write("\\", 1)
			}
		}
	}
	e.writeIndicator("\"", false, false, false)
}

func hex(r rune, digits int) string {
	s := strings.ToUpper(strconv.FormatInt(int64(r), 16))
	return strings.Repeat("0", digits-len(s)) + s
}

func runeAt(text []rune, i int) (rune, bool) {
	if i < len(text) {
		return text[i], true
	}
	return 0, false
}
