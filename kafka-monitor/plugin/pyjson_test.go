package plugin_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin"
)

func TestMarshalPythonWritesFloatsAsTheOriginal(t *testing.T) {
	v := map[string]any{"scale": 1.0, "hits": 10, "nested": []any{0.5, map[string]any{"x": 2.0}}, "s": "1.0"}
	got, err := plugin.MarshalPython(v)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"hits":10,"nested":[0.5,{"x":2.0}],"s":"1.0","scale":1.0}`; string(got) != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	if v["scale"] != 1.0 {
		t.Fatal("MarshalPython changed its argument")
	}
	if _, err := plugin.MarshalPython(map[string]any{"x": math.Inf(1)}); err == nil {
		t.Fatal("infinity encoded")
	}
}

// The fast encoder writes exactly what encoding/json writes for everything
// DecodeJSON produces (floats aside, which are Python's repr).
func TestMarshalPythonMatchesEncodingJSONForDecodedRequests(t *testing.T) {
	for _, raw := range []string{
		`{"url": "http://example.com/a?b=1&c=<2>", "appid": "t\"e\\st", "n": 12345678901234567890, "neg": -3,
		  "list": ["a", "\u00e9", "\ud83d\ude00", "\u2028", "tab\there", "nl\nx", "\u0001"], "empty": {}, "arr": [],
		  "nested": {"z": null, "a": [true, false, {"q": "r"}]}, "uni": "日本語"}`,
		`[1, "two", null]`, `"just a string"`, `42`, `true`, `null`,
	} {
		v, err := plugin.DecodeJSON([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		got, err := plugin.MarshalPython(v)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("MarshalPython(%s)\n got %s\nwant %s", raw, got, want)
		}
	}
	// Invalid UTF-8 (not from DecodeJSON, which replaces it) is replaced too.
	got, _ := plugin.MarshalPython(map[string]any{"k": "a\xffb"})
	if string(got) != `{"k":"a\ufffdb"}` {
		t.Errorf("invalid UTF-8: %s", got)
	}
}
