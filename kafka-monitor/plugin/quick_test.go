package plugin

import (
	"bufio"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/wirejson"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The four built-in schemas, as the plugins embed them (this package
// cannot import the plugins).
var builtinSchemas = []string{
	"../plugins/scraper/scraper_schema.json",
	"../plugins/action/action_schema.json",
	"../plugins/stats/stats_schema.json",
	"../plugins/zookeeper/zookeeper_schema.json",
	"../examples/customplugin/new_schema.json",
}

func loadBuiltinSchemas(t testing.TB) []*Schema {
	t.Helper()
	var out []*Schema
	for _, path := range builtinSchemas {
		doc, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		s, err := CompileSchema(filepath.Base(path), doc)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// quickRequests are requests to judge: the conformance cases (the
// original's verdicts on valid and invalid requests of every kind) and a
// few more around the quick check's limits.
func quickRequests(t testing.TB) []string {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "conformance", "cases.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := []string{
		`{"uuid":"u","appid":"app","domain":"d.com","action":"domain-update","scale":0.5}`,
		`{"uuid":"u","appid":"app","domain":"d.com","action":"domain-update","scale":1.0000000000000002}`,
		`{"uuid":"u","appid":"app","domain":"d.com","action":"domain-update","scale":-0.0}`,
		`{"uuid":"u","appid":"app","domain":"d.com","action":"domain-update","scale":1e400}`,
		`{"uuid":"u","appid":"app","domain":"d.com","action":"domain-update","hits":1.0}`,
		`{"url":"http://e.com","appid":"app","crawlid":"c","priority":100}`,
		`{"url":"http://e.com","appid":"app","crawlid":"c","priority":101}`,
		`{"url":"http://e.com","appid":"app","crawlid":"c","priority":0}`,
		`{"url":"http://e.com","appid":"app","crawlid":"c","priority":9007199254740993}`,
		`{"url":"http://e.com","appid":"app","crawlid":"c","priority":-9223372036854775809}`,
		`{"url":"http://e.com","appid":"app","crawlid":"c","allowed_domains":["a","a"]}`,
		`{"url":"http://e.com","appid":"app","crawlid":"c","allowed_domains":["a","b"],"deny_regex":[]}`,
		`{"url":"http://e.com","appid":"app","crawlid":"c","attrs":{"x":[1,{"y":null}]}}`,
		`{"uuid":"u","stats":"all","appid":"app"}`,
		`{"uuid":"u","stats":"everything","appid":"app"}`,
		`{"uuid":"u","my_string":"s","extra":true}`,
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// sameVerdict fails t when the quick check accepts v and the validator
// does not.
func sameVerdict(t *testing.T, s *Schema, v any, raw string) bool {
	t.Helper()
	if s.quick == nil || !s.quick.accepts(v) {
		return false
	}
	if err := s.validate(v); err != nil {
		t.Errorf("%s: the quick check accepts %s, which the validator refuses: %v", s.Name(), raw, err)
	}
	return true
}

func TestTheQuickCheckAcceptsOnlyWhatTheValidatorAccepts(t *testing.T) {
	schemas := loadBuiltinSchemas(t)
	accepted := 0
	for _, raw := range quickRequests(t) {
		v, err := wirejson.Decode([]byte(raw))
		if err != nil {
			continue
		}
		for _, s := range schemas {
			if sameVerdict(t, s, v, raw) {
				accepted++
			}
		}
	}
	if accepted < 50 {
		t.Errorf("the quick check accepts only %d requests; is it still used?", accepted)
	}
}

// Without the quick check every request would still be judged right, only
// slower: the built-in schemas must have one, and usual requests pass it.
func TestTheQuickCheckAcceptsUsualRequests(t *testing.T) {
	schemas := loadBuiltinSchemas(t)
	for _, s := range schemas {
		if s.quick == nil {
			t.Errorf("%s has no quick check", s.Name())
		}
	}
	for i, raw := range []string{
		`{"url": "http://www.dmoz.org/", "appid":"testapp", "crawlid":"abc123", "maxdepth":2, "priority":90, "allowed_domains": ["dmoz.org"], "attrs": {"k": "v"}}`,
		`{"action":"info","appid":"testapp","uuid":"someuuid","crawlid":"abc123","spiderid":"link"}`,
		`{"stats":"kafka-monitor","appid":"testapp","uuid":"someuuid"}`,
		`{"uuid":"u","appid":"app","domain":"d.com","action":"domain-update","hits":10,"window":60,"scale":0.5}`,
		`{"uuid":"u","my_string":"s","extra":true}`,
	} {
		v, err := wirejson.Decode([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		if !sameVerdict(t, schemas[i], v, raw) {
			t.Errorf("%s: the quick check leaves %s to the validator", schemas[i].Name(), raw)
		}
	}
}

func TestSchemasWithOtherKeywordsHaveNoQuickCheck(t *testing.T) {
	for _, doc := range []string{
		`{"type":"object","properties":{"a":{"type":"string","pattern":"^x"}}}`,
		`{"type":"object","additionalProperties":{"type":"string"}}`,
		`{"type":"number","minimum":0.5}`,
		`{"type":"number","minimum":0,"exclusiveMinimum":true}`,
		`{"enum":[1,2]}`,
		`{"$ref":"#/definitions/x","definitions":{"x":{}}}`,
		`{"type":"array","items":[{"type":"string"}]}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}`,
		`{"type":"object","properties":{"a":{"$schema":"http://json-schema.org/draft-04/schema#"}}}`,
	} {
		s, err := CompileSchema("test", []byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		if s.quick != nil {
			t.Errorf("%s has a quick check", doc)
		}
	}
}

func FuzzTheQuickCheckAcceptsOnlyWhatTheValidatorAccepts(f *testing.F) {
	for _, raw := range quickRequests(f) {
		f.Add(raw)
	}
	schemas := loadBuiltinSchemas(f)
	f.Fuzz(func(t *testing.T, raw string) {
		if strings.TrimSpace(raw) == "" {
			return
		}
		v, err := wirejson.Decode([]byte(raw))
		if err != nil {
			return
		}
		for _, s := range schemas {
			sameVerdict(t, s, v, raw)
		}
	})
}
