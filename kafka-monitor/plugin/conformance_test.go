package plugin_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin"
	_ "github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugins/all"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/wirejson"
)

// defaultPlugins is the original's default PLUGINS setting.
var defaultPlugins = map[string]any{
	"plugins.scraper_handler.ScraperHandler":     100,
	"plugins.action_handler.ActionHandler":       200,
	"plugins.stats_handler.StatsHandler":         300,
	"plugins.zookeeper_handler.ZookeeperHandler": 400,
}

// knownDifferences are the cases where we decide otherwise on purpose, by a
// fragment of the input's text, with the plugin we choose ("none" for a
// rejection) and why.
var knownDifferences = []struct{ fragment, ours, why string }{
	// Python reads NaN into a valid request; Go's JSON has no NaN, and the
	// original would fail later anyway (ujson cannot encode NaN).
	{`"attrs":{"x":NaN}`, "none", "NaN is not JSON"},
	{`"scale":NaN`, "none", "NaN is not JSON"},
	// Python 3.11 refuses integers of more than 4300 digits; the Python the
	// original ran on (2.7, or 3 before 3.11) accepts them, as we do.
	{strings.Repeat("7", 4301), "ScraperHandler", "Python 3.11's integer digit limit is not the original's"},
}

func knownDifference(input string) (ours, why string, ok bool) {
	for _, d := range knownDifferences {
		if strings.Contains(input, d.fragment) {
			return d.ours, d.why, true
		}
	}
	return "", "", false
}

// marshalPython encodes v for comparison with expected.jsonl, where gen.py
// writes an infinite float as {"$nonfinite": "Infinity"} (or "-Infinity").
func marshalPython(v any) ([]byte, error) {
	return json.Marshal(plugin.MapLeaves(v, func(x any) any {
		if f, ok := x.(float64); ok && math.IsInf(f, 1) {
			return map[string]any{"$nonfinite": "Infinity"}
		}
		if f, ok := x.(float64); ok && math.IsInf(f, -1) {
			return map[string]any{"$nonfinite": "-Infinity"}
		}
		return x
	}))
}

// conformanceCase is one line of testdata/conformance/expected.jsonl: the
// original Kafka Monitor's verdict on a raw request, as gen.py computes it
// with Python's json and jsonschema's Draft4Validator.
type conformanceCase struct {
	Input  string          `json:"input"`
	JSONOK bool            `json:"json_ok"`
	Plugin *string         `json:"plugin"`
	Filled json.RawMessage `json:"filled"`
}

// TestConformanceWithOriginal checks that our schemas and Match take exactly
// the original's decisions: the same plugin (or none) and the same request
// after defaults are filled in.
//
// Python's json accepts NaN, Infinity and -Infinity and Go's does not; for
// those cases (json_ok true in Python, a decode error here) only "no plugin
// on either side" is required, except for the documented differences below.
func TestConformanceWithOriginal(t *testing.T) {
	plugins, err := plugin.Load(defaultPlugins)
	if err != nil {
		t.Fatal(err)
	}
	cases := readConformanceCases(t, filepath.Join("testdata", "conformance", "expected.jsonl"))
	if len(cases) < 150 {
		t.Fatalf("only %d conformance cases", len(cases))
	}
	for i, c := range cases {
		line := i + 1
		t.Run(fmt.Sprintf("L%03d_%s", line, caseSlug(c.Input)), func(t *testing.T) {
			want := "none"
			if c.Plugin != nil {
				want = *c.Plugin
			}
			if ours, why, ok := knownDifference(c.Input); ok {
				t.Logf("documented difference (%s): original %s, ours %s", why, want, ours)
				want, c.JSONOK, c.Filled = ours, true, nil
			}
			decoded, decErr := wirejson.Decode([]byte(c.Input))
			if decErr != nil {
				if c.JSONOK && want != "none" {
					t.Errorf("input %s\n original: parsed, handled by %s\n ours: %v", clipText(c.Input), want, decErr)
				}
				return
			}
			p, filled, _ := plugin.Match(plugins, decoded)
			got := "none"
			if p != nil {
				got = p.Plugin.Name()
			}
			if !c.JSONOK {
				if got != "none" {
					t.Errorf("input %s\n original: unparseable JSON\n ours: parsed, handled by %s", clipText(c.Input), got)
				}
				return
			}
			if got != want {
				t.Errorf("input %s\n original: %s\n ours: %s", clipText(c.Input), want, got)
				return
			}
			if p == nil || c.Filled == nil {
				return
			}
			ours, err := marshalPython(filled)
			if err != nil {
				t.Fatalf("encode our filled request: %v", err)
			}
			if !sameJSON(t, c.Filled, ours) {
				t.Errorf("input %s\n original filled: %s\n our filled:      %s", clipText(c.Input), clipText(string(c.Filled)), clipText(string(ours)))
			}
		})
	}
}

func readConformanceCases(t *testing.T, path string) []conformanceCase {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cases []conformanceCase
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var c conformanceCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("%s line %d: %v", path, len(cases)+1, err)
		}
		cases = append(cases, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cases
}

// sameJSON compares two JSON documents as values. Numbers compare exactly
// when both are written as integers and as float64 otherwise (Python writes
// the float default of scale as 1.0, and reads 1e400 as Infinity, which
// gen.py writes as {"$nonfinite": "Infinity"}).
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	decode := func(data []byte) any {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("decode %s: %v", clipText(string(data)), err)
		}
		return v
	}
	return equalValues(decode(a), decode(b))
}

func equalValues(a, b any) bool {
	if x, ok := asJSONNumber(a); ok {
		y, ok := asJSONNumber(b)
		return ok && equalNumbers(x, y)
	}
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok || len(av) != len(bv) {
			return false
		}
		for k, x := range av {
			y, ok := bv[k]
			if !ok || !equalValues(x, y) {
				return false
			}
		}
		return true
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			return false
		}
		for i := range av {
			if !equalValues(av[i], bv[i]) {
				return false
			}
		}
		return true
	default:
		if _, ok := asJSONNumber(b); ok {
			return false
		}
		return a == b
	}
}

// jsonNumber is a JSON number: exact when written as an integer.
type jsonNumber struct {
	integer *big.Int // nil for a float
	float   float64
}

// asJSONNumber reads a json.Number or gen.py's {"$nonfinite": ...} marker.
func asJSONNumber(v any) (jsonNumber, bool) {
	switch n := v.(type) {
	case json.Number:
		if !strings.ContainsAny(string(n), ".eE") {
			if i, ok := new(big.Int).SetString(string(n), 10); ok {
				return jsonNumber{integer: i}, true
			}
		}
		f, _ := strconv.ParseFloat(string(n), 64) // ±Inf beyond float64, as Python
		return jsonNumber{float: f}, true
	case map[string]any:
		if len(n) != 1 {
			return jsonNumber{}, false
		}
		switch n["$nonfinite"] {
		case "NaN":
			return jsonNumber{float: math.NaN()}, true
		case "Infinity":
			return jsonNumber{float: math.Inf(1)}, true
		case "-Infinity":
			return jsonNumber{float: math.Inf(-1)}, true
		}
	}
	return jsonNumber{}, false
}

func equalNumbers(x, y jsonNumber) bool {
	if x.integer != nil && y.integer != nil {
		return x.integer.Cmp(y.integer) == 0
	}
	fx, fy := x.asFloat(), y.asFloat()
	return fx == fy || (math.IsNaN(fx) && math.IsNaN(fy))
}

func (n jsonNumber) asFloat() float64 {
	if n.integer == nil {
		return n.float
	}
	f, _ := new(big.Float).SetInt(n.integer).Float64()
	return f
}

// caseSlug names a case by the end of its text, where cases differ.
func caseSlug(input string) string {
	var b strings.Builder
	dash := false
	for _, r := range input {
		if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_') {
			b.WriteRune(r)
			dash = false
		} else if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	s := strings.Trim(b.String(), "-")
	if len(s) > 40 {
		s = s[len(s)-40:]
	}
	if s == "" {
		s = "blank"
	}
	return s
}

// clipText shortens long texts in failure messages.
func clipText(s string) string {
	r := []rune(s)
	if len(r) > 300 {
		return string(r[:200]) + fmt.Sprintf("...(%d characters)...", len(r)-280) + string(r[len(r)-80:])
	}
	return s
}
