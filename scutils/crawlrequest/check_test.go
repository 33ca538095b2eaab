package crawlrequest

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestCheckObjectSaysWhyItRefuses(t *testing.T) {
	if err := checkObject([]byte(` {"a": [1]} `)); err != nil {
		t.Errorf("an object: %v", err)
	}
	for _, doc := range []string{`null`, ` []`, `"x"`, `1`} {
		if err := checkObject([]byte(doc)); !errors.Is(err, errNotObject) {
			t.Errorf("%s: %v, want errNotObject", doc, err)
		}
	}
	var syntax *json.SyntaxError
	for _, doc := range []string{`{"a":`, ``, `{"a":1} x`, `{"a":1,}`} {
		if err := checkObject([]byte(doc)); !errors.As(err, &syntax) {
			t.Errorf("%q: %v, want a *json.SyntaxError", doc, err)
		}
	}
}
