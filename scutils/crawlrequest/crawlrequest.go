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
	"iter"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

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
	extra map[string]string
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
func (fs *fieldSet) present(i int) (string, bool) { return fs.raw[i], fs.has&(1<<i) != 0 }

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
	if err := checkObject(member); err != nil {
		if errors.Is(err, errNotObject) {
			return nil, &DecodeError{Reason: "not a JSON object"}
		}
		return nil, &DecodeError{Reason: "not a JSON object", Err: err}
	}
	x := &decodedRequest{}
	x.d.split(string(member)) // the fields' text shares one copy
	return x.request()
}

// FromFed is the stored form of a crawl request fed to the Kafka Monitor
// (as wirejson.Decode reads it, its schema's defaults filled in): member
// is the queue member, every field written as the Kafka Monitor has always
// stored a fed request (values in wirejson.KafkaMonitor's style), keys in
// byte order, compact (testdata/members.json holds examples), and r the
// request Decode reads from member. FromFed refuses what Decode refuses,
// and a value that is not JSON (an infinite float). Nothing is decoded:
// the fields are read from the text just written, and for the usual
// request only member and its buffer are allocated. (r.Encode writes r as
// a new request; Decode(member) gives a request that Encode writes as
// member.)
func FromFed(fed map[string]any) (member string, r Request, err error) {
	var known [numFields]any
	var has uint32
	var room [8]string
	extra := room[:0]
	for k, v := range fed {
		if i := fieldIndex(k); i >= 0 {
			known[i], has = v, has|1<<i
		} else {
			extra = append(extra, k)
		}
	}
	slices.Sort(extra)
	// Write the fields in key order, noting where each one's value is.
	var spans [numFields][2]int32 // a known field's value: start, end
	var extraSpans [][2]int32     // the extra fields', in extra's order
	text := make([]byte, 0, 512)
	text = append(text, '{')
	for i, k := range inKeyOrder(extra) {
		if i >= 0 && has&(1<<i) == 0 {
			continue
		}
		if len(text) > 1 {
			text = append(text, ',')
		}
		var v any
		if i >= 0 {
			v, text = known[i], append(text, fields[i].key...)
		} else {
			v, text = fed[k], append(wirejson.AppendString(text, k, wirejson.Go), ':')
		}
		start := len(text)
		if text, err = wirejson.Append(text, v, wirejson.KafkaMonitor); err != nil {
			return "", Request{}, fmt.Errorf("encode request field %s: %w", k, err)
		}
		if i >= 0 {
			spans[i] = [2]int32{int32(start), int32(len(text))}
		} else {
			extraSpans = append(extraSpans, [2]int32{int32(start), int32(len(text))})
		}
	}
	member = string(append(text, '}'))
	// Read the request from the text. The text is its stored form unless
	// reading it changes it: a member of the meta form, a spider filled
	// in, a key that reads back as another (invalid UTF-8).
	fs := fieldSet{has: has}
	for i, sp := range spans {
		fs.raw[i] = member[sp[0]:sp[1]]
	}
	asWritten := has&(1<<fieldSpiderID) != 0
	for j, k := range extra {
		asWritten = asWritten && k != FieldMeta && utf8.ValidString(k)
		fs.add(k, member[extraSpans[j][0]:extraSpans[j][1]])
	}
	if !asWritten {
		back, err := Decode([]byte(member))
		if err != nil {
			return "", Request{}, err
		}
		b, err := back.Encode()
		if err != nil {
			return "", Request{}, err
		}
		back.decoded = nil
		return string(b), *back, nil
	}
	r.extra = fs.extra
	if err := r.readFields(&fs); err != nil {
		return "", Request{}, err
	}
	return member, r, nil
}

var errNotObject = errors.New("not an object")

// checkObject reports whether obj is one valid JSON object: an error saying
// what is wrong (as encoding/json does), or errNotObject for other JSON.
func checkObject(obj []byte) error {
	if !wirejson.Valid(obj) {
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
	raw   [numFields]string
	has   uint32
	extra map[string]string
	meta  string
}

// split adds the fields of obj, a valid JSON object, sharing its memory: of
// repeated keys the last counts, as in encoding/json.
func (fs *fieldSet) split(obj string) { wirejson.EachMember(obj, fs.add) }

func (fs *fieldSet) add(key, raw string) {
	switch i := fieldIndex(key); {
	case i >= 0:
		fs.raw[i], fs.has = raw, fs.has|1<<i
	case key == FieldMeta:
		fs.meta = raw
	default:
		if fs.extra == nil {
			fs.extra = map[string]string{}
		}
		fs.extra[key] = raw
	}
}

// decodedRequest is a request and what it was read from (its decoded),
// allocated together.
type decodedRequest struct {
	r Request
	d decoded
}

// request reads the request x.d's fields hold (see Decode) into x.r.
func (x *decodedRequest) request() (*Request, error) {
	r, d := &x.r, &x.d
	if len(d.meta) > 0 && d.meta[0] == '{' {
		d.fieldSet = d.metaForm()
	}
	r.extra = d.extra
	d.extra, d.meta = nil, "" // r's now; d is never changed
	if err := r.readFields(&d.fieldSet); err != nil {
		return nil, err
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
	m.meta = "" // meta's own "meta" is nobody's
	m.raw[fieldURL] = fs.raw[fieldURL]
	m.has = m.has&^(1<<fieldURL) | fs.has&(1<<fieldURL)
	for k, v := range fs.extra {
		if _, inMeta := m.extra[k]; !inMeta {
			m.add(k, v)
		}
	}
	return m
}

// readFields sets r's known fields from their JSON text in fs (null or
// absent: the zero value; a missing spiderid is DefaultSpiderID). The error is a *DecodeError for known fields of
// the wrong type, no url, or no appid or crawlid; it names the crawl when
// appid and crawlid are strings, as a member that names one belongs to it
// even when it cannot be crawled.
func (r *Request) readFields(fs *fieldSet) error {
	rd := fieldReader{fs: *fs}
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
	r.AllowedDomains = rd.list(FieldAllowedDomains)
	r.AllowRegex = rd.list(FieldAllowRegex)
	r.DenyRegex = rd.list(FieldDenyRegex)
	r.DenyExtensions = rd.list(FieldDenyExtensions)
	rd.expires(&r.Expires)
	rd.cookie(&r.Cookie)
	if raw, ok := rd.field(FieldAttrs); ok {
		r.Attrs = json.RawMessage(raw)
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
		if r.SpiderID == "" {
			r.SpiderID = DefaultSpiderID
		}
		return nil
	}
	if hasApp && hasCrawl {
		return &DecodeError{Reason: reason, Named: true, AppID: r.AppID, CrawlID: r.CrawlID}
	}
	return &DecodeError{Reason: reason}
}

// fieldReader reads known fields' values from their JSON text, noting
// each field of the wrong type in errs. (It holds a copy of the fields'
// text, so that the fields and the request they are read into can stay
// on the stack.)
type fieldReader struct {
	fs   fieldSet
	errs []string
}

// field is a known field's JSON text, unless it is absent or null.
func (rd *fieldReader) field(name string) (string, bool) {
	raw, ok := rd.fs.present(fieldIndex(name))
	return raw, ok && !isNull(raw)
}

func isNull(raw string) bool { return raw == "" || raw == "null" }

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

// list reads a list of strings: wirejson.Strings for the usual one (one
// allocation, the strings sharing the member's text), encoding/json for
// the rest (null elements read as "") and what it says is wrong.
func (rd *fieldReader) list(name string) []string {
	raw, ok := rd.field(name)
	if !ok {
		return nil
	}
	if l, ok := wirejson.Strings(raw); ok {
		return l
	}
	var l []string
	if err := json.Unmarshal([]byte(raw), &l); err != nil {
		rd.errs = append(rd.errs, name+" is not a list of strings")
	}
	return l
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
		var fs float64
		if !isString {
			rd.errs = append(rd.errs, "expires is not a number")
		} else if _, err := fmt.Sscan(s, &fs); err != nil {
			rd.errs = append(rd.errs, "expires is not a number")
		}
		f = fs
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
	if json.Unmarshal([]byte(raw), &m) != nil {
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
func parseNumber(raw string) (float64, error) {
	if len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') {
		return strconv.ParseFloat(raw, 64)
	}
	var f float64
	err := json.Unmarshal([]byte(raw), &f)
	return f, err
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
	var room [16]string // the names of most requests' extra fields fit here, without an allocation
	extra := room[:0]
	for k := range r.extra {
		extra = append(extra, k)
	}
	slices.Sort(extra)
	for i, name := range inKeyOrder(extra) {
		// An extra field, or a known one as it was read, is written as is
		// (checked by Decode or SetExtra); a changed one by its writer.
		var raw string
		asIs := i < 0
		if asIs {
			raw = r.extra[name]
		} else if d := r.decoded; d != nil && fields[i].same(r, &d.values) {
			if raw, asIs = d.present(i); !asIs && fields[i].zero(r) {
				continue // absent, and still nothing to say
			}
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		if i >= 0 {
			b = append(b, fields[i].key...)
		} else {
			b = append(wirejson.AppendString(b, name, wirejson.Go), ':')
		}
		var err error
		if asIs {
			b, err = appendRaw(b, raw, false)
		} else {
			b, err = fields[i].write(b, r)
		}
		if err != nil {
			return nil, fmt.Errorf("encode request field %s: %w", name, err)
		}
	}
	return append(b, '}'), nil
}

// inKeyOrder yields the fields of a member in key order: each known
// field's place in fields and name, and the extra fields (sorted, each
// with -1) among them.
func inKeyOrder(extra []string) iter.Seq2[int, string] {
	return func(yield func(int, string) bool) {
		for i, f := range fields {
			for len(extra) > 0 && extra[0] < f.name {
				if !yield(-1, extra[0]) {
					return
				}
				extra = extra[1:]
			}
			if !yield(i, f.name) {
				return
			}
		}
		for _, name := range extra {
			if !yield(-1, name) {
				return
			}
		}
	}
}

// Score is the queue score: -priority.
func (r *Request) Score() float64 { return -float64(r.Priority) }

// Expired reports whether the crawl's expiry time has passed at now.
func (r *Request) Expired(now time.Time) bool {
	return r.Expires > 0 && float64(now.UnixNano())/1e9 >= r.Expires
}

// Follow returns a request for a link found on r's page: the same crawl,
// spider and settings, one level deeper, priority lowered by 10 (the
// original's breadth-first ordering), no retries yet. A link is a GET:
// it inherits r's headers, session and extract but not its method or body.
func (r *Request) Follow(url string) *Request {
	c := r.Clone()
	c.URL = url
	c.Priority = r.Priority - 10
	c.CurDepth = r.CurDepth + 1
	c.RetryTimes = 0
	delete(c.extra, FieldMethod)
	delete(c.extra, FieldBody)
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

// requestBytes is about what a Request's own struct takes in memory,
// extraMapBytes its extra fields' map (a clone's, when it has any) and
// extraEntryBytes each of their entries.
const (
	requestBytes    = 320
	extraMapBytes   = 256
	extraEntryBytes = 48
)

// HeldBytes estimates the memory r holds: its struct, its URL, cookie and
// user agent, its lists' and attrs' copies (Clone copies them) and its
// extra fields, counting in full what it may share with the request it
// was made from (a follow-up's strings), so that a bound in these bytes
// holds in memory.
func (r *Request) HeldBytes() int {
	n := requestBytes + len(r.URL) + len(r.Cookie) + len(r.UserAgent) + len(r.Attrs)
	for _, l := range [][]string{r.AllowedDomains, r.AllowRegex, r.DenyRegex, r.DenyExtensions} {
		n += 16 * len(l)
		for _, s := range l {
			n += len(s)
		}
	}
	if len(r.extra) > 0 {
		n += extraMapBytes
	}
	for k, v := range r.extra {
		n += extraEntryBytes + len(k) + len(v)
	}
	return n
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
	return json.RawMessage(v), ok
}

// ExtraText is Extra's JSON as the request holds it, without a copy (the
// crawler reads a crawl's "extract" by it twice a page).
func (r *Request) ExtraText(name string) (string, bool) {
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
	if !wirejson.Valid(raw) {
		return fmt.Errorf("set request field %s: %q is not JSON", name, raw)
	}
	if r.extra == nil {
		r.extra = map[string]string{}
	}
	r.extra[name] = string(raw)
	return nil
}

// field is one known field: how to compare, test and write its value.
type field struct {
	name  string
	key   string // `"name":`, as a member writes it
	same  func(a, b *Request) bool
	zero  func(r *Request) bool
	write func(b []byte, r *Request) ([]byte, error)
}

// fields are the known fields in key order.
var fields = withKeys(

	listField(FieldAllowRegex, func(r *Request) []string { return r.AllowRegex }),
	listField(FieldAllowedDomains, func(r *Request) []string { return r.AllowedDomains }),
	stringField(FieldAppID, func(r *Request) string { return r.AppID }, false),
	field{name: FieldAttrs,
		same: func(a, b *Request) bool { return bytes.Equal(a.Attrs, b.Attrs) && (a.Attrs == nil) == (b.Attrs == nil) },
		zero: func(r *Request) bool { return r.Attrs == nil },
		write: func(b []byte, r *Request) ([]byte, error) {
			if r.Attrs == nil {
				return append(b, "null"...), nil
			}
			return appendRaw(b, string(r.Attrs), true)
		}},
	stringField(FieldCookie, func(r *Request) string { return r.Cookie }, true),
	stringField(FieldCrawlID, func(r *Request) string { return r.CrawlID }, false),
	intField(FieldCurDepth, func(r *Request) int { return r.CurDepth }, false),
	listField(FieldDenyExtensions, func(r *Request) []string { return r.DenyExtensions }),
	listField(FieldDenyRegex, func(r *Request) []string { return r.DenyRegex }),
	intField(FieldDomainMaxPages, func(r *Request) int { return r.DomainMaxPages }, true),
	field{name: FieldExpires,
		same:  func(a, b *Request) bool { return a.Expires == b.Expires },
		zero:  func(r *Request) bool { return r.Expires == 0 },
		write: func(b []byte, r *Request) ([]byte, error) { return appendNumber(b, r.Expires) }},
	intField(FieldMaxDepth, func(r *Request) int { return r.MaxDepth }, false),
	intField(FieldPriority, func(r *Request) int { return r.Priority }, false),
	intField(FieldRetryTimes, func(r *Request) int { return r.RetryTimes }, false),
	stringField(FieldSpiderID, func(r *Request) string { return r.SpiderID }, false),
	stringField(FieldURL, func(r *Request) string { return r.URL }, false),
	stringField(FieldUserAgent, func(r *Request) string { return r.UserAgent }, true),
)

func withKeys(fs ...field) []field {
	for i := range fs {
		fs[i].key = string(wirejson.AppendString(nil, fs[i].name, wirejson.Go)) + ":"
	}
	return fs
}

// numFields is the number of known fields; fieldSpiderID and fieldURL are
// spiderid's and url's places.
const (
	numFields     = 17
	fieldSpiderID = 14
	fieldURL      = 15
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
		return fieldSpiderID
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
			return wirejson.AppendStrings(b, get(r), wirejson.Go), nil
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
func appendRaw(b []byte, raw string, check bool) ([]byte, error) {
	if !strings.ContainsAny(raw, " \t\r\n") {
		if check && !wirejson.Valid(raw) {
			return b, fmt.Errorf("%q is not JSON", raw)
		}
		return append(b, raw...), nil
	}
	buf := bytes.NewBuffer(b)
	if err := json.Compact(buf, []byte(raw)); err != nil {
		return b, err
	}
	return buf.Bytes(), nil
}
