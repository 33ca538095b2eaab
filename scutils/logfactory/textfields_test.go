package logfactory

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

const linePrefix = "2017-02-01 15:27:48,814 [scrapy-cluster] INFO: m"

func TestTextFieldsAreWrittenAsLogfmtPairs(t *testing.T) {
	type point struct {
		X    int    `json:"x"`
		Name string `json:"name"`
		skip int
	}
	tests := []struct {
		name  string
		extra Extra
		want  string // what follows the message
	}{
		{"a line without extras is the message alone", nil, ""},
		{"an empty extras map adds nothing", Extra{}, ""},
		{"plain text is written bare", Extra{"url": "http://example.com/a?b=1"}, ` url="http://example.com/a?b=1"`},
		{"a URL without '=' stays bare", Extra{"url": "http://example.com/a/b.html"}, " url=http://example.com/a/b.html"},
		{"a space is quoted", Extra{"error": "connection refused"}, ` error="connection refused"`},
		{"an equals sign is quoted", Extra{"q": "a=b"}, ` q="a=b"`},
		{"a double quote is quoted and escaped", Extra{"q": `say "hi"`}, ` q="say \"hi\""`},
		{"a lone double quote is quoted", Extra{"q": `"`}, ` q="\""`},
		{"a backslash alone stays bare", Extra{"path": `C:\dir`}, ` path=C:\dir`},
		{"a backslash in a quoted value is escaped", Extra{"path": `C:\my dir`}, ` path="C:\\my dir"`},
		{"an empty value is two quotes", Extra{"appid": ""}, ` appid=""`},
		{"a newline is escaped", Extra{"stack": "a\nb"}, ` stack="a\nb"`},
		{"a tab is escaped", Extra{"t": "a\tb"}, ` t="a\tb"`},
		{"a control character is escaped", Extra{"c": "a\x00b\x1b"}, ` c="a\x00b\x1b"`},
		{"DEL is escaped", Extra{"c": "a\x7f"}, ` c="a\x7f"`},
		{"a line separator is escaped", Extra{"c": "a\u2028b"}, ` c="a\u2028b"`},
		{"a no-break space is escaped", Extra{"c": "a\u00a0b"}, ` c="a\u00a0b"`},
		{"invalid UTF-8 is escaped byte by byte", Extra{"c": "a\xffb"}, ` c="a\xffb"`},
		{"printable non-ASCII stays as is", Extra{"c": "café→日本"}, " c=café→日本"},
		{"printable non-ASCII is kept inside quotes", Extra{"c": "café au lait"}, ` c="café au lait"`},
		{"numbers and booleans are their text", Extra{"i": 4, "n": int64(-7), "u": uint8(3), "f": 1.5, "g": 4.0, "ok": true, "no": false},
			" f=1.5 g=4 i=4 n=-7 no=false ok=true u=3"},
		{"big and small floats are written as JSON writes them", Extra{"big": 1e21, "mid": 1500000.0, "small": 1e-7}, " big=1e+21 mid=1500000 small=1e-7"},
		{"non-finite floats have names", Extra{"a": math.NaN(), "b": math.Inf(1), "c": math.Inf(-1)}, " a=NaN b=+Inf c=-Inf"},
		{"nil is null", Extra{"none": nil, "ptr": (*int)(nil)}, " none=null ptr=null"},
		{"an error is its text", Extra{"error": errors.New("dial tcp: refused")}, ` error="dial tcp: refused"`},
		{"a Stringer is its text", Extra{"took": 1500 * time.Millisecond}, " took=1.5s"},
		{"bytes are text", Extra{"b": []byte("raw")}, " b=raw"},
		{"a map is compact JSON, quoted", Extra{"attrs": map[string]any{"b": []int{1, 2}, "a": "x y"}}, ` attrs="{\"a\":\"x y\",\"b\":[1,2]}"`},
		{"an empty map is bare JSON", Extra{"attrs": map[string]any{}}, " attrs={}"},
		{"a list is compact JSON", Extra{"codes": []int{200, 404}}, " codes=[200,404]"},
		{"a list of strings is quoted JSON", Extra{"l": []string{"a"}}, ` l="[\"a\"]"`},
		{"a struct is JSON of its exported fields", Extra{"p": point{X: 1, Name: "n", skip: 2}}, ` p="{\"x\":1,\"name\":\"n\"}"`},
		{"raw JSON is its text", Extra{"attrs": json.RawMessage(`{"k":1}`)}, ` attrs="{\"k\":1}"`},
		{"an unencodable value keeps the line", Extra{"ch": make(chan int)}, ` ch="<chan int>"`},
		{"keys with spaces, '=' or quotes get underscores", Extra{"a b": 1, "c=d": 2, `e"f`: 3, "": 4}, " _=4 a_b=1 c_d=2 e_f=3"},
		{"well-known keys come first in their order, then the rest sorted",
			Extra{"zeta": 1, "error": "e", "reason": "r", "uuid": "u", "spiderid": "link", "crawlid": "c", "appid": "a", "url": "http://x/", "alpha": 2},
			" url=http://x/ appid=a crawlid=c spiderid=link uuid=u reason=r error=e alpha=2 zeta=1"},
		{"fields clashing with a line's own are renamed", Extra{"message": "m2", "level": "x"}, " fields.level=x fields.message=m2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, buf := newBuffered(t, Config{TextFields: true})
			l.Info("m", tt.extra)
			if got, want := buf.String(), linePrefix+tt.want+"\n"; got != want {
				t.Errorf("got  %q\nwant %q", got, want)
			}
		})
	}
}

func TestTextFieldValuesAreCutAtTheirLimit(t *testing.T) {
	long := strings.Repeat("a", maxTextValueBytes)
	tests := []struct {
		name  string
		value any
		want  string
	}{
		{"a value at the limit is whole", long, long},
		{"a longer value is cut with its length", long + "bcd", `"` + long + `...(1027 bytes)"`},
		{"a huge body is cut", strings.Repeat("x", 5<<20), `"` + strings.Repeat("x", maxTextValueBytes) + `...(5242880 bytes)"`},
		{"a cut never splits a character", strings.Repeat("a", maxTextValueBytes-1) + "é", `"` + strings.Repeat("a", maxTextValueBytes-1) + `...(1025 bytes)"`},
		{"nested values are cut after encoding", map[string]string{"k": long}, `"{\"k\":\"` + long[:maxTextValueBytes-6] + `...(1032 bytes)"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, buf := newBuffered(t, Config{TextFields: true})
			l.Info("m", Extra{"v": tt.value})
			if got, want := buf.String(), linePrefix+" v="+tt.want+"\n"; got != want {
				t.Errorf("got  %.300q...\nwant %.300q...", got, want)
			}
		})
	}
}

func TestTextFieldsOfALineAreBounded(t *testing.T) {
	l, buf := newBuffered(t, Config{TextFields: true})
	extra := Extra{"url": "http://example.com/", "crawlid": "abc"}
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"} {
		extra["body_"+k] = strings.Repeat(k, 10_000)
	}
	l.Info("m", extra)
	line := strings.TrimSuffix(buf.String(), "\n")
	if strings.Contains(line, "\n") {
		t.Fatalf("more than one line: %q", line)
	}
	fields := strings.TrimPrefix(line, linePrefix)
	if len(fields) > maxTextFieldsBytes+len(" ...(99 more fields)") {
		t.Errorf("fields take %d bytes, want at most %d", len(fields), maxTextFieldsBytes)
	}
	if !strings.HasPrefix(fields, " url=http://example.com/ crawlid=abc body_a=") {
		t.Errorf("the well-known fields should come first: %.100s", fields)
	}
	// 8 KiB hold 7 values of ~1 KiB: the other 5 are counted.
	if !strings.HasSuffix(fields, " ...(5 more fields)") {
		t.Errorf("line should end by counting the fields left out: ...%s", fields[len(fields)-40:])
	}
}

func TestBareTextIsTheOriginalFormatByteForByte(t *testing.T) {
	// The lines of TestTextFormatIsByteExact with their extras: with
	// TextFields off (LOG_TEXT_FIELDS=false) the extras are not written.
	s, err := settings.Load(Settings("").Group("scrapy-cluster", "x.log"), settings.Options{NoEnv: true, Flags: map[string]string{"LOG_TEXT_FIELDS": "false", "LOG_LEVEL": "DEBUG"}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Settings("").Config(s)
	if cfg.TextFields {
		t.Fatal("LOG_TEXT_FIELDS=false left TextFields on")
	}
	l, buf := newBuffered(t, cfg)
	logOriginalLines(l)
	if got := buf.String(); got != originalText {
		t.Errorf("bare output:\n got %q\nwant %q", got, originalText)
	}
}

func TestEveryLineHasItsOwnKeysInOrderWhateverCameBefore(t *testing.T) {
	for _, format := range []struct {
		name string
		cfg  Config
	}{{"text", Config{TextFields: true}}, {"json", Config{JSON: true}}} {
		l, buf := newBuffered(t, format.cfg)
		lines := []Extra{
			{"url": "u", "zeta": 1, "alpha": 2},
			{"url": "u", "zeta": 1, "alpha": 2}, // the same keys again
			{"url": "u", "zeta": 1, "beta": 2},  // as many, one other
			{"url": "u", "zeta": 1, "message": 2},
			{"url": "u", "zeta": 1, "fields.message": 2},
			{"url": "u", "zeta": 1, "alpha": 2},
		}
		var want strings.Builder
		for _, extra := range lines {
			l.Info("m", extra)
			// What a logger that never saw another line writes.
			fresh, freshBuf := newBuffered(t, format.cfg)
			fresh.Info("m", extra)
			want.WriteString(freshBuf.String())
		}
		if got := buf.String(); got != want.String() {
			t.Errorf("%s lines:\n got %q\nwant %q", format.name, got, want.String())
		}
		if !strings.Contains(buf.String(), "beta") || !strings.Contains(buf.String(), "fields.message") {
			t.Errorf("%s lines lost a field:\n%s", format.name, buf.String())
		}
	}
}

func TestTextFieldsAreOnByDefaultAndPrefixedForTheCrawler(t *testing.T) {
	if !DefaultConfig().TextFields {
		t.Error("DefaultConfig().TextFields is false")
	}
	s, err := settings.Load(Settings("SC_").Group("sc-crawler", "sc_crawler.log"), settings.Options{NoEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	if !Settings("SC_").Config(s).TextFields {
		t.Error("SC_LOG_TEXT_FIELDS does not default to true")
	}
	s, err = settings.Load(Settings("SC_").Group("sc-crawler", "sc_crawler.log"), settings.Options{Environ: []string{"SC_LOG_TEXT_FIELDS=false", "LOG_TEXT_FIELDS=true"}})
	if err != nil {
		t.Fatal(err)
	}
	if Settings("SC_").Config(s).TextFields {
		t.Error("SC_LOG_TEXT_FIELDS=false did not turn the fields off")
	}
}

func TestIncludeExtraWinsOverTextFields(t *testing.T) {
	l, buf := newBuffered(t, Config{TextFields: true, IncludeExtra: true})
	l.Info("m", Extra{"a": 1})
	if got, want := buf.String(), linePrefix+" {'a': 1}\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestTextFieldsLeaveJSONLinesAlone(t *testing.T) {
	l, buf := newBuffered(t, Config{JSON: true, TextFields: true, Now: fixedClock(jsonTime)})
	l.Info("m", Extra{"url": "http://x/", "body": strings.Repeat("b", 2000)})
	want := `{"message": "m", "logger": "scrapy-cluster", "timestamp": "2017-02-01T20:29:24.548895Z", "level": "INFO", "body": "` +
		strings.Repeat("b", 2000) + `", "url": "http://x/"}` + "\n"
	if buf.String() != want {
		t.Errorf("json line changed: %.200s", buf.String())
	}
}

// BenchmarkTextLine writes a line with the fields of a crawl request as the
// Kafka Monitor logs one per request (decoded with UseNumber), in each format.
func BenchmarkTextLine(b *testing.B) {
	extra := Extra{"url": "http://example.com/some/page.html", "appid": "testapp", "crawlid": "abc123", "spiderid": "link",
		"priority": json.Number("1"), "maxdepth": json.Number("1"), "expires": json.Number("0"), "useragent": nil, "cookie": nil,
		"attrs": map[string]any{"customer": "abc"}, "allowed_domains": nil, "allow_regex": nil, "deny_regex": nil,
		"deny_extensions": nil, "domain_max_pages": nil}
	for _, bc := range []struct {
		name string
		cfg  Config
	}{{"bare", Config{}}, {"fields", Config{TextFields: true}}, {"json", Config{JSON: true}}} {
		b.Run(bc.name, func(b *testing.B) {
			cfg := bc.cfg
			cfg.Output = discard{}
			l, err := New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				l.Info("Scraped page", extra)
			}
		})
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
