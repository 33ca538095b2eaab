package wirejson_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/wirejson"
)

var objectSeeds = []string{
	`{}`, ` { } `, `{"a":1}`, `{"url":"http://a.com","appid":"a","crawlid":"c","attrs":{"x":[1,"}",{"y":"]"}]}}`,
	` { "a" : "b\"c\\" , "d" : [ 1 , 2.5e-3 , true , null ] , "e" : { } } `, `{"a":1,"a":2}`,
	`{"\u0061ppid":"x","k\"ey":"v"}`, "{\"bad \xff\":1}", `{"meta":{"appid":"a","crawlid":"c"},"url":"u"}`,
	`[]`, `null`, `"x"`, `1`, `{"a":}`, `{"a":1} x`, `{"a":1,}`, ``, `{`, `{"a":tru}`, `{"a":01}`, `{"a" 1}`,
}

// members splits doc with EachMember into a map, as json.Unmarshal into a
// map of raw values keeps it (the last of repeated keys).
func members[T wirejson.Text](doc T) (map[string]json.RawMessage, bool) {
	out := map[string]json.RawMessage{}
	ok := wirejson.EachMember(doc, func(k, v T) { out[string(k)] = json.RawMessage(v) })
	return out, ok
}

// EachMember splits valid JSON exactly as encoding/json reads it into a map
// of raw values, strings and bytes alike, and refuses what is not an object.
func FuzzEachMemberSplitsAsEncodingJSON(f *testing.F) {
	for _, s := range objectSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		got, ok := members(doc)
		gotBytes, okBytes := members([]byte(doc))
		if ok != okBytes || !reflect.DeepEqual(got, gotBytes) {
			t.Fatalf("EachMember(%q) splits a string into %q (%v) but bytes into %q (%v)", doc, got, ok, gotBytes, okBytes)
		}
		var want map[string]json.RawMessage
		switch err := json.Unmarshal([]byte(doc), &want); {
		case err != nil && !json.Valid([]byte(doc)):
			// Not JSON: splitting may go either way.
		case err != nil || want == nil:
			if ok {
				t.Fatalf("EachMember(%q) = %q, but it is no object (%v)", doc, got, err)
			}
		case !ok:
			t.Fatalf("EachMember(%q) refuses it; encoding/json reads %q", doc, want)
		case !reflect.DeepEqual(got, want):
			t.Fatalf("EachMember(%q) = %q, encoding/json reads %q", doc, got, want)
		}
	})
}

func TestEachMemberRefusesTextThatIsNoObject(t *testing.T) {
	for _, doc := range []string{`[]`, `null`, `"x"`, `1`, `{"a":}`, `{"a":1} x`, `{"a":1,}`, ``, `{`, `{"a":tru}`,
		`{"a":01}`, `{"a" 1}`, `{"a":"unterminated}`, `{"a":[1,2}`, `{"a\x":1}`} {
		if got, ok := members(doc); ok {
			t.Errorf("EachMember(%q) = %q, want a refusal", doc, got)
		}
	}
}

func TestUnquoteReadsStringsAsEncodingJSON(t *testing.T) {
	for _, lit := range []string{`""`, `"plain"`, `"a\"b\\c\/d\b\f\n\r\t\u0041\u00e9\ud83d\ude00"`, `"\ud800x"`, "\"\xff\"", `"é"`} {
		var want string
		if err := json.Unmarshal([]byte(lit), &want); err != nil {
			t.Fatal(err)
		}
		if got, ok := wirejson.Unquote(lit); !ok || got != want {
			t.Errorf("Unquote(%s) = %q, %v; want %q", lit, got, ok, want)
		}
		if got, ok := wirejson.Unquote([]byte(lit)); !ok || got != want {
			t.Errorf("Unquote(bytes %s) = %q, %v; want %q", lit, got, ok, want)
		}
	}
	for _, lit := range []string{``, `"`, `x`, `1`, `null`, `"\x"`, `"a`} {
		if got, ok := wirejson.Unquote(lit); ok {
			t.Errorf("Unquote(%s) = %q, want a refusal", lit, got)
		}
	}
}

func TestIsNumberFollowsJSONsGrammar(t *testing.T) {
	for s, want := range map[string]bool{
		"0": true, "-0": true, "12": true, "-12": true, "1.5": true, "1e5": true, "1E+5": true, "-0.0e-0": true,
		"": false, "-": false, "01": false, "+1": false, "1.": false, ".5": false, "1e": false, "0x10": false,
		"Inf": false, "NaN": false, "1_000": false, " 1": false, "1 ": false,
	} {
		if got := wirejson.IsNumber(s); got != want {
			t.Errorf("IsNumber(%q) = %v, want %v", s, got, want)
		}
	}
}

var stringsSeeds = []string{
	`[]`, ` [ ] `, `["a"]`, ` [ "a" , "b\"c" , "\u00e9\ud83d\ude00" ] `, `["a,b","c"]`, "[\"\xff\"]", `["\ud800x"]`,
	`[null]`, `["a",null]`, `[1]`, `["a",]`, `["a"`, `["a"] x`, `[,]`, `null`, `""`, `{}`, ``, "[\"a\tb\"]",
	`[["a"]]`, `["a" "b"]`, `["\x"]`,
}

// Strings reads what json.Unmarshal reads into a []string, strings and
// bytes alike, and refuses only what encoding/json refuses or reads with
// something else than strings (a null element, a non-list).
func FuzzStringsReadsAsEncodingJSON(f *testing.F) {
	for _, s := range stringsSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		got, ok := wirejson.Strings(doc)
		gotBytes, okBytes := wirejson.Strings([]byte(doc))
		if ok != okBytes || !reflect.DeepEqual(got, gotBytes) {
			t.Fatalf("Strings(%q) reads a string as %q (%v) but bytes as %q (%v)", doc, got, ok, gotBytes, okBytes)
		}
		var want []string
		err := json.Unmarshal([]byte(doc), &want)
		var elems []any
		allStrings := json.Unmarshal([]byte(doc), &elems) == nil && elems != nil
		for _, e := range elems {
			if _, isString := e.(string); !isString {
				allStrings = false
			}
		}
		switch {
		case ok && err != nil:
			t.Fatalf("Strings(%q) = %q, but encoding/json refuses it: %v", doc, got, err)
		case ok && !reflect.DeepEqual(got, want):
			t.Fatalf("Strings(%q) = %#v, encoding/json reads %#v", doc, got, want)
		case !ok && err == nil && allStrings:
			t.Fatalf("Strings(%q) refuses it; encoding/json reads %q", doc, want)
		}
	})
}

func TestStringsReadsListsOfStringsAsEncodingJSON(t *testing.T) {
	for _, doc := range []string{`[]`, ` [ ] `, `["a"]`, ` [ "a" , "b\"c" , "\u00e9\ud83d\ude00" ] `, `["a,b","c"]`,
		"[\"\xff\"]", `["\ud800x"]`, `["", ""]`} {
		var want []string
		if err := json.Unmarshal([]byte(doc), &want); err != nil {
			t.Fatal(err)
		}
		got, ok := wirejson.Strings(doc)
		if !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("Strings(%s) = %#v, %v; want %#v", doc, got, ok, want)
		}
	}
	for _, doc := range []string{`[null]`, `["a",null]`, `[1]`, `["a",]`, `["a"`, `["a"] x`, `[,]`, `null`, `""`, `{}`,
		``, "[\"a\tb\"]", `[["a"]]`, `["a" "b"]`, `["\x"]`, `["a"]]`} {
		if got, ok := wirejson.Strings(doc); ok {
			t.Errorf("Strings(%q) = %q, want a refusal", doc, got)
		}
	}
}
