package scraper

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest/crawlrequesttest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/wirejson"
)

// fedRequests are crawl requests as fed: those the schema takes (filled
// with its defaults and given a "ts", as the monitor hands them to Handle)
// and, marked direct, what a caller other than the monitor might pass.
var fedRequests = []struct {
	name, raw string
	direct    bool
}{
	{name: "the fewest fields", raw: `{"url":"http://example.com","appid":"app","crawlid":"c1"}`},
	{name: "every field", raw: `{"url":"https://www.example.com/a?b=c&d=<e>","appid":"testapp","crawlid":"abc123","spiderid":"wandering",
		"priority":100,"maxdepth":3,"domain_max_pages":2000,"allowed_domains":["example.com","example.org"],
		"allow_regex":[".*news.*"],"deny_regex":[".*login.*"],"deny_extensions":["pdf"],"expires":1893456000,
		"useragent":"Mozilla/5.0 ☃","cookie":"a=b; c=d","attrs":{"nested":{"list":[1,2.5,null,"😀"]},"n":-7}}`},
	{name: "escapes and unicode", raw: `{"url":"http://example.com/\u2028\"q\"","appid":"a\\b\u0000c","crawlid":"\ud83d\ude00\udc00","useragent":"tab\there"}`},
	{name: "an infinite number in attrs", raw: `{"url":"http://example.com","appid":"app","crawlid":"c1","attrs":{"x":1e400}}`},
	{name: "an expires beyond any float", raw: `{"url":"http://example.com","appid":"app","crawlid":"c1","expires":1` + strings.Repeat("0", 400) + `}`},
	{name: "an expires beyond 64 bits", raw: `{"url":"http://example.com","appid":"app","crawlid":"c1","expires":100000000000000000000000}`},
	{name: "minus zero", raw: `{"url":"http://example.com","appid":"app","crawlid":"c1","expires":-0,"priority":1}`},
	{name: "an empty spider", raw: `{"url":"http://example.com","appid":"app","crawlid":"c1","spiderid":""}`},
	{name: "an empty url", raw: `{"url":"","appid":"app","crawlid":"c1"}`},
	{name: "a float priority", raw: `{"url":"http://example.com","appid":"app","crawlid":"c1","priority":5.0}`, direct: true},
	{name: "a huge priority", raw: `{"url":"http://example.com","appid":"app","crawlid":"c1","priority":10000000000000000}`, direct: true},
	{name: "no spider", raw: `{"url":"http://example.com","appid":"app","crawlid":"c1"}`, direct: true},
	{name: "a meta field", raw: `{"url":"http://example.com","meta":{"appid":"app","crawlid":"c1"},"spiderid":"link"}`, direct: true},
	{name: "an unknown field", raw: `{"url":"http://example.com","appid":"app","crawlid":"c1","spiderid":"link","<x>":1}`, direct: true},
	{name: "a cookie object", raw: `{"url":"http://example.com","appid":"app","crawlid":"c1","spiderid":"link","cookie":{"b":"2","a":"1"}}`, direct: true},
	{name: "a list of numbers", raw: `{"url":"http://example.com","appid":"app","crawlid":"c1","spiderid":"link","allow_regex":[1]}`, direct: true},
	{name: "a null appid", raw: `{"url":"http://example.com","appid":null,"crawlid":"c1","spiderid":"link"}`, direct: true},
	{name: "a string expires", raw: `{"url":"http://example.com","appid":"app","crawlid":"c1","spiderid":"link","expires":"12"}`, direct: true},
	{name: "a curdepth", raw: `{"url":"http://example.com","appid":"app","crawlid":"c1","spiderid":"link","curdepth":2,"retry_times":1}`, direct: true},
}

// fed is raw as Handle gets it: decoded, and for a request the monitor
// passes, validated against the schema and filled with its defaults; then
// given a "ts".
func fed(t testing.TB, raw string, direct bool) plugin.Request {
	t.Helper()
	v, err := wirejson.Decode([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	req, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%s is not an object", raw)
	}
	if !direct {
		s, err := plugin.CompileSchema("ScraperHandler", schema)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(v); err != nil {
			t.Fatalf("the schema refuses %s: %v", raw, err)
		}
		s.ApplyDefaults(req)
	}
	req["ts"] = json.Number("1700000000.123456")
	return req
}

// sameEntry fails t when fedEntry takes req and makes of it anything but
// what the codec makes.
func sameEntry(t *testing.T, req plugin.Request) (fast bool) {
	t.Helper()
	got, ok := fedEntry(req)
	if !ok {
		return false
	}
	want, err := codecEntry(req)
	if err != nil {
		t.Fatalf("fedEntry takes %v, which the codec refuses: %v", req, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("fedEntry of %v\n= %+v\nthe codec's %+v", req, got, want)
	}
	return true
}

func TestFedEntryIsTheCodecsEntry(t *testing.T) {
	for _, tc := range fedRequests {
		t.Run(tc.name, func(t *testing.T) {
			sameEntry(t, fed(t, tc.raw, tc.direct))
		})
	}
}

// Without the fast path every request would still be queued right, only
// slower: the usual requests must take it.
func TestFedEntryTakesTheRequestsTheSchemaLetsThrough(t *testing.T) {
	n := 0
	for _, m := range crawlrequesttest.Load(t) {
		if m.Fed == "" {
			continue
		}
		n++
		if !sameEntry(t, fed(t, m.Fed, false)) {
			t.Errorf("%s: fedEntry leaves %s to the codec", m.Name, m.Fed)
		}
	}
	for _, tc := range fedRequests[:3] {
		if !sameEntry(t, fed(t, tc.raw, false)) {
			t.Errorf("%s: fedEntry leaves it to the codec", tc.name)
		}
	}
	if n == 0 {
		t.Fatal("no fixture of the Kafka Monitor's form")
	}
}

func FuzzFedEntryIsTheCodecsEntry(f *testing.F) {
	for _, tc := range fedRequests {
		f.Add(tc.raw)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := plugin.DecodeRequest([]byte(raw))
		if err != nil {
			return
		}
		if req, ok := v.(map[string]any); ok {
			sameEntry(t, req)
		}
	})
}

func TestIsNumberLiteralFollowsJSONsGrammar(t *testing.T) {
	for s, want := range map[string]bool{
		"0": true, "-0": true, "12": true, "-12": true, "1.5": true, "1e5": true, "1E+5": true, "-0.0e-0": true,
		"": false, "-": false, "01": false, "+1": false, "1.": false, ".5": false, "1e": false, "0x10": false,
		"Inf": false, "NaN": false, "1_000": false, " 1": false, "1 ": false,
	} {
		if got := isNumberLiteral(s); got != want {
			t.Errorf("isNumberLiteral(%q) = %v, want %v", s, got, want)
		}
	}
}
