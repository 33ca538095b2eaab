package scraper

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/wirejson"
)

// fedEntry is codecEntry's entry without the codec's round trip, for the
// requests the crawl schema lets through; ok is false for any other, which
// entryOf leaves to codecEntry.
//
// The codec (crawlrequest.Decode, then Encode) writes a flat member it
// read back unchanged: every field as it was written, keys in byte order,
// compact. wirejson.Append (KafkaMonitor) writes a request just so. So when req holds only
// the contract's fields, each of a type Decode reads without an error, and
// the monitor's "ts", the codec's member is what wirejson.Append writes, and the
// values Handle needs are req's own. TestFedEntryIsTheCodecsEntry holds
// the two to the same result.
func fedEntry(req plugin.Request) (e entry, ok bool) {
	var values [len(fedFields)]any
	var present [len(fedFields)]bool
	for k, v := range req {
		i, known := fedIndex[k]
		if !known || !fedFields[i].check(v) {
			return entry{}, false
		}
		values[i], present[i] = v, true
	}
	for _, i := range fedRequired {
		if !present[i] {
			return entry{}, false // Decode refuses it, or names the spider "link"
		}
	}
	// wirejson.Append's member, without sorting the keys: fedFields has them
	// in its order, and none needs escaping.
	b := make([]byte, 0, 512)
	b = append(b, '{')
	for i, f := range fedFields {
		if !present[i] {
			continue
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, f.name...)
		b = append(b, '"', ':')
		var err error
		if b, err = wirejson.Append(b, values[i], wirejson.KafkaMonitor); err != nil {
			return entry{}, false
		}
	}
	b = append(b, '}')
	value := func(name string) any { return values[fedIndex[name]] }
	priority, _ := integer(value(crawlrequest.FieldPriority))
	appID, _ := value(crawlrequest.FieldAppID).(string)
	crawlID, _ := value(crawlrequest.FieldCrawlID).(string)
	e = entry{member: string(b), score: -float64(priority), crawl: ledger.Crawl{AppID: appID, CrawlID: crawlID}}
	if n, isNumber := value(crawlrequest.FieldExpires).(json.Number); isNumber {
		f, _ := strconv.ParseFloat(string(n), 64)
		e.timeout, e.expires = f != 0, string(n)
	}
	return e, true
}

// fedField is a field fedEntry takes, with its check that Decode reads the
// value without an error (and as req holds it).
type fedField struct {
	name  string
	check func(v any) bool
}

// fedFields are the fields fedEntry takes, in byte order: the order
// wirejson.Append writes keys in.
var fedFields = sortedFields([...]fedField{
	{crawlrequest.FieldURL, nonEmptyString},
	{crawlrequest.FieldAppID, nonEmptyString},
	{crawlrequest.FieldCrawlID, nonEmptyString},
	{crawlrequest.FieldSpiderID, func(v any) bool { _, ok := v.(string); return ok }},
	{crawlrequest.FieldUserAgent, stringOrNull},
	{crawlrequest.FieldCookie, stringOrNull},
	{crawlrequest.FieldPriority, isInteger},
	{crawlrequest.FieldMaxDepth, isInteger},
	{crawlrequest.FieldCurDepth, isInteger},
	{crawlrequest.FieldRetryTimes, isInteger},
	{crawlrequest.FieldDomainMaxPages, isInteger},
	{crawlrequest.FieldExpires, floatOrNull},
	{crawlrequest.FieldAllowedDomains, stringsOrNull},
	{crawlrequest.FieldAllowRegex, stringsOrNull},
	{crawlrequest.FieldDenyRegex, stringsOrNull},
	{crawlrequest.FieldDenyExtensions, stringsOrNull},
	{crawlrequest.FieldAttrs, plainJSON},
	{"ts", func(v any) bool { n, ok := v.(json.Number); return ok && isNumberLiteral(string(n)) }},
})

func sortedFields(fs [18]fedField) [18]fedField {
	slices.SortFunc(fs[:], func(a, b fedField) int { return strings.Compare(a.name, b.name) })
	return fs
}

// fedIndex is each field's place in fedFields.
var fedIndex = func() map[string]int {
	m := make(map[string]int, len(fedFields))
	for i, f := range fedFields {
		m[f.name] = i
	}
	return m
}()

// fedRequired are the places of the fields fedEntry needs: url, appid and
// crawlid, which Decode needs, and spiderid, which Decode would fill in.
var fedRequired = []int{
	fedIndex[crawlrequest.FieldURL], fedIndex[crawlrequest.FieldAppID],
	fedIndex[crawlrequest.FieldCrawlID], fedIndex[crawlrequest.FieldSpiderID],
}

// nonEmptyString: Decode refuses an empty url, appid or crawlid, and reads
// invalid UTF-8 otherwise than req holds it.
func nonEmptyString(v any) bool {
	s, ok := v.(string)
	return ok && s != "" && utf8.ValidString(s)
}

func stringOrNull(v any) bool {
	_, ok := v.(string)
	return ok || v == nil
}

func isInteger(v any) bool {
	_, ok := integer(v)
	return ok
}

// floatOrNull: expires is null or a number a float64 holds.
func floatOrNull(v any) bool {
	if v == nil {
		return true
	}
	n, ok := v.(json.Number)
	if !ok || !isNumberLiteral(string(n)) {
		return false
	}
	_, err := strconv.ParseFloat(string(n), 64)
	return err == nil
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

// plainJSON reports whether v holds only what wirejson.Decode returns (maps,
// lists, strings, booleans, null, number literals and finite floats), which
// wirejson.Append writes as JSON.
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
