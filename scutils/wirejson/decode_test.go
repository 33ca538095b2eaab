package wirejson

import (
	"reflect"
	"strings"
	"testing"
)

// jsonDocuments are valid and invalid documents, for the fast decoder to
// read as encoding/json does or to leave to it.
var jsonDocuments = []string{
	`{"url": "http://www.dmoz.org/", "appid":"testapp", "crawlid":"abc123", "maxdepth":2, "priority":90, "allowed_domains": ["dmoz.org"], "attrs": {"k": "v"}}`,
	`{}`, `[]`, `[{}]`, `{"a":[]}`, `{"a":{}}`, ` { "a" : [ 1 , 2 ] } `, "\t\r\n{\"a\":1}\n",
	`"just a string"`, `12`, `-0`, `-0.0`, `0.5`, `1e400`, `-1e400`, `1E-400`, `1.00000000000000000001`, `123456789012345678901234567890`,
	`true`, `false`, `null`, `[true,false,null]`,
	`{"a":1,"a":2}`, `{"a":{"b":1},"a":{"c":2}}`,
	`{"esc":"a\"b\\c\/d\b\f\n\r\t\u0041\u00e9\ud83d\ude00"}`, `{"lone":"\ud800x\udc00"}`, `{"k\u0065y":1}`,
	`{"ctl":"a` + "\x01" + `b"}`, `{"bad":"\x"}`, `{"bad":"\u12"}`, "{\"utf8\":\"\xff\"}", "{\"\xff\":1}",
	`{"snow":"☃","emoji":"😀"}`,
	`01`, `-`, `1.`, `.5`, `1e`, `+1`, `0x10`, `NaN`, `Infinity`, `tru`, `nul`, `[1,]`, `{"a":1,}`, `{"a" 1}`, `{a:1}`,
	`{"a":1}}`, `{"a":1} {"b":2}`, `[1 2]`, `"unterminated`, `{"a":`, `[`, ``, ` `, "\ufeff{}",
	strings.Repeat("[", 300) + strings.Repeat("]", 300),
	strings.Repeat(`{"a":`, 150) + "1" + strings.Repeat("}", 150),
}

// sameDecoding fails t unless the fast decoder, where it reads data at
// all, reads it as encoding/json does.
func sameDecoding(t *testing.T, data []byte) {
	t.Helper()
	fast, ok := decodeFast(data)
	std, err := decodeStd(data)
	if !ok {
		return
	}
	if err != nil {
		t.Fatalf("decodeFast reads %q, which encoding/json refuses: %v", data, err)
	}
	if !reflect.DeepEqual(fast, std) {
		t.Fatalf("decodeFast(%q) = %#v\nencoding/json: %#v", data, fast, std)
	}
}

func TestDecodeFastReadsWhatEncodingJSONReads(t *testing.T) {
	for _, doc := range jsonDocuments {
		sameDecoding(t, []byte(doc))
	}
}

// Without the fast decoder every request would still read right, only
// slower: a usual request must take it.
func TestDecodeFastTakesUsualRequests(t *testing.T) {
	for _, doc := range jsonDocuments[:8] {
		if _, ok := decodeFast([]byte(doc)); !ok {
			t.Errorf("decodeFast leaves %s to encoding/json", doc)
		}
	}
	if _, ok := decodeFast([]byte(jsonDocuments[len(jsonDocuments)-1])); !ok {
		t.Error("decodeFast leaves 150 nested objects to encoding/json")
	}
}

func FuzzDecodeFastReadsWhatEncodingJSONReads(f *testing.F) {
	for _, doc := range jsonDocuments {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, data []byte) { sameDecoding(t, data) })
}
