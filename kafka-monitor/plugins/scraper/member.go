package scraper

import (
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
)

// fedEntry is codecEntry's entry without the codec's round trip, for the
// requests the crawl schema lets through; ok is false for any other, which
// entryOf leaves to codecEntry.
//
// The codec (crawlrequest.Decode, then Encode) writes a flat member it
// read back unchanged: every field as it was written, keys in byte order,
// compact. MarshalPython writes a request just so. So when req holds only
// the contract's fields, each of a type Decode reads without an error, and
// the monitor's "ts", the codec's member is MarshalPython's, and the
// values Handle needs are req's own. TestFedEntryIsTheCodecsEntry holds
// the two to the same result.
func fedEntry(req plugin.Request) (e entry, ok bool) {
	for k, v := range req {
		switch k {
		case crawlrequest.FieldURL, crawlrequest.FieldAppID, crawlrequest.FieldCrawlID:
			s, isString := v.(string)
			ok = isString && s != "" && utf8.ValidString(s)
		case crawlrequest.FieldSpiderID:
			_, ok = v.(string) // present: Decode would name a missing one "link"
		case crawlrequest.FieldUserAgent, crawlrequest.FieldCookie:
			_, isString := v.(string)
			ok = v == nil || isString
		case crawlrequest.FieldPriority, crawlrequest.FieldMaxDepth, crawlrequest.FieldCurDepth,
			crawlrequest.FieldRetryTimes, crawlrequest.FieldDomainMaxPages:
			_, ok = integer(v)
		case crawlrequest.FieldExpires:
			ok = v == nil
			if n, isNumber := v.(json.Number); isNumber && isNumberLiteral(string(n)) {
				_, err := strconv.ParseFloat(string(n), 64)
				ok = err == nil
			}
		case crawlrequest.FieldAllowedDomains, crawlrequest.FieldAllowRegex, crawlrequest.FieldDenyRegex,
			crawlrequest.FieldDenyExtensions:
			ok = stringsOrNull(v)
		case crawlrequest.FieldAttrs:
			ok = plainJSON(v)
		case "ts":
			n, isNumber := v.(json.Number)
			ok = isNumber && isNumberLiteral(string(n))
		default:
			ok = false
		}
		if !ok {
			return entry{}, false
		}
	}
	str := func(k string) string { s, _ := req[k].(string); return s }
	if str(crawlrequest.FieldURL) == "" || str(crawlrequest.FieldAppID) == "" || str(crawlrequest.FieldCrawlID) == "" {
		return entry{}, false
	}
	if _, has := req[crawlrequest.FieldSpiderID]; !has {
		return entry{}, false
	}
	member, err := plugin.MarshalPython(req)
	if err != nil {
		return entry{}, false
	}
	priority, _ := integer(req[crawlrequest.FieldPriority])
	e = entry{
		member: string(member), score: -float64(priority),
		crawl: ledger.Crawl{AppID: str(crawlrequest.FieldAppID), CrawlID: str(crawlrequest.FieldCrawlID)},
	}
	if n, isNumber := req[crawlrequest.FieldExpires].(json.Number); isNumber {
		f, _ := strconv.ParseFloat(string(n), 64)
		e.timeout, e.expires = f != 0, string(n)
	}
	return e, true
}

// integer reads an integer field as Decode does: null (0), or a number
// literal that is whole and at most 1e15 in size.
func integer(v any) (int, bool) {
	if v == nil {
		return 0, true
	}
	n, isNumber := v.(json.Number)
	if !isNumber || !isNumberLiteral(string(n)) {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1e15 {
		return 0, false
	}
	return int(f), true
}

// stringsOrNull reports whether v is null or a list of strings.
func stringsOrNull(v any) bool {
	if v == nil {
		return true
	}
	items, isList := v.([]any)
	if !isList {
		return false
	}
	for _, x := range items {
		if _, isString := x.(string); !isString {
			return false
		}
	}
	return true
}

// plainJSON reports whether v holds only what DecodeJSON returns (maps,
// lists, strings, booleans, null, number literals and finite floats), which
// MarshalPython writes as JSON.
func plainJSON(v any) bool {
	switch t := v.(type) {
	case nil, bool, string:
		return true
	case json.Number:
		return isNumberLiteral(string(t))
	case float64:
		return !math.IsInf(t, 0) && !math.IsNaN(t)
	case []any:
		for _, x := range t {
			if !plainJSON(x) {
				return false
			}
		}
		return true
	case map[string]any:
		for _, x := range t {
			if !plainJSON(x) {
				return false
			}
		}
		return true
	}
	return false
}

// isNumberLiteral reports whether s is a JSON number:
// -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func isNumberLiteral(s string) bool {
	i := 0
	digits := func() int {
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i - start
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch n := digits(); {
	case n == 0, n > 1 && s[i-n] == '0':
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}
