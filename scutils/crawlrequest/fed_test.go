package crawlrequest_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest/crawlrequesttest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/wirejson"
)

// fedRequests are crawl requests as a caller might pass them to FromFed:
// the Kafka Monitor's (validated, defaults filled in) and odder ones.
var fedRequests = []string{
	`{"url":"http://example.com","appid":"app","crawlid":"c1","spiderid":"link","ts":1700000000.123456}`,
	`{"url":"https://www.example.com/a?b=c&d=<e>","appid":"testapp","crawlid":"abc123","spiderid":"wandering",
		"priority":100,"maxdepth":3,"domain_max_pages":2000,"allowed_domains":["example.com","example.org"],
		"allow_regex":[".*news.*"],"deny_regex":[".*login.*"],"deny_extensions":["pdf"],"expires":1893456000,
		"useragent":"Mozilla/5.0 ☃","cookie":"a=b; c=d","attrs":{"nested":{"list":[1,2.5,null,"😀"]},"n":-7}}`,
	`{"url":"http://example.com/\u2028\"q\"","appid":"a\\b\u0000c","crawlid":"\ud83d\ude00\udc00","useragent":"tab\there\b"}`,
	`{"url":"http://example.com","appid":"app","crawlid":"c1","attrs":{"x":1e400}}`,
	`{"url":"http://example.com","appid":"app","crawlid":"c1","expires":1` + strings.Repeat("0", 400) + `}`,
	`{"url":"http://example.com","appid":"app","crawlid":"c1","expires":100000000000000000000000}`,
	`{"url":"http://example.com","appid":"app","crawlid":"c1","expires":-0,"priority":1}`,
	`{"url":"http://example.com","appid":"app","crawlid":"c1","spiderid":""}`,
	`{"url":"","appid":"app","crawlid":"c1"}`,
	`{"url":"http://example.com","appid":"app","crawlid":"c1","priority":5.0}`,
	`{"url":"http://example.com","appid":"app","crawlid":"c1","priority":10000000000000000}`,
	`{"url":"http://example.com","meta":{"appid":"app","crawlid":"c1","meta":{}},"spiderid":"link","x":1}`,
	`{"url":"http://example.com","appid":"app","crawlid":"c1","spiderid":"link","<x>":1}`,
	`{"url":"http://example.com","appid":"app","crawlid":"c1","spiderid":"link","cookie":{"b":"2","a":"1"}}`,
	`{"url":"http://example.com","appid":"app","crawlid":"c1","spiderid":"link","allow_regex":[1]}`,
	`{"url":"http://example.com","appid":null,"crawlid":"c1","spiderid":"link"}`,
	`{"url":"http://example.com","appid":7,"crawlid":8,"spiderid":"link"}`,
	`{"url":"http://example.com","appid":"app","crawlid":"c1","spiderid":"link","expires":"12"}`,
	`{"url":"http://example.com","appid":"app","crawlid":"c1","spiderid":"link","curdepth":2,"retry_times":1}`,
}

// sameAsDecoded fails t unless FromFed makes of fed what Decode makes of
// fed's JSON as the Kafka Monitor writes it: the same fields and bytes, or
// the same refusal.
func sameAsDecoded(t *testing.T, fed map[string]any) {
	t.Helper()
	member, got, err := crawlrequest.FromFed(fed)
	text, encErr := wirejson.Append(nil, fed, wirejson.KafkaMonitor)
	if encErr != nil {
		if err == nil {
			t.Fatalf("FromFed(%v) takes what is not JSON (%v)", fed, encErr)
		}
		return
	}
	want, wantErr := crawlrequest.Decode(text)
	switch {
	case wantErr != nil:
		if err == nil || err.Error() != wantErr.Error() || !reflect.DeepEqual(err, wantErr) {
			t.Fatalf("FromFed(%s) = %v; Decode refuses it: %v", text, err, wantErr)
		}
		return
	case err != nil:
		t.Fatalf("FromFed(%s): %v; Decode reads it", text, err)
	}
	if g, w := fieldsOf(t, &got), fieldsOf(t, want); !reflect.DeepEqual(g, w) {
		t.Fatalf("FromFed(%s) =\n%v\nDecode reads\n%v", text, g, w)
	}
	for _, name := range []string{"ts", "<x>", "k\ufffd"} {
		g, gok := got.Extra(name)
		w, wok := want.Extra(name)
		if gok != wok || string(g) != string(w) {
			t.Fatalf("FromFed(%s) has extra %s %s (%v), Decode reads %s (%v)", text, name, g, gok, w, wok)
		}
	}
	// The member is the stored form: what Decode reads of it, Encode
	// writes again.
	wantText, _ := want.Encode()
	if member != string(wantText) {
		t.Fatalf("FromFed(%s) stores\n%s\nDecode's encodes as\n%s", text, member, wantText)
	}
	again, err := crawlrequest.Decode([]byte(member))
	if err != nil {
		t.Fatal(err)
	}
	if g, w := fieldsOf(t, &got), fieldsOf(t, again); !reflect.DeepEqual(g, w) {
		t.Fatalf("FromFed(%s) =\n%v\nDecode reads of its member\n%v", text, g, w)
	}
	if b, _ := again.Encode(); string(b) != member {
		t.Fatalf("FromFed(%s) stores\n%s\nwhich Decode and Encode write as\n%s", text, member, b)
	}
}

func decodeFed(t testing.TB, raw string) (map[string]any, bool) {
	t.Helper()
	v, err := wirejson.Decode([]byte(raw))
	if err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	m, ok := v.(map[string]any)
	return m, ok
}

func TestFromFedIsDecodeOfTheFedRequestsJSON(t *testing.T) {
	for _, raw := range fedRequests {
		fed, _ := decodeFed(t, raw)
		sameAsDecoded(t, fed)
	}
	// Keys that are not UTF-8 or need escaping read back otherwise.
	sameAsDecoded(t, map[string]any{"url": "http://example.com", "appid": "app", "crawlid": "c1", "spiderid": "link",
		"k\xff": json.Number("1"), "<b>": "x\b", "\u2028": nil})
	for _, m := range crawlrequesttest.Load(t) {
		for _, raw := range []string{m.Fed, m.Member} {
			if raw == "" || !strings.HasPrefix(raw, "{") {
				continue
			}
			if fed, ok := decodeFed(t, raw); ok {
				sameAsDecoded(t, fed)
			}
		}
	}
}

// The stored form of a fed request is its JSON, keys in order, in the
// Kafka Monitor's style.
func TestFromFedStoresWhatTheKafkaMonitorAlwaysStored(t *testing.T) {
	fed, _ := decodeFed(t, fedRequests[1])
	got, _, err := crawlrequest.FromFed(fed)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"allow_regex":[".*news.*"],"allowed_domains":["example.com","example.org"],"appid":"testapp",` +
		`"attrs":{"n":-7,"nested":{"list":[1,2.5,null,"😀"]}},"cookie":"a=b; c=d","crawlid":"abc123","deny_extensions":["pdf"],` +
		`"deny_regex":[".*login.*"],"domain_max_pages":2000,"expires":1893456000,"maxdepth":3,"priority":100,` +
		`"spiderid":"wandering","url":"https://www.example.com/a?b=c\u0026d=\u003ce\u003e","useragent":"Mozilla/5.0 ☃"}`
	if got != want {
		t.Fatalf("stored\n%s\nwant\n%s", got, want)
	}
}

func FuzzFromFedIsDecodeOfTheFedRequestsJSON(f *testing.F) {
	for _, raw := range fedRequests {
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := wirejson.Decode([]byte(raw))
		if err != nil {
			return
		}
		if fed, ok := v.(map[string]any); ok {
			sameAsDecoded(t, fed)
		}
	})
}
