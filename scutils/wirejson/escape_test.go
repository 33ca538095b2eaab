package wirejson_test

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/wirejson"
)

// alphabet holds the characters every escaping treats apart, and plain ones.
var alphabet = []string{"a", "Z", " ", "/", "\x00", "\x1f", "\b", "\f", "\n", "\r", "\t", `"`, `\`, "é", "\u2028", "\u2029",
	"\xff", "\xe2\x80", "<", ">", "&", "\U0001F600", "\x7f"}

// randomText mixes the alphabet with long plain runs (which the escaper
// skips 8 bytes at a time).
func randomText(rng *rand.Rand) string {
	var b strings.Builder
	for range rng.IntN(40) {
		if rng.IntN(2) == 0 {
			b.WriteString("plain text ")
		}
		b.WriteString(alphabet[rng.IntN(len(alphabet))])
	}
	return b.String()
}

// reference is s as encoding/json writes it, then with HexBF backspace and
// form feed rewritten as \u0008 and \u000c.
func reference(t testing.TB, s string, opts wirejson.Options) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(opts&wirejson.EscapeHTML != 0)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	out := strings.TrimSuffix(b.String(), "\n")
	if opts&wirejson.HexBF == 0 {
		return out
	}
	var hex strings.Builder
	for i := 0; i < len(out); i++ {
		if out[i] != '\\' {
			hex.WriteByte(out[i])
			continue
		}
		i++
		switch out[i] {
		case 'b':
			hex.WriteString(`\u0008`)
		case 'f':
			hex.WriteString(`\u000c`)
		default:
			hex.WriteByte('\\')
			hex.WriteByte(out[i])
		}
	}
	return hex.String()
}

var styles = map[string]wirejson.Options{
	"Go": wirejson.Go, "KafkaMonitor": wirejson.KafkaMonitor, "LogLine": wirejson.LogLine,
	"EscapeHTML alone": wirejson.EscapeHTML,
}

func TestAppendStringEscapesAsEncodingJSONInEachStyle(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		escapesAsReference(t, randomText(rng))
	}
}

// escapesAsReference fails t unless AppendString escapes s in each style
// as the reference does.
func escapesAsReference(t *testing.T, s string) {
	t.Helper()
	for name, opts := range styles {
		want := reference(t, s, opts)
		if got := wirejson.AppendString([]byte("prefix"), s, opts); string(got) != "prefix"+want {
			t.Fatalf("%s: AppendString(%q) = %s, want %s", name, s, got, want)
		}
	}
}

func TestTheStylesEscapeAsTheirReadersExpect(t *testing.T) {
	const s = "<a href=\"x\">&\b\f\x01\u2028\xff</a>"
	for _, tc := range []struct {
		name string
		opts wirejson.Options
		want string
	}{
		{"Go", wirejson.Go, `"<a href=\"x\">&\b\f\u0001\u2028\ufffd</a>"`},
		{"KafkaMonitor", wirejson.KafkaMonitor, `"\u003ca href=\"x\"\u003e\u0026\u0008\u000c\u0001\u2028\ufffd\u003c/a\u003e"`},
		{"LogLine", wirejson.LogLine, `"<a href=\"x\">&\u0008\u000c\u0001\u2028\ufffd</a>"`},
	} {
		if got := wirejson.AppendString(nil, s, tc.opts); string(got) != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestAppendTextStopsBeforeTheFirstCharacterThatDoesNotFit(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 1000 {
		s := randomText(rng)
		for name, opts := range styles {
			quoted := reference(t, s, opts)
			whole, taken := wirejson.AppendText(nil, s, -1, opts)
			if string(whole) != quoted[1:len(quoted)-1] || taken != len(s) {
				t.Fatalf("%s: AppendText(%q) = %s (took %d), want %s", name, s, whole, taken, quoted)
			}
			for room := 0; room < len(whole); room++ {
				out, taken := wirejson.AppendText([]byte{}, s, room, opts)
				if len(out) > room || !bytes.HasPrefix(whole, out) {
					t.Fatalf("%s: %q in %d bytes: %q", name, s, room, out)
				}
				_, width := utf8.DecodeRuneInString(s[taken:])
				if next, _ := wirejson.AppendText(nil, s[taken:taken+width], -1, opts); len(out)+len(next) <= room {
					t.Fatalf("%s: %q in %d bytes: stopped at byte %d, but the next character fits", name, s, room, taken)
				}
			}
		}
	}
}

func FuzzAppendStringEscapesAsEncodingJSON(f *testing.F) {
	for _, s := range alphabet {
		f.Add(s + "plain text<&>" + s)
	}
	f.Fuzz(escapesAsReference)
}

// BenchmarkAppendString escapes a page body of the test site's kind (2 KiB
// of HTML), as the crawler does once per page.
func BenchmarkAppendString(b *testing.B) {
	body := strings.Repeat(`<li><a href="/page/1/2/3">page "1/2/3"</a></li>`+"\n", 40)
	buf := make([]byte, 0, 4096)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		buf = wirejson.AppendString(buf[:0], body, wirejson.Go)
	}
}

// AppendStrings writes a list as encoding/json writes a []string without
// HTML escaping (wirejson.Go): null for nil, [] for empty, each string
// escaped as AppendString does.
func TestAppendStringsWritesListsAsEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	lists := [][]string{nil, {}, {""}, {"a", `"q"`, "\xff", "<&>", "\u2028"}}
	for range 50 {
		l := make([]string, rng.IntN(5))
		for i := range l {
			l[i] = randomText(rng)
		}
		lists = append(lists, l)
	}
	for _, l := range lists {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(l); err != nil {
			t.Fatal(err)
		}
		want := "prefix" + strings.TrimSuffix(buf.String(), "\n")
		if got := wirejson.AppendStrings([]byte("prefix"), l, wirejson.Go); string(got) != want {
			t.Fatalf("AppendStrings(%q) = %s, want %s", l, got, want)
		}
	}
}
