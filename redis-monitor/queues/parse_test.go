package queues_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/redis-monitor/queues"
)

// reference is Parse written with encoding/json: the fast scanner must
// agree with it on every valid JSON document.
func reference(member string) (queues.Entry, bool) {
	type fields struct {
		AppID    *string         `json:"appid"`
		CrawlID  *string         `json:"crawlid"`
		Priority json.RawMessage `json:"priority"`
		Expires  json.RawMessage `json:"expires"`
		Meta     json.RawMessage `json:"meta"`
	}
	var f fields
	if err := json.Unmarshal([]byte(member), &f); err != nil {
		return queues.Entry{}, false
	}
	if len(f.Meta) > 0 && f.Meta[0] == '{' {
		var m fields
		if err := json.Unmarshal(f.Meta, &m); err != nil {
			return queues.Entry{}, false
		}
		f = m
	}
	if f.AppID == nil || f.CrawlID == nil {
		return queues.Entry{}, false
	}
	num := func(raw json.RawMessage) json.Number {
		if len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') {
			return json.Number(raw)
		}
		return ""
	}
	return queues.Entry{Member: member, AppID: *f.AppID, CrawlID: *f.CrawlID, Priority: num(f.Priority), Expires: num(f.Expires)}, true
}

var parseSeeds = []string{
	`{"url":"http://a.com","appid":"app","crawlid":"c1","priority":-9,"expires":1452094703}`,
	`{"url":"http://a.com","meta":{"appid":"app","crawlid":"c2","priority":10}}`,
	` { "appid" : "a\"pp" , "crawlid" : "c\\3", "priority": 1.5e3 } `,
	`{"attrs":{"appid":"nested","x":[1,"}",{"y":"]"}]},"appid":"app","crawlid":"c"}`,
	`{"appid":"app","crawlid":"c","priority":null,"expires":"12"}`,
	`{"appid":"\u00e9t\u00e9","crawlid":"c","cookie":"a=b; c=\"d\""}`,
	`{"appid":"a","appid":"b","crawlid":"c"}`,
	`{"meta":[1],"appid":"a","crawlid":"c"}`,
	`{"meta":{"appid":"a"},"appid":"a","crawlid":"c"}`,
	`{}`, `[]`, `"x"`, `null`, `{"appid":"a","crawlid":"c"} trailing`, `{"appid":"a","crawlid":"c",}`,
	`{"appid":"a" "crawlid":"c"}`, `{"appid":"a","crawlid":"c","p":01}`, `{"appid":"a","crawlid":"c","p":tru}`,
	`{"appid":"a","crawlid":"c","x":"unterminated}`, `{"appid":1,"crawlid":"c"}`, `{"appid":"a\\","crawlid":"c"}`,
}

func TestParseAgreesWithEncodingJSON(t *testing.T) {
	for _, member := range parseSeeds {
		checkAgreement(t, member)
	}
}

func checkAgreement(t *testing.T, member string) {
	t.Helper()
	got, ok := queues.Parse(member)
	want, wantOK := reference(member)
	if !json.Valid([]byte(member)) {
		// Invalid JSON may be rejected; if accepted it must not invent fields.
		if ok && !wantOK && !bytes.Contains([]byte(member), []byte(`"appid"`)) {
			t.Errorf("Parse(%q) accepted invalid JSON without an appid: %+v", member, got)
		}
		return
	}
	if ok != wantOK || got != want {
		t.Errorf("Parse(%q) = %+v, %v; encoding/json says %+v, %v", member, got, ok, want, wantOK)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range parseSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, member string) { checkAgreement(t, member) })
}
