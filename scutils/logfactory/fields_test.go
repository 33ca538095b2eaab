package logfactory

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// fieldFormats are the ways a line's extras are written.
var fieldFormats = []struct {
	name string
	cfg  Config
}{
	{"text fields", Config{TextFields: true}},
	{"text include extra", Config{IncludeExtra: true}},
	{"bare text", Config{}},
	{"json", Config{JSON: true, Now: fixedClock(jsonTime)}},
}

// pageLineFields are the fields of the pipeline's page lines, every kind
// it uses: strings (URLs, ids), an int (status), a bool (success) and a
// json.RawMessage (attrs) set and unset.
func pageLineFields(attrs json.RawMessage) []Field {
	return []Field{
		String("url", "http://127.0.0.1:8080/page/1/2"), String("response_url", "http://127.0.0.1:8080/page/1/2"),
		Int("status_code", 200), String("status_msg", "OK"), String("appid", "bench"), String("crawlid", "cost-0"),
		Any("attrs", attrs), String("encoding", "utf-8"), String("action", "ack"), String("spiderid", "link"),
		Bool("success", true),
	}
}

// randomFields are fields with awkward keys and values: clashing and
// leading keys, text to quote or cut, numbers, booleans, nested values.
func randomFields(r *rand.Rand) []Field {
	keys := []string{"url", "appid", "crawlid", "spiderid", "uuid", "reason", "error", "message", "fields.message",
		"level", "timestamp", "logger", "fields.level", "a", "b c", "z=", "", "é", "status_code", "attrs"}
	texts := []string{"", "plain", "two words", `q"uote`, "new\nline", "é ü", "\u2028", "a=b", "\xff",
		strings.Repeat("x", 1030), strings.Repeat("é", 600), "http://example.com/?a=1&b=2"}
	var fields []Field
	seen := map[string]bool{}
	for range r.IntN(len(keys)) {
		k := keys[r.IntN(len(keys))]
		if seen[k] {
			continue
		}
		seen[k] = true
		switch r.IntN(8) {
		case 0, 1, 2:
			fields = append(fields, String(k, texts[r.IntN(len(texts))]))
		case 3:
			fields = append(fields, Int(k, r.IntN(2000)-1000))
		case 4:
			fields = append(fields, Bool(k, r.IntN(2) == 0))
		case 5:
			fields = append(fields, Any(k, json.RawMessage(`{"a": [1, 2]}`)))
		case 6:
			fields = append(fields, Any(k, errors.New(texts[r.IntN(len(texts))])))
		default:
			fields = append(fields, Any(k, map[string]any{"k": texts[r.IntN(len(texts))], "n": 1.5}))
		}
	}
	return fields
}

// TestLogFieldsWritesTheSameBytesAsLog: a line of Fields and the same line
// of an Extra are the same bytes, in every format.
func TestLogFieldsWritesTheSameBytesAsLog(t *testing.T) {
	cases := [][]Field{nil, {}, pageLineFields(nil), pageLineFields(json.RawMessage(`{"x":1, "y":"é"}`)),
		{String("message", "m"), String("fields.message", "f")}, {Int("n", -7), Bool("ok", false)},
		{Any("nil", nil), Any("int64", int64(5)), Any("float", 2.5), Any("list", []string{"a", "b"})}}
	r := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		cases = append(cases, randomFields(r))
	}
	for _, ff := range fieldFormats {
		for i, fields := range cases {
			viaMap, wantBuf := newBuffered(t, ff.cfg)
			viaFields, gotBuf := newBuffered(t, ff.cfg)
			viaMap.Warning("Scraped page", fieldsExtra(fields))
			viaFields.LogFields(LevelWarning, "Scraped page", fields)
			if got, want := gotBuf.String(), wantBuf.String(); got != want || want == "" {
				t.Fatalf("%s, case %d (%v):\nLogFields %q\nLog       %q", ff.name, i, fields, got, want)
			}
		}
	}
}

// TestLogFieldsRunsCallbacksWithTheFields: callbacks see the fields as an
// Extra, with their values as Log's callers give them.
func TestLogFieldsRunsCallbacksWithTheFields(t *testing.T) {
	l, _ := newBuffered(t, Config{TextFields: true})
	var seen []Extra
	if err := l.RegisterCallback("INFO", func(_ string, extra map[string]any) { seen = append(seen, extra) },
		map[string]any{"status_code": 200, "success": true}); err != nil {
		t.Fatal(err)
	}
	l.InfoFields("Sent page to Kafka", pageLineFields(nil)...)
	l.InfoFields("Other", Int("status_code", 404), Bool("success", true))
	l.Debug("below the level", Extra{"status_code": 200, "success": true})
	if len(seen) != 1 {
		t.Fatalf("callbacks ran %d times, want 1: %v", len(seen), seen)
	}
	want := fieldsExtra(pageLineFields(nil))
	if fmt.Sprint(seen[0]) != fmt.Sprint(want) || seen[0]["status_code"] != 200 || seen[0]["url"] != "http://127.0.0.1:8080/page/1/2" {
		t.Fatalf("callback saw %v, want %v", seen[0], want)
	}
}

// TestLogFieldsWithFixedFieldsOrEqualKeysIsLog: a logger made by With, and
// fields sharing a key (the last wins), write what Log writes.
func TestLogFieldsWithFixedFieldsOrEqualKeysIsLog(t *testing.T) {
	for _, ff := range fieldFormats {
		base, wantBuf := newBuffered(t, ff.cfg)
		base2, gotBuf := newBuffered(t, ff.cfg)
		withMap, withFields := base.With(Extra{"appid": "fixed", "k": 1}), base2.With(Extra{"appid": "fixed", "k": 1})
		withMap.Info("m", Extra{"appid": "call", "url": "u"})
		withFields.InfoFields("m", String("appid", "call"), String("url", "u"))
		base.Info("dup", Extra{"a": 2})
		base2.InfoFields("dup", Int("a", 1), Int("a", 2))
		if got, want := gotBuf.String(), wantBuf.String(); got != want || want == "" {
			t.Fatalf("%s:\nLogFields %q\nLog       %q", ff.name, got, want)
		}
	}
}

// TestLogFieldsBelowTheLevelAllocatesNothing: a disabled level costs its
// check, not even the fields' slice.
func TestLogFieldsBelowTheLevelAllocatesNothing(t *testing.T) {
	l, buf := newBuffered(t, Config{Level: "WARNING", TextFields: true})
	page := pageLineFields(json.RawMessage(`{}`))
	allocs := testing.AllocsPerRun(100, func() {
		l.InfoFields("Scraped page", String("url", page[0].str), Int("status_code", 200), Any("attrs", page[6].val))
	})
	if allocs != 0 || buf.Len() != 0 {
		t.Fatalf("a disabled line allocated %v times and wrote %q", allocs, buf.String())
	}
}

// TestLogFieldsAllocatesLessThanLog: the page line of Fields allocates
// nothing once the line buffers are pooled (without the race detector,
// which empties pools at random); Log's map does.
func TestLogFieldsAllocatesLessThanLog(t *testing.T) {
	l, buf := newBuffered(t, Config{TextFields: true})
	fields := pageLineFields(nil)
	viaFields := testing.AllocsPerRun(200, func() {
		buf.Reset()
		l.LogFields(LevelInfo, "Scraped page", fields)
	})
	viaMap := testing.AllocsPerRun(200, func() {
		buf.Reset()
		l.Info("Scraped page", fieldsExtra(fields))
	})
	if (viaFields != 0 && !raceOn) || viaMap <= viaFields {
		t.Fatalf("allocations per line: LogFields %v, Log %v", viaFields, viaMap)
	}
}

func BenchmarkPageLine(b *testing.B) {
	for _, ff := range []struct {
		name string
		cfg  Config
	}{fieldFormats[0], fieldFormats[3]} {
		cfg := ff.cfg
		cfg.Output = discard{}
		l, err := New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(ff.name+"/map", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				l.Info("Scraped page", Extra{"url": "http://127.0.0.1:8080/page/1/2", "response_url": "http://127.0.0.1:8080/page/1/2",
					"status_code": 200, "status_msg": "OK", "appid": "bench", "crawlid": "cost-0", "attrs": json.RawMessage(nil),
					"encoding": "utf-8", "action": "emit", "spiderid": "link"})
			}
		})
		b.Run(ff.name+"/fields", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				l.InfoFields("Scraped page", String("url", "http://127.0.0.1:8080/page/1/2"), String("response_url", "http://127.0.0.1:8080/page/1/2"),
					Int("status_code", 200), String("status_msg", "OK"), String("appid", "bench"), String("crawlid", "cost-0"),
					Any("attrs", json.RawMessage(nil)), String("encoding", "utf-8"), String("action", "emit"), String("spiderid", "link"))
			}
		})
	}
}

// FuzzLogFieldsIsLog: any keys and values of each kind give the bytes Log
// gives for their map, in every format.
func FuzzLogFieldsIsLog(f *testing.F) {
	f.Add("url", "http://a/ b", "message", -3, true, "error", "e")
	f.Add("", "\xff\u2028", "fields.message", 0, false, "message", strings.Repeat("x", 1100))
	f.Fuzz(func(t *testing.T, k1, s1, k2 string, n int, b bool, k3, s3 string) {
		fields := []Field{String(k1, s1), Int(k2, n), Bool(k3+"?", b), Any(k3, errors.New(s3)), Any(s1, json.RawMessage(`[1]`))}
		for _, ff := range fieldFormats {
			viaMap, wantBuf := newBuffered(t, ff.cfg)
			viaFields, gotBuf := newBuffered(t, ff.cfg)
			viaMap.Info(s3, fieldsExtra(fields))
			viaFields.LogFields(LevelInfo, s3, fields)
			if got, want := gotBuf.String(), wantBuf.String(); got != want {
				t.Fatalf("%s:\nLogFields %q\nLog       %q", ff.name, got, want)
			}
		}
	})
}
