package domainqueues_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest/crawlrequesttest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/domainqueues"
)

func TestParseFindsTheCrawlOfEverySharedFixture(t *testing.T) {
	for _, m := range crawlrequesttest.Load(t) {
		t.Run(m.Name, func(t *testing.T) {
			got, ok := domainqueues.Parse(m.Member)
			switch {
			case m.Crawl == nil && ok:
				t.Errorf("Parse = %+v, want no crawl", got)
			case m.Crawl != nil && !ok:
				t.Errorf("Parse found no crawl, want %+v", *m.Crawl)
			case m.Crawl != nil && (got.AppID != m.Crawl.AppID || got.CrawlID != m.Crawl.CrawlID || got.Member != m.Member):
				t.Errorf("Parse = %+v, want crawl %+v", got, *m.Crawl)
			}
			checkAgreement(t, m.Member)
		})
	}
}

// checkAgreement compares Parse with the shared codec. Where Decode reads
// the member, Parse finds the same crawl, priority and expires; where
// Decode refuses it, Parse finds the crawl the refusal names, if any.
func checkAgreement(t *testing.T, member string) {
	t.Helper()
	got, ok := domainqueues.Parse(member)
	r, err := crawlrequest.Decode([]byte(member))
	if !json.Valid([]byte(member)) {
		// Invalid JSON may be accepted; then it must not invent fields.
		if ok && !bytes.Contains([]byte(member), []byte(`"appid"`)) {
			t.Errorf("Parse(%q) accepted invalid JSON without an appid: %+v", member, got)
		}
		return
	}
	if err != nil {
		var derr *crawlrequest.DecodeError
		if !errors.As(err, &derr) {
			t.Fatalf("Decode(%q) error %T, want a *DecodeError", member, err)
		}
		if ok != derr.Named || ok && (got.AppID != derr.AppID || got.CrawlID != derr.CrawlID) {
			t.Errorf("Parse(%q) = %+v, %v; Decode refuses it (%v) naming crawl %q/%q (%v)",
				member, got, ok, err, derr.AppID, derr.CrawlID, derr.Named)
		}
		return
	}
	if !ok || got.AppID != r.AppID || got.CrawlID != r.CrawlID || got.Member != member {
		t.Errorf("Parse(%q) = %+v, %v; Decode reads crawl %q/%q", member, got, ok, r.AppID, r.CrawlID)
		return
	}
	if p := numberValue(t, got.Priority); p != float64(r.Priority) {
		t.Errorf("Parse(%q) priority %q; Decode reads %d", member, got.Priority, r.Priority)
	}
	// Decode also reads a numeric string; Parse only numbers.
	if e := numberValue(t, got.Expires); e != r.Expires && !(got.Expires == "" && expiresIsString(member)) {
		t.Errorf("Parse(%q) expires %q; Decode reads %v", member, got.Expires, r.Expires)
	}
}

func numberValue(t *testing.T, n json.Number) float64 {
	t.Helper()
	if n == "" {
		return 0
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		t.Fatalf("number %q: %v", n, err)
	}
	return f
}

// expiresIsString reports whether the member's expires (under meta in the
// meta form) is a JSON string.
func expiresIsString(member string) bool {
	var top map[string]json.RawMessage
	if json.Unmarshal([]byte(member), &top) != nil {
		return false
	}
	if meta := top[crawlrequest.FieldMeta]; len(meta) > 0 && meta[0] == '{' {
		top = nil
		if json.Unmarshal(meta, &top) != nil {
			return false
		}
	}
	e := top[crawlrequest.FieldExpires]
	return len(e) > 0 && e[0] == '"'
}

// parseSeeds are awkward members for the fuzzer to start from, beside the
// shared fixtures.
var parseSeeds = []string{
	` { "appid" : "a\"pp" , "crawlid" : "c\\3", "priority": 1.5e3 } `,
	`{"url":"http://a.com","meta": {"appid":"app","crawlid":"c2","priority":10}}`,
	`{"attrs":{"appid":"nested","x":[1,"}",{"y":"]"}]},"appid":"app","crawlid":"c"}`,
	`{"appid":"app","crawlid":"c","priority":null,"expires":"12"}`,
	`{"url":"u","appid":"app","crawlid":"c","expires":"12"}`,
	`{"appid":"a","appid":"b","crawlid":"c"}`,
	`{"meta":{"appid":"a","crawlid":"c"},"meta":1,"appid":"x","crawlid":"y"}`,
	`{"meta":1,"meta":{"appid":"a","crawlid":"c"},"appid":"x","crawlid":"y"}`,
	"{\"url\":\"u\",\"appid\":\"bad \xff utf-8\",\"crawlid\":\"c\"}",
	`{"appid":"\ud800","crawlid":"c"}`,
	`{"appid":"a","crawlid":"c"} trailing`, `{"appid":"a","crawlid":"c",}`,
	`{"appid":"a" "crawlid":"c"}`, `{"appid":"a","crawlid":"c","p":01}`, `{"appid":"a","crawlid":"c","p":tru}`,
	`{"appid":"a","crawlid":"c","x":"unterminated}`, `{"appid":"a\\","crawlid":"c"}`,
}

func TestParseAgreesWithTheSharedCodec(t *testing.T) {
	for _, member := range parseSeeds {
		checkAgreement(t, member)
	}
}

func FuzzParse(f *testing.F) {
	for _, m := range crawlrequesttest.Load(f) {
		f.Add(m.Member)
	}
	for _, s := range parseSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, member string) { checkAgreement(t, member) })
}
