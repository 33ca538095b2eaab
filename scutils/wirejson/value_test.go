package wirejson_test

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/wirejson"
)

func TestPythonFloatsAreWrittenAsTheOriginalWritesThem(t *testing.T) {
	v := map[string]any{"scale": 1.0, "hits": json.Number("10"), "nested": []any{0.5, map[string]any{"x": 2.0, "e": 1e-05, "big": 1e16}}, "s": "1.0"}
	got, err := wirejson.Append(nil, v, wirejson.KafkaMonitor)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"hits":10,"nested":[0.5,{"big":1e+16,"e":1e-05,"x":2.0}],"s":"1.0","scale":1.0}`; string(got) != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	if v["scale"] != 1.0 {
		t.Fatal("Append changed its argument")
	}
	// A type Append leaves to encoding/json gets Python's floats too.
	got, err = wirejson.Append(nil, map[string]any{"f": []float64{1}, "g": []any{struct{ X float64 }{3}, 2.0}}, wirejson.KafkaMonitor)
	if want := `{"f":[1],"g":[{"X":3},2.0]}`; err != nil || string(got) != want {
		t.Fatalf("got %s (%v), want %s", got, err, want)
	}
}

func TestAppendRefusesWhatIsNotJSON(t *testing.T) {
	for name, v := range map[string]any{
		"an infinite float":       map[string]any{"x": math.Inf(1)},
		"NaN in a list":           []any{math.NaN()},
		"a channel":               make(chan int),
		"a list holding itself":   func() any { l := []any{nil}; l[0] = l; return l }(),
		"a panicking MarshalJSON": panicky{},
	} {
		for style, opts := range styles {
			if got, err := wirejson.Append([]byte("prefix"), v, opts); err == nil || string(got) != "prefix" {
				t.Errorf("%s, %s: %s, %v; want an error and the prefix alone", name, style, got, err)
			}
		}
	}
}

type panicky struct{}

func (panicky) MarshalJSON() ([]byte, error) { panic(errors.New("boom")) }

// decodedDocuments are requests as Decode reads them, with every kind of
// value and string escaping.
var decodedDocuments = []string{
	`{"url": "http://example.com/a?b=1&c=<2>", "appid": "t\"e\\st", "n": 12345678901234567890, "neg": -3,
	  "list": ["a", "\u00e9", "\ud83d\ude00", "\u2028", "tab\there", "nl\nx", "\u0001", "\b\f"], "empty": {}, "arr": [],
	  "nested": {"z": null, "a": [true, false, {"q": "r"}]}, "uni": "日本語", "k<ey>": 1}`,
	`[1, "two", null]`, `"just a string"`, `42`, `true`, `null`, `{"a": [[[{"b": [[]]}]]]}`,
}

// Without floats, Append writes decoded JSON as encoding/json does, in
// each style's escaping.
func TestAppendWritesDecodedJSONAsEncodingJSONDoes(t *testing.T) {
	for _, raw := range decodedDocuments {
		v, err := wirejson.Decode([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		for style, opts := range styles {
			got, err := wirejson.Append(nil, v, opts)
			if err != nil {
				t.Fatal(err)
			}
			if want := encodeInStyle(t, v, opts); string(got) != want {
				t.Errorf("%s: Append(%s)\n got %s\nwant %s", style, raw, got, want)
			}
		}
	}
}

// encodeInStyle is encoding/json's compact JSON of v with its strings
// escaped as opts says.
func encodeInStyle(t *testing.T, v any, opts wirejson.Options) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for i := 0; i < len(b); {
		if b[i] != '"' {
			out.WriteByte(b[i])
			i++
			continue
		}
		end := i + 1
		for b[end] != '"' {
			if b[end] == '\\' {
				end++
			}
			end++
		}
		var s string
		if err := json.Unmarshal(b[i:end+1], &s); err != nil {
			t.Fatal(err)
		}
		out.WriteString(reference(t, s, opts))
		i = end + 1
	}
	return out.String()
}

func TestAppendWritesOtherGoValuesAsEncodingJSONDoes(t *testing.T) {
	for _, v := range []any{
		0, -3, int64(1) << 62, []string{"x", "y<z"}, []string{}, map[string]any{"k\"": 1, "é": []any{"x", 2}},
		json.Number("1.5"), json.Number("1e3"), json.Number("-0"),
		[]any{1.5}, map[string]int{"a": 1}, struct{ A string }{"<"}, uint8(7),
	} {
		for style, opts := range styles {
			if opts&wirejson.PythonFloats != 0 {
				continue
			}
			got, err := wirejson.Append(nil, v, opts)
			if err != nil {
				t.Fatal(err)
			}
			if want := encodeInStyle(t, v, opts); string(got) != want {
				t.Errorf("%s: Append(%#v) = %s, want %s", style, v, got, want)
			}
		}
	}
	// Nil lists and maps are [] and {}, as our writers always wrote them.
	for _, v := range []any{[]any(nil), []string(nil), map[string]any(nil)} {
		want := "[]"
		if _, isMap := v.(map[string]any); isMap {
			want = "{}"
		}
		if got, err := wirejson.Append(nil, v, wirejson.Go); err != nil || string(got) != want {
			t.Errorf("Append(%#v) = %s (%v), want %s", v, got, err, want)
		}
	}
}
