package wirejson_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/wirejson"
)

// validCases are documents valid and not, for Valid against json.Valid.
var validCases = []string{
	``, ` `, `{}`, `[]`, ` { } `, `{"a":1}`, `{"a":1,}`, `{"a" 1}`, `{"a":}`, `{a:1}`, `{"a":1}x`, `{"a":1}{}`,
	`null`, `nul`, `true`, `truex`, `false`, `0`, `-0`, `01`, `-`, `1.`, `1.5`, `.5`, `1e5`, `1E+5`, `1e`, `1e-`, `-1.5e-10`,
	`"a"`, `"a`, `"\"\\\/\b\f\n\r\t"`, `"\u00e9\uD83D\uDE00"`, `"\u00g0"`, `"\u00e"`, `"\x"`, "\"a\x01b\"", "\"\xff\xfe\"",
	`[1,2,[3,{"a":[true,false,null]}]]`, `[1,2`, `[1 2]`, `[,1]`, `{"a":{"b":{"c":"d"}}}`, `{"a":{"b":{"c":"d"}}`,
	"\t\r\n{\"a\"\t:\r\n1\n}\n", `{"url":"http://a.com/","appid":"x","crawlid":"y","maxdepth":2,"priority":1.5,"attrs":null}`,
	strings.Repeat("[", 100) + strings.Repeat("]", 100), strings.Repeat("[", 100) + strings.Repeat("]", 99),
	strings.Repeat(`{"a":`, 70) + "1" + strings.Repeat("}", 70),
}

func TestValidAsJSONValid(t *testing.T) {
	for _, s := range validCases {
		if got, want := wirejson.Valid([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("Valid(%q) = %v, json.Valid %v", s, got, want)
		}
	}
}

func FuzzValidAsJSONValid(f *testing.F) {
	for _, s := range validCases {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := wirejson.Valid(data), json.Valid(data); got != want {
			t.Fatalf("Valid(%q) = %v, json.Valid %v", data, got, want)
		}
	})
}

// BenchmarkValid checks a queue member as the crawler does once per page.
func BenchmarkValid(b *testing.B) {
	member := []byte(`{"allow_regex":["/page/"],"allowed_domains":null,"appid":"bench","attrs":null,"cookie":null,"crawlid":"cost-0",` +
		`"deny_extensions":null,"deny_regex":null,"domain_max_pages":null,"expires":0,"maxdepth":3,"priority":-2,"spiderid":"link",` +
		`"url":"http://127.0.0.1:8000/page/1/2/3","useragent":null,"curdepth":2}`)
	for _, fn := range []struct {
		name  string
		valid func([]byte) bool
	}{{"wirejson", wirejson.Valid[[]byte]}, {"encoding-json", json.Valid}} {
		b.Run(fn.name, func(b *testing.B) {
			for b.Loop() {
				if !fn.valid(member) {
					b.Fatal("invalid")
				}
			}
		})
	}
}
