package crawlrequest

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

var memberSeeds = []string{
	`{}`, ` { } `, `{"a":1}`, `{"url":"http://a.com","appid":"a","crawlid":"c","attrs":{"x":[1,"}",{"y":"]"}]}}`,
	` { "a" : "b\"c\\" , "d" : [ 1 , 2.5e-3 , true , null ] , "e" : { } } `, `{"a":1,"a":2}`,
	`{"\u0061ppid":"x","k\"ey":"v"}`, "{\"bad \xff\":1}", `{"meta":{"appid":"a","crawlid":"c"},"url":"u"}`,
	`[]`, `null`, `"x"`, `1`, `{"a":}`, `{"a":1} x`, `{"a":1,}`, ``, `{`,
}

// objectMembers must split a member exactly as encoding/json decodes it
// into a map of raw values, and refuse what it refuses.
func FuzzObjectMembersSplitsAsEncodingJSON(f *testing.F) {
	for _, s := range memberSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		var want map[string]json.RawMessage
		wantErr := json.Unmarshal([]byte(doc), &want)
		got, err := objectMembers([]byte(doc))
		switch {
		case wantErr != nil || want == nil:
			if err == nil {
				t.Fatalf("objectMembers(%q) = %v, encoding/json refuses it (%v)", doc, got, wantErr)
			}
		case err != nil:
			t.Fatalf("objectMembers(%q): %v; encoding/json reads %v", doc, err, want)
		case !reflect.DeepEqual(got, want):
			t.Fatalf("objectMembers(%q) = %q, encoding/json reads %q", doc, got, want)
		}
	})
}

func TestObjectMembersSaysWhyItRefuses(t *testing.T) {
	if _, err := objectMembers([]byte(`null`)); !errors.Is(err, errNotObject) {
		t.Errorf("null: %v, want errNotObject", err)
	}
	var syntax *json.SyntaxError
	if _, err := objectMembers([]byte(`{"a":`)); !errors.As(err, &syntax) {
		t.Errorf("truncated: %v, want a *json.SyntaxError", err)
	}
}
