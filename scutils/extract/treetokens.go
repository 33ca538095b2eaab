package extract

import (
	"strings"

	"golang.org/x/net/html"
	a "golang.org/x/net/html/atom"
)

// next is the page's next token, read as the x/net/html tokenizer reads
// it, for the plain markup buildTree accepts.
func (b *treeBuilder) next() token {
	s := b.src
	start := b.pos
	for i := start; i < len(s); {
		j := strings.IndexByte(s[i:], '<')
		if j < 0 {
			break
		}
		i += j
		if i+1 < len(s) && startsMarkup(s[i+1]) {
			if i > start {
				b.pos = i
				return token{typ: tokText, data: b.textOf(s[start:i], true)}
			}
			return b.markup()
		}
		i++
	}
	if start < len(s) {
		b.pos = len(s)
		return token{typ: tokText, data: b.textOf(s[start:], true)}
	}
	return token{typ: tokEOF}
}

// startsMarkup is whether '<' followed by c starts a tag, comment or
// declaration (otherwise the '<' is text).
func startsMarkup(c byte) bool { return isLetter(c) || c == '/' || c == '!' || c == '?' }

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// byteSet is a set of bytes.
type byteSet [256]bool

func bytesOf(s string) *byteSet {
	var set byteSet
	for i := 0; i < len(s); i++ {
		set[s[i]] = true
	}
	return &set
}

var (
	spaceSet    = bytesOf(whitespace)
	tagEndSet   = bytesOf(whitespace + "/>")
	attrEndSet  = bytesOf(whitespace + "/>=\"'<")
	plainEndSet = bytesOf(whitespace + ">")
	plainBadSet = bytesOf("\"'<=`")
)

// skipSpace is the index of the first byte of s from i on that is no white
// space.
func skipSpace(s string, i int) int {
	for i < len(s) && spaceSet[s[i]] {
		i++
	}
	return i
}

// textOf is text as the tokenizer gives it: newlines normalised and, unless
// raw, character references decoded. A page without '\r' or '&' (b.cr,
// b.amp) has its pieces looked at for neither.
func (b *treeBuilder) textOf(s string, decode bool) string {
	if b.cr && strings.IndexByte(s, '\r') >= 0 {
		s = strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
	}
	if decode && b.amp && strings.IndexByte(s, '&') >= 0 {
		s = html.UnescapeString(s)
	}
	return b.own(s)
}

// markup reads the tag, comment or doctype at b.pos.
func (b *treeBuilder) markup() token {
	s := b.src[b.pos:]
	switch {
	case s[1] == '/':
		return b.endTag()
	case s[1] != '!' && s[1] != '?':
		return b.startTag()
	case strings.HasPrefix(s, "<!--"):
		return b.comment()
	case len(s) >= 9 && strings.EqualFold(s[:9], "<!doctype"):
		return b.doctype()
	}
	unsure() // bogus comments, CDATA
	return token{}
}

func (b *treeBuilder) comment() token {
	body := b.src[b.pos+4:]
	end := strings.Index(body, "-->")
	if end < 0 || strings.HasPrefix(body, ">") || strings.HasPrefix(body, "->") || strings.Contains(body[:end], "--!>") {
		unsure() // unclosed and abrupt comments
	}
	b.pos += 4 + end + 3
	return token{typ: tokComment, data: b.textOf(body[:end], false)}
}

// doctype reads <!DOCTYPE html>, the one doctype buildTree knows.
func (b *treeBuilder) doctype() token {
	rest := b.src[b.pos+9:]
	end := strings.IndexByte(rest, '>')
	if end != len(" html") || !spaceSet[rest[0]] || rest[1:end] != "html" {
		unsure() // other doctypes: quirks, identifiers
	}
	b.pos += 9 + end + 1
	return token{typ: tokDoctype, data: "html"}
}

// endTag reads </name>, white space allowed before the '>'.
func (b *treeBuilder) endTag() token {
	s := b.src[b.pos+2:]
	n := tagNameLen(s)
	if n == 0 {
		unsure() // </>, </ ...>: bogus comments
	}
	rest := s[skipSpace(s, n):]
	if rest == "" || rest[0] != '>' {
		unsure() // attributes in an end tag, EOF
	}
	b.pos = len(b.src) - len(rest) + 1
	at, name := tagAtom(s[:n])
	return token{typ: tokEnd, atom: at, data: name}
}

// tagNameLen is the length of the tag name s starts with: ASCII letters,
// digits and '-' (other names are left to html.Parse).
func tagNameLen(s string) int {
	i := 0
	for i < len(s) && (isLetter(s[i]) || i > 0 && (s[i] == '-' || '0' <= s[i] && s[i] <= '9')) {
		i++
	}
	if i < len(s) && !tagEndSet[s[i]] {
		return 0
	}
	return i
}

// tagAtom is a tag's atom and lower-case name.
func tagAtom(name string) (a.Atom, string) {
	lower := lowerASCII(name)
	if at := a.Lookup([]byte(lower)); at != 0 {
		return at, at.String()
	}
	return 0, lower
}

// lowerASCII lowers ASCII letters only, byte by byte, as the tokenizer
// does (strings.ToLower would also replace invalid UTF-8).
func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// startTag reads a start tag and its attributes; a raw text element's
// text is read by rawText when the tag is processed.
func (b *treeBuilder) startTag() token {
	s := b.src[b.pos+1:]
	n := tagNameLen(s)
	if n == 0 {
		unsure()
	}
	at, name := tagAtom(s[:n])
	if at == 0 {
		name = b.own(name) // the atom table's names are static
	}
	i := n
	b.scratch = b.scratch[:0]
	for {
		i = skipSpace(s, i)
		switch {
		case i >= len(s):
			unsure() // EOF in a tag
		case s[i] == '>':
			b.pos += 1 + i + 1
			return token{typ: tokStart, atom: at, data: name, attr: b.keepAttrs()}
		case s[i] == '/':
			if i+1 >= len(s) || s[i+1] != '>' {
				unsure()
			}
			b.pos += 1 + i + 2 // self-closing: the same to HTML elements
			return token{typ: tokStart, atom: at, data: name, attr: b.keepAttrs(), selfClosing: true}
		case i > n && !spaceSet[s[i-1]]:
			unsure() // attributes not apart
		}
		i = b.attribute(s, i)
	}
}

// attribute reads the attribute at s[i:] into b.scratch and returns where
// it ends.
func (b *treeBuilder) attribute(s string, i int) int {
	k := i
	for k < len(s) && !attrEndSet[s[k]] {
		k++
	}
	if k == i {
		unsure()
	}
	key := s[i:k]
	j := skipSpace(s, k)
	val := ""
	if j < len(s) && s[j] == '=' {
		j = skipSpace(s, j+1)
		val, j = b.attrValue(s, j)
	} else {
		j = k
	}
	b.addAttr(key, val)
	return j
}

// attrValue reads a quoted or plain attribute value at s[j:].
func (b *treeBuilder) attrValue(s string, j int) (string, int) {
	if j >= len(s) {
		unsure()
	}
	if q := s[j]; q == '"' || q == '\'' {
		end := strings.IndexByte(s[j+1:], q)
		if end < 0 {
			unsure()
		}
		return b.attrText(s[j+1 : j+1+end]), j + 1 + end + 1
	}
	k := j
	for k < len(s) && !plainEndSet[s[k]] {
		if plainBadSet[s[k]] {
			unsure()
		}
		k++
	}
	if k == j {
		unsure()
	}
	return b.attrText(s[j:k]), k
}

// addAttr adds an attribute to the tag being read; a repeated one is
// dropped, as the tokenizer drops it. The key is the page's own text (or
// its lower-case copy), not the atom table's: the same string, without an
// atom.Lookup per attribute (addAttr went from 15% to 8% of the tree's
// CPU on BenchmarkExtract's page, seven attributes an item; pprof).
func (b *treeBuilder) addAttr(key, val string) {
	key = b.own(lowerASCII(key))
	for _, x := range b.scratch {
		if x.Key == key {
			return
		}
	}
	b.scratch = append(b.scratch, html.Attribute{Key: key, Val: val})
}

// keepAttrs moves the tag's attributes to the block they live in.
func (b *treeBuilder) keepAttrs() []html.Attribute {
	n := len(b.scratch)
	if n == 0 {
		return nil
	}
	if n > blockSize {
		out := make([]html.Attribute, n) // a tag of many attributes
		copy(out, b.scratch)
		b.heldAttrs = append(b.heldAttrs, out)
		return out
	}
	if len(b.attrs) < n {
		bl := attrBlocks.Get().(*[blockSize]html.Attribute)
		b.found.attrs = append(b.found.attrs, bl)
		b.attrs = bl[:]
	}
	out := b.attrs[:n:n]
	for i, x := range b.scratch { // in a block: plain words
		setString(&out[i].Key, x.Key)
		setString(&out[i].Val, x.Val)
	}
	b.attrs = b.attrs[n:]
	return out
}

// rawText reads the text of a raw text element up to its end tag, and the
// end tag.
func (b *treeBuilder) rawText(at a.Atom, name string) string {
	s := b.src[b.pos:]
	for i := 0; ; {
		j := strings.Index(s[i:], "</")
		if j < 0 {
			unsure() // no end tag: the text runs to EOF
		}
		i += j
		if end, ok := rawEnd(s[i+2:], name); ok {
			text := s[:i]
			if at == a.Script && strings.Contains(text, "<!--") {
				unsure() // escaped script data
			}
			b.pos += i + 2 + end
			text = b.textOf(text, at == a.Title || at == a.Textarea)
			if b.sink != nil {
				if text != "" {
					b.sink.Text(text) // the tokenizer's raw text token
				}
				b.sink.EndTag(name)
			}
			return text
		}
		i += 2
	}
}

// rawEnd reports whether s (after "</") ends a raw text element named
// name, and its length to the '>'.
func rawEnd(s, name string) (int, bool) {
	if len(s) < len(name) || !strings.EqualFold(s[:len(name)], name) {
		return 0, false
	}
	rest := s[len(name):]
	if rest == "" || !tagEndSet[rest[0]] {
		return 0, false
	}
	trimmed := rest[skipSpace(rest, 0):]
	if trimmed == "" || trimmed[0] != '>' {
		unsure()
	}
	return len(s) - len(trimmed) + 1, true
}

// attrText is an attribute value as the tokenizer gives it: newlines
// normalised, character references decoded as in an attribute, where
// "&name" without ';' stands when followed by '=' or when name is no
// entity of its own.
func (b *treeBuilder) attrText(s string) string {
	s = b.textOf(s, false)
	if !b.amp || strings.IndexByte(s, '&') < 0 {
		return s
	}
	var out strings.Builder
	for {
		i := strings.IndexByte(s, '&')
		if i < 0 {
			out.WriteString(s)
			return b.own(out.String())
		}
		out.WriteString(s[:i])
		n := refLen(s[i:])
		out.WriteString(attrRef(s[i:i+n], s[i+n:]))
		s = s[i+n:]
	}
}

// refLen is the length of the character reference s starts with ("&"
// and its name or number, with its ';').
func refLen(s string) int {
	i := 1
	if i < len(s) && s[i] == '#' {
		i++
		if i < len(s) && (s[i] == 'x' || s[i] == 'X') {
			i++
		}
	}
	for i < len(s) && (isLetter(s[i]) || '0' <= s[i] && s[i] <= '9') {
		i++
	}
	if i < len(s) && s[i] == ';' {
		i++
	}
	return i
}

// attrRef decodes the reference ref, followed by rest, in an attribute.
func attrRef(ref, rest string) string {
	name := ref[1:]
	switch {
	case name == "":
		return ref
	case name[0] == '#':
		return html.UnescapeString(ref) // numbers read the same everywhere
	case name[len(name)-1] == ';':
		// A full name: decoded when it is an entity, which text decodes
		// other than its prefix followed by ";".
		if got := html.UnescapeString(ref); got != html.UnescapeString(ref[:len(ref)-1])+";" {
			return got
		}
		return ref
	case rest != "" && rest[0] == '=':
		return ref
	}
	// Without ';': decoded only when the whole name is an entity, which
	// text decodes other than its prefix and last letter.
	if got := html.UnescapeString(ref); got != html.UnescapeString(ref[:len(ref)-1])+ref[len(ref)-1:] {
		return got
	}
	return ref
}
