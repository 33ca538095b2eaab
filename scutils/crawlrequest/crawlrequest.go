// Package crawlrequest is the crawl request as it waits in Redis: the JSON
// member of a <spiderid>:<domain>:queue sorted set (score -priority). It is
// the one definition of that contract and the only builder of a member:
// the Kafka Monitor turns a validated request into one with FromFed,
// crawlers read and write them with Decode and Encode, and the Redis
// Monitor's fast reader (scutils/domainqueues) is tested against it. The
// JSON text itself is read and written by scutils/wirejson.
//
// A member comes in one of two forms, and Decode reads both:
//   - flat: the crawl request object with its fields at the top level. The
//     Kafka Monitor queues the request as fed, with its schema's defaults
//     (url, appid, crawlid, spiderid, priority, maxdepth, domain_max_pages,
//     allowed_domains, allow_regex, deny_regex, deny_extensions, expires,
//     useragent, cookie, attrs); crawlers add curdepth and retry_times to
//     the requests they queue. Both the original's and this scheduler read
//     this form.
//   - meta: the original's crawlers queue serialized Scrapy requests, with
//     the crawl fields under "meta" and the request's own URL at the top
//     level (meta's "url", copied along from the seed, is not the page to
//     crawl). The other top-level fields (method, headers, callback, ...)
//     are kept as unknown fields, except those named like a crawl field
//     (Scrapy's own priority), which are not the crawl's.
//
// Fields this package has no place for are kept and written back; so are
// the known fields as they were written, unless changed (Encode).
//
// Deriving requests (Follow, Retry) follows the original's crawlers: a link
// is one level deeper and 10 lower in priority, a retry counts one more
// attempt and is 10 lower in priority. In a cluster mixing Go and original
// crawlers both must order a crawl's requests alike, so this is part of the
// contract rather than one crawler's choice.
package crawlrequest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/wirejson"
)

// The contract's field names.
const (
	FieldURL            = "url"
	FieldAppID          = "appid"
	FieldCrawlID        = "crawlid"
	FieldSpiderID       = "spiderid"
	FieldPriority       = "priority"
	FieldMaxDepth       = "maxdepth"
	FieldCurDepth       = "curdepth"
	FieldRetryTimes     = "retry_times"
	FieldDomainMaxPages = "domain_max_pages"
	FieldAllowedDomains = "allowed_domains"
	FieldAllowRegex     = "allow_regex"
	FieldDenyRegex      = "deny_regex"
	FieldDenyExtensions = "deny_extensions"
	FieldExpires        = "expires"
	FieldUserAgent      = "useragent"
	FieldCookie         = "cookie"
	FieldAttrs          = "attrs"
	// FieldMeta holds the crawl fields of a serialized request (the meta form).
	FieldMeta = "meta"
)

// DefaultSpiderID is the spider of a request that names none.
const DefaultSpiderID = "link"

// Request is one crawl request.
type Request struct {
	URL      string
	AppID    string
	CrawlID  string
	SpiderID string
	// Priority: higher is crawled first (queue score -Priority).
	Priority int
	// MaxDepth is how many links deep to follow from the seed; CurDepth is
	// this request's depth (the seed is 0).
	MaxDepth int
	CurDepth int
	// RetryTimes counts failed attempts so far.
	RetryTimes int
	// DomainMaxPages caps the pages crawled per domain for this crawl (0: no cap).
	DomainMaxPages int
	// AllowedDomains, AllowRegex, DenyRegex and DenyExtensions filter the
	// links followed (nil: no filter; DenyExtensions nil: the default list).
	AllowedDomains []string
	AllowRegex     []string
	DenyRegex      []string
	DenyExtensions []string
	// Expires is the epoch second after which the crawl stops (0: never).
	Expires float64
	// UserAgent and Cookie ("" when not set) are sent with the request.
	UserAgent string
	Cookie    string
	// Attrs is passed through to the crawl results as is (nil: null).
	Attrs json.RawMessage

	// extra holds the fields Request has no place for, as written (e.g. "ts").
	extra map[string]json.RawMessage
	// decoded is what Decode read, shared by clones and never changed.
	decoded *decoded
}

// decoded is a decoded member's known fields: their values and, for those
// present, their JSON text (the fieldSet's raw and has; its extra and meta
// are left empty once read, the extra fields being the Request's).
type decoded struct {
	values Request // known fields only, lists copied
	fieldSet
}

// present returns the JSON text of the i-th known field, if it was read.
func (d *decoded) present(i int) (json.RawMessage, bool) { return d.raw[i], d.has&(1<<i) != 0 }

// A DecodeError says why a queue member cannot be crawled.
type DecodeError struct {
	// Reason is what is wrong, e.g. "no url" or "priority is not an integer".
	Reason string
	// Named reports whether the member still names its crawl: it is a JSON
	// object whose appid and crawlid (under meta in the meta form) are
	// strings, AppID and CrawlID. The Redis Monitor counts and purges such
	// a member with its crawl although no crawler can crawl it.
	Named          bool
	AppID, CrawlID string
	// Err is the JSON syntax error, if that was the cause.
	Err error
}

func (e *DecodeError) Error() string {
	switch {
	case e.Err != nil:
		return "request: " + e.Reason + ": " + e.Err.Error()
	case e.Named:
		return fmt.Sprintf("request of %s/%s: %s", e.AppID, e.CrawlID, e.Reason)
	}
	return "request: " + e.Reason
}

func (e *DecodeError) Unwrap() error { return e.Err }

// Decode reads a queue member in either form. Bad members get a
// *DecodeError: not a JSON object, no url, no appid or crawlid, or a known
// field of the wrong type. A missing spiderid is DefaultSpiderID.
func Decode(member []byte) (*Request, error) {
	obj := bytes.Clone(member) // raw values share one copy
	if err := checkObject(obj); err != nil {
		if errors.Is(err, errNotObject) {
			return nil, &DecodeError{Reason: "not a JSON object"}
		}
		return nil, &DecodeError{Reason: "not a JSON object", Err: err}
	}
	d := &decoded{}
	d.split(obj)
	return d.request()
}

// FromFed is the request the Kafka Monitor queues for a crawl request fed
// to it (as wirejson.Decode reads it, its schema's defaults filled in):
// each field written as the Kafka Monitor stores it (wirejson.KafkaMonitor)
// and read as Decode reads it. Encode writes it as the Kafka Monitor has
// always stored a fed request: every field, keys in byte order, compact
// (testdata/members.json holds examples). It refuses what Decode refuses,
// and a value that is not JSON (an infinite float).
func FromFed(fed map[string]any) (*Request, error) {
	d := &decoded{}
	text := make([]byte, 0, 512) // the fields' JSON text, one after another
	for k, v := range fed {
		start := len(text)
		var err error
		if text, err = wirejson.Append(text, v, wirejson.KafkaMonitor); err != nil {
			return nil, fmt.Errorf("encode request field %s: %w", k, err)
		}
		d.add(k, text[start:len(text):len(text)])
	}
	return d.request()
}

var errNotObject = errors.New("not an object")

// checkObject reports whether obj is one valid JSON object: an error saying
// what is wrong (as encoding/json does), or errNotObject for other JSON.
func checkObject(obj []byte) error {
	if !json.Valid(obj) {
		var v any
		return json.Unmarshal(obj, &v) // says what is wrong
	}
	if bytes.TrimLeft(obj, " \t\r\n")[0] != '{' {
		return errNotObject
	}
	return nil
}

// fieldSet is an object's fields as read, before their values are: a known
// field's JSON text by its place in fields (has marks the present ones),
// the others' by name in extra, and "meta" (neither) apart.
type fieldSet struct {
	raw   [numFields]json.RawMessage
	has   uint32
	extra map[string]json.RawMessage
	meta  json.RawMessage
}

// split adds the fields of obj, a valid JSON object, sharing its memory: of
// repeated keys the last counts, as in encoding/json.
func (fs *fieldSet) split(obj []byte) {
	wirejson.EachMember(obj, func(k, v []byte) { addField(fs, k, v[:len(v):len(v)]) })
}

func (fs *fieldSet) add(key string, raw json.RawMessage) { addField(fs, key, raw) }

func addField[K wirejson.Text](fs *fieldSet, key K, raw json.RawMessage) {
	switch i := fieldIndex(key); {
	case i >= 0:
		fs.raw[i], fs.has = raw, fs.has|1<<i
	case string(key) == FieldMeta:
		fs.meta = raw
	default:
		if fs.extra == nil {
			fs.extra = map[string]json.RawMessage{}
		}
		fs.extra[string(key)] = raw
	}
}

// request reads the request d's fields hold (see Decode); it keeps d.
func (d *decoded) request() (*Request, error) {
	if len(d.meta) > 0 && d.meta[0] == '{' {
		d.fieldSet = d.metaForm()
	}
	r := &Request{extra: d.extra}
	d.extra, d.meta = nil, nil // r's now; d is never changed
	if err := r.readFields(d); err != nil {
		return nil, err
	}
	if r.SpiderID == "" {
		r.SpiderID = DefaultSpiderID
	}
	d.values = r.knownValues()
	r.decoded = d
	return r, nil
}

// metaForm is the fields of a member of the meta form: meta's fields, the
// request's own url (meta's is the seed's), and the top level's other
// fields unless meta has them or they are named like a crawl field.
func (fs *fieldSet) metaForm() fieldSet {
	var m fieldSet
	m.split(fs.meta)
	m.meta = nil // meta's own "meta" is nobody's
	m.raw[fieldURL] = fs.raw[fieldURL]
	m.has = m.has&^(1<<fieldURL) | fs.has&(1<<fieldURL)
	for k, v := range fs.extra {
		if _, inMeta := m.extra[k]; !inMeta {
			m.add(k, v)
		}
	}
	return m
}

// readFields sets r's known fields from their JSON text in d (null or
// absent: the zero value). The error is a *DecodeError for known fields of
// the wrong type, no url, or no appid or crawlid; it names the crawl when
// appid and crawlid are strings, as a member that names one belongs to it
// even when it cannot be crawled.
func (r *Request) readFields(d *decoded) error {
	rd := fieldReader{d: d}
	hasApp, hasCrawl := rd.str(FieldAppID, &r.AppID), rd.str(FieldCrawlID, &r.CrawlID)
	rd.str(FieldURL, &r.URL)
	rd.str(FieldSpiderID, &r.SpiderID)
	rd.str(FieldUserAgent, &r.UserAgent)
	for _, f := range [...]struct {
		name string
		dst  *int
	}{{FieldPriority, &r.Priority}, {FieldMaxDepth, &r.MaxDepth}, {FieldCurDepth, &r.CurDepth},
		{FieldRetryTimes, &r.RetryTimes}, {FieldDomainMaxPages, &r.DomainMaxPages}} {
		rd.integer(f.name, f.dst)
	}
	rd.list(FieldAllowedDomains, &r.AllowedDomains)
	rd.list(FieldAllowRegex, &r.AllowRegex)
	rd.list(FieldDenyRegex, &r.DenyRegex)
	rd.list(FieldDenyExtensions, &r.DenyExtensions)
	rd.expires(&r.Expires)
	rd.cookie(&r.Cookie)
	if raw, ok := rd.field(FieldAttrs); ok {
		r.Attrs = raw
	}
	var reason string
	switch {
	case len(rd.errs) > 0:
		reason = strings.Join(rd.errs, "; ")
	case r.URL == "":
		reason = "no url"
	case r.AppID == "" || r.CrawlID == "":
		reason = "no appid or crawlid"
	default:
		return nil
	}
	if hasApp && hasCrawl {
		return &DecodeError{Reason: reason, Named: true, AppID: r.AppID, CrawlID: r.CrawlID}
	}
	return &DecodeError{Reason: reason}
}

// fieldReader reads known fields' values from their JSON text, noting
// each field of the wrong type in errs.
type fieldReader struct {
	d    *decoded
	errs []string
}

// field is a known field's JSON text, unless it is absent or null.
func (rd *fieldReader) field(name string) (json.RawMessage, bool) {
	raw, ok := rd.d.present(fieldIndex(name))
	return raw, ok && !isNull(raw)
}

func isNull(raw json.RawMessage) bool { return len(raw) == 0 || string(raw) == "null" }

// str reads a string field; it reports whether the field is a string.
func (rd *fieldReader) str(name string, dst *string) bool {
	raw, ok := rd.field(name)
	if !ok {
		return false
	}
	if *dst, ok = wirejson.Unquote(raw); !ok {
		rd.errs = append(rd.errs, name+" is not a string")
	}
	return ok
}

// integer reads a whole number of at most 1e15 (JSON's integers need not
// be written without a fraction: 5.0 is 5).
func (rd *fieldReader) integer(name string, dst *int) {
	if raw, ok := rd.field(name); ok {
		f, err := parseNumber(raw)
		if err != nil || f != math.Trunc(f) || math.Abs(f) > 1e15 {
			rd.errs = append(rd.errs, name+" is not an integer")
			return
		}
		*dst = int(f)
	}
}

func (rd *fieldReader) list(name string, dst *[]string) {
	if raw, ok := rd.field(name); ok {
		if err := json.Unmarshal(raw, dst); err != nil {
			rd.errs = append(rd.errs, name+" is not a list of strings")
		}
	}
}

// expires reads a number, or a numeric string as some clients send them.
func (rd *fieldReader) expires(dst *float64) {
	raw, ok := rd.field(FieldExpires)
	if !ok {
		return
	}
	f, err := parseNumber(raw)
	if err != nil {
		s, isString := wirejson.Unquote(raw)
		if !isString {
			rd.errs = append(rd.errs, "expires is not a number")
		} else if _, err := fmt.Sscan(s, &f); err != nil {
			rd.errs = append(rd.errs, "expires is not a number")
		}
	}
	*dst = f
}

// cookie reads a string, or {"name": "value"} as the original also
// accepts, written "a=1; b=2" in name order.
func (rd *fieldReader) cookie(dst *string) {
	raw, ok := rd.field(FieldCookie)
	if !ok {
		return
	}
	if *dst, ok = wirejson.Unquote(raw); ok {
		return
	}
	var m map[string]string
	if json.Unmarshal(raw, &m) != nil {
		rd.errs = append(rd.errs, "cookie is neither a string nor an object of strings")
	}
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+m[k])
	}
	*dst = strings.Join(parts, "; ")
}

// parseNumber is json.Unmarshal into a float64, without its cost for a
// number.
func parseNumber(raw json.RawMessage) (float64, error) {
	if len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') {
		return strconv.ParseFloat(string(raw), 64)
	}
	var f float64
	err := json.Unmarshal(raw, &f)
	return f, err
}

func (r *Request) setExtra(name string, raw json.RawMessage) {
	if r.extra == nil {
		r.extra = map[string]json.RawMessage{}
	}
	r.extra[name] = raw
}

// knownValues is a copy of r's known fields that shares nothing mutable.
func (r *Request) knownValues() Request {
	v := *r
	v.extra, v.decoded = nil, nil
	v.AllowedDomains = slices.Clone(r.AllowedDomains)
	v.AllowRegex = slices.Clone(r.AllowRegex)
	v.DenyRegex = slices.Clone(r.DenyRegex)
	v.DenyExtensions = slices.Clone(r.DenyExtensions)
	v.Attrs = slices.Clone(r.Attrs)
	return v
}

// Encode writes the flat form: a compact JSON object with its keys in
// byte order. A field Decode read and that still has the value read is
// written as it was written (a number's digits, a string's escapes, a
// cookie object, or left out when it was absent and is zero), so a member
// read and written back unchanged keeps its bytes, and a changed request
// keeps its untouched fields as they were. Other fields are written as
// encoding/json writes them without HTML escaping; unset optional fields
// (domain_max_pages 0, lists nil, useragent and cookie "", attrs nil) as
// null, as the Kafka Monitor writes them. Unknown fields are written as
// kept, in key order with the others.
func (r *Request) Encode() ([]byte, error) {
	b := make([]byte, 0, 512)
	b = append(b, '{')
	extra := slices.Sorted(maps.Keys(r.extra))
	first := true
	key := func(name string) {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = wirejson.AppendString(b, name, wirejson.Go)
		b = append(b, ':')
	}
	writeExtra := func(name string) error {
		key(name)
		var err error
		b, err = appendRaw(b, r.extra[name], false) // checked by Decode or SetExtra
		if err != nil {
			return fmt.Errorf("encode request field %s: %w", name, err)
		}
		return nil
	}
	for i, f := range fields {
		for len(extra) > 0 && extra[0] < f.name {
			if err := writeExtra(extra[0]); err != nil {
				return nil, err
			}
			extra = extra[1:]
		}
		if d := r.decoded; d != nil && f.same(r, &d.values) {
			if raw, ok := d.present(i); ok {
				key(f.name)
				var err error
				if b, err = appendRaw(b, raw, false); err != nil { // read by Decode
					return nil, fmt.Errorf("encode request field %s: %w", f.name, err)
				}
				continue
			}
			if f.zero(r) {
				continue // absent, and still nothing to say
			}
		}
		key(f.name)
		var err error
		if b, err = f.write(b, r); err != nil {
			return nil, fmt.Errorf("encode request field %s: %w", f.name, err)
		}
	}
	for _, name := range extra {
		if err := writeExtra(name); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// Score is the queue score: -priority.
func (r *Request) Score() float64 { return -float64(r.Priority) }

// Expired reports whether the crawl's expiry time has passed at now.
func (r *Request) Expired(now time.Time) bool {
	return r.Expires > 0 && float64(now.UnixNano())/1e9 >= r.Expires
}

// Follow returns a request for a link found on r's page: the same crawl,
// spider and settings, one level deeper, priority lowered by 10 (the
// original's breadth-first ordering), no retries yet.
func (r *Request) Follow(url string) *Request {
	c := r.Clone()
	c.URL = url
	c.Priority = r.Priority - 10
	c.CurDepth = r.CurDepth + 1
	c.RetryTimes = 0
	return c
}

// Retry returns r for another attempt: retry_times one higher and the
// priority lowered by 10, as the original's retry middleware does, so the
// queue's other requests go first.
func (r *Request) Retry() *Request {
	c := r.Clone()
	c.RetryTimes++
	c.Priority -= 10
	return c
}

// Clone returns a copy of r that shares nothing r's changes could reach.
func (r *Request) Clone() *Request {
	c := r.knownValues()
	c.extra = maps.Clone(r.extra)
	c.decoded = r.decoded
	return &c
}

// Extra returns a field Request has no place for (its JSON), e.g. "ts".
func (r *Request) Extra(name string) (json.RawMessage, bool) {
	v, ok := r.extra[name]
	return v, ok
}

// SetExtra sets a field Request has no place for to the JSON value raw
// (e.g. the wandering spider's "step"). Known field names, "meta" and raw
// that is not one JSON value are refused.
func (r *Request) SetExtra(name string, raw json.RawMessage) error {
	if isKnown(name) || name == FieldMeta {
		return fmt.Errorf("set request field %s: not an extra field", name)
	}
	if !json.Valid(raw) {
		return fmt.Errorf("set request field %s: %q is not JSON", name, raw)
	}
	r.setExtra(name, slices.Clone(raw))
	return nil
}

// field is one known field: how to compare, test and write its value.
type field struct {
	name  string
	same  func(a, b *Request) bool
	zero  func(r *Request) bool
	write func(b []byte, r *Request) ([]byte, error)
}

// fields are the known fields in key order.
var fields = []field{
	listField(FieldAllowRegex, func(r *Request) []string { return r.AllowRegex }),
	listField(FieldAllowedDomains, func(r *Request) []string { return r.AllowedDomains }),
	stringField(FieldAppID, func(r *Request) string { return r.AppID }, false),
	{name: FieldAttrs,
		same: func(a, b *Request) bool { return bytes.Equal(a.Attrs, b.Attrs) && (a.Attrs == nil) == (b.Attrs == nil) },
		zero: func(r *Request) bool { return r.Attrs == nil },
		write: func(b []byte, r *Request) ([]byte, error) {
			if r.Attrs == nil {
				return append(b, "null"...), nil
			}
			return appendRaw(b, r.Attrs, true)
		}},
	stringField(FieldCookie, func(r *Request) string { return r.Cookie }, true),
	stringField(FieldCrawlID, func(r *Request) string { return r.CrawlID }, false),
	intField(FieldCurDepth, func(r *Request) int { return r.CurDepth }, false),
	listField(FieldDenyExtensions, func(r *Request) []string { return r.DenyExtensions }),
	listField(FieldDenyRegex, func(r *Request) []string { return r.DenyRegex }),
	intField(FieldDomainMaxPages, func(r *Request) int { return r.DomainMaxPages }, true),
	{name: FieldExpires,
		same:  func(a, b *Request) bool { return a.Expires == b.Expires },
		zero:  func(r *Request) bool { return r.Expires == 0 },
		write: func(b []byte, r *Request) ([]byte, error) { return appendNumber(b, r.Expires) }},
	intField(FieldMaxDepth, func(r *Request) int { return r.MaxDepth }, false),
	intField(FieldPriority, func(r *Request) int { return r.Priority }, false),
	intField(FieldRetryTimes, func(r *Request) int { return r.RetryTimes }, false),
	stringField(FieldSpiderID, func(r *Request) string { return r.SpiderID }, false),
	stringField(FieldURL, func(r *Request) string { return r.URL }, false),
	stringField(FieldUserAgent, func(r *Request) string { return r.UserAgent }, true),
}

// numFields is the number of known fields; fieldURL is url's place.
const (
	numFields = 17
	fieldURL  = 15
)

// fieldIndex is a known field's place in fields, or -1.
func fieldIndex[K wirejson.Text](name K) int {
	switch string(name) {
	case FieldAllowRegex:
		return 0
	case FieldAllowedDomains:
		return 1
	case FieldAppID:
		return 2
	case FieldAttrs:
		return 3
	case FieldCookie:
		return 4
	case FieldCrawlID:
		return 5
	case FieldCurDepth:
		return 6
	case FieldDenyExtensions:
		return 7
	case FieldDenyRegex:
		return 8
	case FieldDomainMaxPages:
		return 9
	case FieldExpires:
		return 10
	case FieldMaxDepth:
		return 11
	case FieldPriority:
		return 12
	case FieldRetryTimes:
		return 13
	case FieldSpiderID:
		return 14
	case FieldURL:
		return fieldURL
	case FieldUserAgent:
		return 16
	}
	return -1
}

func isKnown(name string) bool { return fieldIndex(name) >= 0 }

func stringField(name string, get func(*Request) string, nullable bool) field {
	return field{name: name,
		same: func(a, b *Request) bool { return get(a) == get(b) },
		zero: func(r *Request) bool { return get(r) == "" },
		write: func(b []byte, r *Request) ([]byte, error) {
			if s := get(r); s != "" || !nullable {
				return wirejson.AppendString(b, s, wirejson.Go), nil
			}
			return append(b, "null"...), nil
		}}
}

// intField's nullable fields write null for 0 or less.
func intField(name string, get func(*Request) int, nullable bool) field {
	return field{name: name,
		same: func(a, b *Request) bool { return get(a) == get(b) },
		zero: func(r *Request) bool { return get(r) == 0 },
		write: func(b []byte, r *Request) ([]byte, error) {
			if n := get(r); n > 0 || !nullable {
				return strconv.AppendInt(b, int64(n), 10), nil
			}
			return append(b, "null"...), nil
		}}
}

func listField(name string, get func(*Request) []string) field {
	return field{name: name,
		same: func(a, b *Request) bool {
			x, y := get(a), get(b)
			return (x == nil) == (y == nil) && slices.Equal(x, y)
		},
		zero: func(r *Request) bool { return get(r) == nil },
		write: func(b []byte, r *Request) ([]byte, error) {
			l := get(r)
			if l == nil {
				return append(b, "null"...), nil
			}
			b = append(b, '[')
			for i, s := range l {
				if i > 0 {
					b = append(b, ',')
				}
				b = wirejson.AppendString(b, s, wirejson.Go)
			}
			return append(b, ']'), nil
		}}
}

// appendNumber writes a whole f as an integer, any other as encoding/json does.
func appendNumber(b []byte, f float64) ([]byte, error) {
	if f == math.Trunc(f) && math.Abs(f) < 1<<63 {
		return strconv.AppendInt(b, int64(f), 10), nil
	}
	n, err := json.Marshal(f)
	if err != nil {
		return b, err
	}
	return append(b, n...), nil
}

// appendRaw writes a JSON value compactly, checking it first unless it is
// known to be JSON.
func appendRaw(b []byte, raw json.RawMessage, check bool) ([]byte, error) {
	if !bytes.ContainsAny(raw, " \t\r\n") {
		if check && !json.Valid(raw) {
			return b, fmt.Errorf("%q is not JSON", raw)
		}
		return append(b, raw...), nil
	}
	buf := bytes.NewBuffer(b)
	if err := json.Compact(buf, raw); err != nil {
		return b, err
	}
	return buf.Bytes(), nil
}
