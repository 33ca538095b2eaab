package logfactory

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// textTime and jsonTime are the instants of the spec's examples. textTime is
// in the local zone so its text rendering does not depend on TZ.
var (
	textTime = time.Date(2017, 2, 1, 15, 27, 48, 814_999_000, time.Local)
	jsonTime = time.Date(2017, 2, 1, 20, 29, 24, 548_895_000, time.UTC)
)

func fixedClock(t time.Time) func() time.Time { return func() time.Time { return t } }

// newBuffered returns a logger writing into a buffer, stamped at textTime
// unless cfg has a clock.
func newBuffered(t *testing.T, cfg Config) (*Logger, *bytes.Buffer) {
	t.Helper()
	var buf bytes.Buffer
	cfg.Output = &buf
	if cfg.Now == nil {
		cfg.Now = fixedClock(textTime)
	}
	l, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return l, &buf
}

func lines(buf *bytes.Buffer) []string {
	s := strings.TrimSuffix(buf.String(), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// logOriginalLines logs the lines of the original's text-format example,
// each with extras; originalText is what the original writes for them.
func logOriginalLines(l *Logger) {
	l.Debug("debug output 1", Extra{"url": "http://x/"})
	l.Info("Info output closing.", Extra{"sum": 4})
	l.Warn("warn output", Extra{"error": "a b"})
	l.Warning("warning output", Extra{"n": 1})
	l.Error("Final var value", Extra{"value": 2})
	l.Critical("critical fault, closing")
}

const originalText = "" +
	"2017-02-01 15:27:48,814 [scrapy-cluster] DEBUG: debug output 1\n" +
	"2017-02-01 15:27:48,814 [scrapy-cluster] INFO: Info output closing.\n" +
	"2017-02-01 15:27:48,814 [scrapy-cluster] WARNING: warn output\n" +
	"2017-02-01 15:27:48,814 [scrapy-cluster] WARNING: warning output\n" +
	"2017-02-01 15:27:48,814 [scrapy-cluster] ERROR: Final var value\n" +
	"2017-02-01 15:27:48,814 [scrapy-cluster] CRITICAL: critical fault, closing\n"

// The extras are not shown without IncludeExtra (or TextFields).
func TestTextFormatIsByteExact(t *testing.T) {
	l, buf := newBuffered(t, Config{Level: "DEBUG"})
	logOriginalLines(l)
	if got := buf.String(); got != originalText {
		t.Errorf("text output:\n got %q\nwant %q", got, originalText)
	}
}

func TestTextTimestampIsLocalTime(t *testing.T) {
	// Python's asctime is local time; make local time differ from UTC.
	saved := time.Local
	time.Local = time.FixedZone("EST", -5*3600)
	t.Cleanup(func() { time.Local = saved })
	at := time.Date(2017, 2, 1, 20, 29, 24, 5_000_000, time.UTC)
	l, buf := newBuffered(t, Config{Now: fixedClock(at)})
	l.Info("x")
	want := "2017-02-01 15:29:24,005 [scrapy-cluster] INFO: x\n"
	if buf.String() != want {
		t.Errorf("got %q, want %q", buf.String(), want)
	}
}

func TestJSONFormatIsByteExact(t *testing.T) {
	l, buf := newBuffered(t, Config{JSON: true, Now: fixedClock(jsonTime)})
	l.Warn("warn output", Extra{"key": "value", "key2": "value2"})
	l.Info("Info output closing.", Extra{"sum": 4})
	l.Error("Final var value", Extra{"value": 2})
	l.Critical("<tag> & \"quotes\"\n", Extra{"nested": map[string]any{"b": []int{1, 2}, "a": "x,y:z"}, "ok": true, "none": nil, "f": 1.5})
	want := "" +
		`{"message": "warn output", "logger": "scrapy-cluster", "timestamp": "2017-02-01T20:29:24.548895Z", "level": "WARNING", "key": "value", "key2": "value2"}` + "\n" +
		`{"message": "Info output closing.", "logger": "scrapy-cluster", "timestamp": "2017-02-01T20:29:24.548895Z", "level": "INFO", "sum": 4}` + "\n" +
		`{"message": "Final var value", "logger": "scrapy-cluster", "timestamp": "2017-02-01T20:29:24.548895Z", "level": "ERROR", "value": 2}` + "\n" +
		`{"message": "<tag> & \"quotes\"\n", "logger": "scrapy-cluster", "timestamp": "2017-02-01T20:29:24.548895Z", "level": "CRITICAL", "f": 1.5, "nested": {"a": "x,y:z", "b": [1, 2]}, "none": null, "ok": true}` + "\n"
	if got := buf.String(); got != want {
		t.Errorf("json output:\n got %s\nwant %s", got, want)
	}
	for _, line := range lines(buf) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Errorf("line is not JSON: %v: %s", err, line)
		}
	}
}

// Backspace and form feed are written \u0008 and \u000c in a line's own
// strings but \b and \f in nested values, as the JSON lines always had
// them: the bytes stay.
func TestJSONLinesWriteBackspaceAndFormFeedAsTheyAlwaysDid(t *testing.T) {
	l, buf := newBuffered(t, Config{JSON: true, Now: fixedClock(jsonTime)})
	l.Info("b\bf\f", Extra{"k\b": "v\f", "nested": []string{"\b\f"}})
	want := `{"message": "b\u0008f\u000c", "logger": "scrapy-cluster", "timestamp": "2017-02-01T20:29:24.548895Z", "level": "INFO", ` +
		`"k\u0008": "v\u000c", "nested": ["\b\f"]}` + "\n"
	if got := buf.String(); got != want {
		t.Errorf("json output:\n got %s\nwant %s", got, want)
	}
}

func TestJSONTimestampIsUTCWithMicroseconds(t *testing.T) {
	at := time.Date(2017, 2, 1, 15, 29, 24, 548_895_999, time.FixedZone("EST", -5*3600))
	l, buf := newBuffered(t, Config{JSON: true, Now: fixedClock(at)})
	l.Info("x")
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	if m["timestamp"] != "2017-02-01T20:29:24.548895Z" {
		t.Errorf("timestamp = %v", m["timestamp"])
	}
}

func TestJSONStringsAreEscaped(t *testing.T) {
	l, buf := newBuffered(t, Config{JSON: true})
	msg := "tab\tnl\nctl\x01 bad\xff utf8 é \u2028 <>&"
	l.Info(msg, Extra{"k\"ey": msg})
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatalf("not JSON: %v: %s", err, buf)
	}
	want := strings.ToValidUTF8(msg, "\ufffd")
	if m["message"] != want || m["k\"ey"] != want {
		t.Errorf("round trip: got %q / %q, want %q", m["message"], m["k\"ey"], want)
	}
	if !strings.Contains(buf.String(), "é") || !strings.Contains(buf.String(), "<>&") {
		t.Errorf("UTF-8 and <>& should be written as is: %s", buf)
	}
}

func TestLevelFiltering(t *testing.T) {
	// The spec's table: each logger level writes itself and the levels above.
	tests := []struct {
		level string
		want  []string
	}{
		{"DEBUG", []string{"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}},
		{"INFO", []string{"INFO", "WARNING", "ERROR", "CRITICAL"}},
		{"WARNING", []string{"WARNING", "ERROR", "CRITICAL"}},
		{"WARN", []string{"WARNING", "ERROR", "CRITICAL"}},
		{"ERROR", []string{"ERROR", "CRITICAL"}},
		{"CRITICAL", []string{"CRITICAL"}},
		{"", []string{"INFO", "WARNING", "ERROR", "CRITICAL"}},
		{"debug", []string{"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}},
	}
	for _, tt := range tests {
		t.Run("level "+tt.level, func(t *testing.T) {
			l, buf := newBuffered(t, Config{Level: tt.level})
			l.Debug("m")
			l.Info("m")
			l.Warn("m")
			l.Error("m")
			l.Critical("m")
			var got []string
			for _, line := range lines(buf) {
				_, rest, _ := strings.Cut(line, "] ")
				lvl, _, _ := strings.Cut(rest, ":")
				got = append(got, lvl)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("written levels = %v, want %v", got, tt.want)
			}
			for _, lvl := range []Level{LevelDebug, LevelInfo, LevelWarning, LevelError, LevelCritical} {
				written := strings.Contains(","+strings.Join(tt.want, ",")+",", ","+lvl.String()+",")
				if l.Enabled(lvl) != written {
					t.Errorf("Enabled(%v) = %v, want %v", lvl, l.Enabled(lvl), written)
				}
			}
		})
	}
}

func TestUnknownLevelIsAnError(t *testing.T) {
	for _, lvl := range []string{"VERBOSE", "TRACE", "FATAL", "INFOO", "<=INFO"} {
		if _, err := New(Config{Level: lvl, Output: &bytes.Buffer{}}); err == nil || !strings.Contains(err.Error(), "unknown log level") {
			t.Errorf("New(Level %q) error = %v, want unknown log level", lvl, err)
		}
	}
}

func TestIncludeExtraAppendsPythonDict(t *testing.T) {
	l, buf := newBuffered(t, Config{IncludeExtra: true})
	l.Warn("warn output", Extra{"key2": "value2", "key": "value"})
	l.Warn("warn output 2")
	l.Info("empty", Extra{})
	l.Info("types", Extra{
		"int": 4, "float": 4.0, "small": 1e-05, "big": 1e16, "bool": true, "none": nil,
		"list": []any{"a", 1, false}, "map": map[string]int{"b": 2, "a": 1},
		"quote": "it's", "both": `'"`, "ctl": "a\tb\x00", "err": errors.New("boom"), "dur": 1500 * time.Millisecond,
	})
	want := "" +
		"2017-02-01 15:27:48,814 [scrapy-cluster] WARNING: warn output {'key': 'value', 'key2': 'value2'}\n" +
		"2017-02-01 15:27:48,814 [scrapy-cluster] WARNING: warn output 2\n" +
		"2017-02-01 15:27:48,814 [scrapy-cluster] INFO: empty\n" +
		"2017-02-01 15:27:48,814 [scrapy-cluster] INFO: types {'big': 1e+16, 'bool': True, 'both': '\\'\"', " +
		"'ctl': 'a\\tb\\x00', 'dur': '1.5s', 'err': 'boom', 'float': 4.0, 'int': 4, 'list': ['a', 1, False], " +
		"'map': {'a': 1, 'b': 2}, 'none': None, 'quote': \"it's\", 'small': 1e-05}\n"
	if got := buf.String(); got != want {
		t.Errorf("include_extra output:\n got %q\nwant %q", got, want)
	}
}

func TestIncludeExtraIsIgnoredInJSON(t *testing.T) {
	l, buf := newBuffered(t, Config{JSON: true, IncludeExtra: true})
	l.Info("m", Extra{"a": 1})
	if strings.Contains(buf.String(), "{'") || !strings.Contains(buf.String(), `"a": 1`) {
		t.Errorf("got %s", buf)
	}
}

func TestExtrasNeverReplaceTheFixedFields(t *testing.T) {
	l, buf := newBuffered(t, Config{JSON: true, Now: fixedClock(jsonTime)})
	var seen map[string]any
	if err := l.RegisterCallback("*", func(_ string, extra map[string]any) { seen = extra }, nil); err != nil {
		t.Fatal(err)
	}
	extra := Extra{"message": "m2", "logger": "other", "timestamp": 0, "level": "DEBUG", "fields.level": "taken"}
	l.Info("real", extra)
	want := `{"message": "real", "logger": "scrapy-cluster", "timestamp": "2017-02-01T20:29:24.548895Z", "level": "INFO", ` +
		`"fields.fields.level": "DEBUG", "fields.level": "taken", "fields.logger": "other", "fields.message": "m2", "fields.timestamp": 0}` + "\n"
	if buf.String() != want {
		t.Errorf("got  %s\nwant %s", buf, want)
	}
	if seen["level"] != "DEBUG" || seen["message"] != "m2" || len(seen) != len(extra) {
		t.Errorf("callback should see the extras unrenamed, got %v", seen)
	}
}

type panicky struct{}

func (panicky) MarshalJSON() ([]byte, error) { panic("no") }

type failing struct{ Name string }

func (failing) MarshalJSON() ([]byte, error) { return nil, errors.New("nope") }

type nilStringer struct{ s *string }

func (n *nilStringer) String() string { return *n.s }

func TestUnencodableValuesKeepTheLine(t *testing.T) {
	cyclic := map[string]any{"a": 1}
	cyclic["self"] = cyclic
	list := []any{1}
	list[0] = list
	extra := Extra{
		"ch": make(chan int), "fn": func() {}, "nan": math.NaN(), "inf": math.Inf(-1), "cplx": complex(1, 2),
		"cyclic": cyclic, "list": list, "panicky": panicky{}, "failing": failing{Name: "n"},
		"err": errors.New("boom"), "deep": map[string]any{"fn": func() {}, "ok": []int{1}},
		"nilptr": (*nilStringer)(nil), "intkeys": map[int]string{2: "b", 1: "a"},
	}
	for _, mode := range []struct {
		name string
		json bool
	}{{"json", true}, {"text with extras", false}} {
		t.Run(mode.name, func(t *testing.T) {
			l, buf := newBuffered(t, Config{JSON: mode.json, IncludeExtra: true})
			l.Error("still here", extra)
			l.Error("next")
			got := lines(buf)
			if len(got) != 2 || !strings.Contains(got[0], "still here") {
				t.Fatalf("lines = %q", got)
			}
			if !mode.json {
				for _, part := range []string{"'ch': '<chan int>'", "'nan': nan", "'inf': -inf", "'err': 'boom'", "'nilptr': None", "'intkeys': {'1': 'a', '2': 'b'}", "'...'"} {
					if !strings.Contains(got[0], part) {
						t.Errorf("text line lacks %s: %s", part, got[0])
					}
				}
				return
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(got[0]), &m); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, got[0])
			}
			checks := map[string]any{
				"ch": "<chan int>", "fn": "<func()>", "nan": "NaN", "inf": "-Infinity", "cplx": "(1+2i)",
				"err": "boom", "nilptr": nil,
			}
			for k, want := range checks {
				if m[k] != want {
					t.Errorf("%s = %#v, want %#v", k, m[k], want)
				}
			}
			if f, _ := m["failing"].(map[string]any); f["Name"] != "n" {
				t.Errorf("failing = %#v, want its fields", m["failing"])
			}
			if d, _ := m["deep"].(map[string]any); d["fn"] != "<func()>" || fmt.Sprint(d["ok"]) != "[1]" {
				t.Errorf("deep = %#v", m["deep"])
			}
			if c, _ := m["cyclic"].(map[string]any); c["a"] != float64(1) || c["self"] == nil {
				t.Errorf("cyclic = %#v", m["cyclic"])
			}
			if _, ok := m["panicky"]; !ok {
				t.Errorf("panicky missing")
			}
		})
	}
}

func TestNamedAndWithShareOutputAndCallbacks(t *testing.T) {
	root, buf := newBuffered(t, Config{JSON: true, Now: fixedClock(jsonTime)})
	calls := 0
	if err := root.RegisterCallback("INFO", func(string, map[string]any) { calls++ }, Extra{"appid": "a"}); err != nil {
		t.Fatal(err)
	}
	km := root.Named("kafka-monitor").With(Extra{"appid": "a", "host": "h1"})
	km.Info("from child", Extra{"host": "h2"})
	root.Info("from root")
	if got := root.Named("").Name(); got != "scrapy-cluster" {
		t.Errorf("Named(\"\") name = %q", got)
	}
	want := `{"message": "from child", "logger": "kafka-monitor", "timestamp": "2017-02-01T20:29:24.548895Z", "level": "INFO", "appid": "a", "host": "h2"}` + "\n" +
		`{"message": "from root", "logger": "scrapy-cluster", "timestamp": "2017-02-01T20:29:24.548895Z", "level": "INFO"}` + "\n"
	if buf.String() != want {
		t.Errorf("got  %s\nwant %s", buf, want)
	}
	if calls != 1 {
		t.Errorf("callback ran %d times, want 1 (fixed fields count as extras)", calls)
	}
	if km.Name() != "kafka-monitor" || root.Name() != "scrapy-cluster" || km.Level() != LevelInfo {
		t.Errorf("names/levels: %q %q %v", km.Name(), root.Name(), km.Level())
	}
}

func TestCriticalNeitherExitsNorPanics(t *testing.T) {
	l, buf := newBuffered(t, Config{Level: "CRITICAL"})
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("Critical panicked: %v", r)
			}
		}()
		l.Critical("critical fault, closing")
		l.Log(LevelCritical+3, "beyond critical")
	}()
	if got := len(lines(buf)); got != 2 {
		t.Errorf("wrote %d lines, want 2", got)
	}
}

// chunkyWriter writes a byte at a time and yields, so unserialized writers
// would interleave (and the race detector would see it).
type chunkyWriter struct{ buf bytes.Buffer }

func (w *chunkyWriter) Write(p []byte) (int, error) {
	for i, c := range p {
		w.buf.WriteByte(c)
		if i%16 == 0 {
			runtime.Gosched()
		}
	}
	return len(p), nil
}

func TestConcurrentLoggingWritesWholeLines(t *testing.T) {
	const goroutines, perG = 32, 200
	w := &chunkyWriter{}
	l, err := New(Config{JSON: true, Level: "DEBUG", Output: w})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	fired := 0
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			child := l.Named(fmt.Sprintf("g%d", g)).With(Extra{"g": g})
			if g%8 == 0 { // register while others log
				if err := l.RegisterCallback(">=INFO", func(string, map[string]any) {
					mu.Lock()
					fired++
					mu.Unlock()
				}, Extra{"g": 0}); err != nil {
					t.Error(err)
				}
			}
			for i := range perG {
				child.Log(Level(i%5), "concurrent line with some padding to make it longer", Extra{"i": i})
			}
		}()
	}
	wg.Wait()

	seen := make(map[[2]int]bool)
	got := strings.Split(strings.TrimSuffix(w.buf.String(), "\n"), "\n")
	for _, line := range got {
		var m struct {
			Message string `json:"message"`
			Logger  string `json:"logger"`
			G       int    `json:"g"`
			I       int    `json:"i"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("broken line %q: %v", line, err)
		}
		if m.Logger != fmt.Sprintf("g%d", m.G) {
			t.Errorf("line of goroutine %d has logger %q", m.G, m.Logger)
		}
		seen[[2]int{m.G, m.I}] = true
	}
	if len(got) != goroutines*perG || len(seen) != goroutines*perG {
		t.Errorf("lines = %d, distinct = %d, want %d", len(got), len(seen), goroutines*perG)
	}
	if fired == 0 {
		t.Errorf("callbacks registered during logging never ran")
	}
}

func TestParseLevelAndString(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Level
	}{{"DEBUG", LevelDebug}, {" info ", LevelInfo}, {"Warn", LevelWarning}, {"WARNING", LevelWarning}, {"error", LevelError}, {"CRITICAL", LevelCritical}, {"", LevelInfo}} {
		got, err := ParseLevel(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseLevel(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	if s := Level(9).String(); s != "Level(9)" {
		t.Errorf("Level(9).String() = %q", s)
	}
}

func TestDefaultConfig(t *testing.T) {
	c := DefaultConfig()
	if c.Name != "scrapy-cluster" || c.Level != "INFO" || !c.Stdout || c.Dir != "logs" || c.File != "main.log" ||
		c.MaxBytes != 10*1024*1024 || c.Backups != 5 || c.JSON || c.IncludeExtra {
		t.Errorf("DefaultConfig() = %+v", c)
	}
}

func TestConfigFromSettingsUsesTheLogSettings(t *testing.T) {
	s, err := settings.Load(Settings("").Group("kafka-monitor", "kafka_monitor.log"), settings.Options{Environ: []string{
		"LOG_LEVEL=DEBUG", "LOG_JSON=true", "LOG_TEXT_FIELDS=false", "LOG_STDOUT=false", "LOG_DIR=/var/log/sc", "LOG_MAX_BYTES=1000", "LOG_BACKUPS=2",
	}})
	if err != nil {
		t.Fatal(err)
	}
	got := Settings("").Config(s)
	want := Config{Name: "kafka-monitor", Level: "DEBUG", JSON: true, Stdout: false, Dir: "/var/log/sc",
		File: "kafka_monitor.log", MaxBytes: 1000, Backups: 2}
	if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}

func TestDumpWritesFiguresAsFieldsOrIndentedText(t *testing.T) {
	var text, js bytes.Buffer
	lt, err := New(Config{Name: "redis-monitor", Output: &text})
	if err != nil {
		t.Fatal(err)
	}
	lt.Dump("Redis Monitor Stats Dump", map[string]any{"total_900": 2, "fail_lifetime": 0})
	if want := "[redis-monitor] INFO: Redis Monitor Stats Dump:\n{\n    \"fail_lifetime\": 0,\n    \"total_900\": 2\n}\n"; !strings.HasSuffix(text.String(), want) {
		t.Fatalf("text dump %q, want suffix %q", text.String(), want)
	}
	lj, err := New(Config{Name: "redis-monitor", JSON: true, Output: &js})
	if err != nil {
		t.Fatal(err)
	}
	lj.Dump("Queue Stats Dump", map[string]any{"total_backlog": 229})
	var line map[string]any
	if err := json.Unmarshal(js.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	if line["message"] != "Queue Stats Dump" || line["total_backlog"] != 229.0 {
		t.Fatalf("json dump %v", line)
	}
}
