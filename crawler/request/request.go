// Package request is a crawl request as it travels through the cluster: the
// JSON member of a <spiderid>:<domain>:queue sorted set (score -priority).
//
// The Kafka Monitor queues the crawl request object as fed, with the
// schema's defaults (url, appid, crawlid, spiderid, priority, maxdepth,
// domain_max_pages, allowed_domains, allow_regex, deny_regex,
// deny_extensions, expires, useragent, cookie, attrs, ts). Crawlers add the
// bookkeeping fields curdepth and retry_times when they queue follow-up
// requests and retries, in the same flat form, which the original's
// scheduler also reads (its request_from_feed). The original's crawlers
// queue serialized Scrapy requests instead, with these fields under "meta";
// Decode reads both. Fields this package does not know are kept and
// written back unchanged.
package request

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
)

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

	// extra holds the other fields, written back unchanged (e.g. "ts").
	extra map[string]json.RawMessage
}

// known are the fields Request has a place for.
var known = []string{
	"url", "appid", "crawlid", "spiderid", "priority", "maxdepth", "curdepth", "retry_times",
	"domain_max_pages", "allowed_domains", "allow_regex", "deny_regex", "deny_extensions",
	"expires", "useragent", "cookie", "attrs",
}

// Decode reads a queue member: the flat form, or a serialized request with
// the crawl fields under "meta" (then "url" is the top-level one).
func Decode(member []byte) (*Request, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(member, &top); err != nil {
		return nil, fmt.Errorf("request is not a JSON object: %w", err)
	}
	fields := top
	if meta, ok := top["meta"]; ok && len(meta) > 0 && meta[0] == '{' {
		if err := json.Unmarshal(meta, &fields); err != nil {
			return nil, fmt.Errorf("request meta: %w", err)
		}
		if u, ok := top["url"]; ok {
			fields["url"] = u
		}
	}
	r := &Request{extra: map[string]json.RawMessage{}}
	var errs []string
	str := func(name string, dst *string) {
		if raw, ok := fields[name]; ok && !isNull(raw) {
			if err := json.Unmarshal(raw, dst); err != nil {
				errs = append(errs, name+" is not a string")
			}
		}
	}
	num := func(name string, dst *int) {
		if raw, ok := fields[name]; ok && !isNull(raw) {
			var f float64
			if err := json.Unmarshal(raw, &f); err != nil || f != math.Trunc(f) || math.Abs(f) > 1e15 {
				errs = append(errs, name+" is not an integer")
				return
			}
			*dst = int(f)
		}
	}
	list := func(name string, dst *[]string) {
		if raw, ok := fields[name]; ok && !isNull(raw) {
			if err := json.Unmarshal(raw, dst); err != nil {
				errs = append(errs, name+" is not a list of strings")
			}
		}
	}
	str("url", &r.URL)
	str("appid", &r.AppID)
	str("crawlid", &r.CrawlID)
	str("spiderid", &r.SpiderID)
	str("useragent", &r.UserAgent)
	num("priority", &r.Priority)
	num("maxdepth", &r.MaxDepth)
	num("curdepth", &r.CurDepth)
	num("retry_times", &r.RetryTimes)
	num("domain_max_pages", &r.DomainMaxPages)
	list("allowed_domains", &r.AllowedDomains)
	list("allow_regex", &r.AllowRegex)
	list("deny_regex", &r.DenyRegex)
	list("deny_extensions", &r.DenyExtensions)
	if raw, ok := fields["expires"]; ok && !isNull(raw) {
		// Numbers, or numeric strings as some clients send them.
		var f float64
		if err := json.Unmarshal(raw, &f); err != nil {
			var s string
			if json.Unmarshal(raw, &s) != nil {
				errs = append(errs, "expires is not a number")
			} else if _, err := fmt.Sscan(s, &f); err != nil {
				errs = append(errs, "expires is not a number")
			}
		}
		r.Expires = f
	}
	if raw, ok := fields["cookie"]; ok && !isNull(raw) {
		if err := json.Unmarshal(raw, &r.Cookie); err != nil {
			// The original also accepts {"name": "value"}.
			var m map[string]string
			if json.Unmarshal(raw, &m) != nil {
				errs = append(errs, "cookie is neither a string nor an object of strings")
			}
			parts := make([]string, 0, len(m))
			for _, k := range slices.Sorted(maps.Keys(m)) {
				parts = append(parts, k+"="+m[k])
			}
			r.Cookie = strings.Join(parts, "; ")
		}
	}
	if raw, ok := fields["attrs"]; ok && !isNull(raw) {
		r.Attrs = raw
	}
	for k, v := range fields {
		if !slices.Contains(known, k) && k != "meta" {
			r.extra[k] = v
		}
	}
	switch {
	case len(errs) > 0:
		return nil, fmt.Errorf("request: %s", strings.Join(errs, "; "))
	case r.URL == "":
		return nil, fmt.Errorf("request has no url")
	case r.AppID == "" || r.CrawlID == "":
		return nil, fmt.Errorf("request %s has no appid or crawlid", r.URL)
	}
	if r.SpiderID == "" {
		r.SpiderID = "link"
	}
	return r, nil
}

func isNull(raw json.RawMessage) bool { return len(raw) == 0 || string(raw) == "null" }

// Encode writes the flat form. Optional fields that are unset are written
// as the Kafka Monitor writes them (null), so every member has the same shape.
func (r *Request) Encode() ([]byte, error) {
	out := make(map[string]any, len(known)+len(r.extra))
	for k, v := range r.extra {
		out[k] = v
	}
	nullable := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	list := func(l []string) any {
		if l == nil {
			return nil
		}
		return l
	}
	out["url"] = r.URL
	out["appid"] = r.AppID
	out["crawlid"] = r.CrawlID
	out["spiderid"] = r.SpiderID
	out["priority"] = r.Priority
	out["maxdepth"] = r.MaxDepth
	out["curdepth"] = r.CurDepth
	out["retry_times"] = r.RetryTimes
	if r.DomainMaxPages > 0 {
		out["domain_max_pages"] = r.DomainMaxPages
	} else {
		out["domain_max_pages"] = nil
	}
	out["allowed_domains"] = list(r.AllowedDomains)
	out["allow_regex"] = list(r.AllowRegex)
	out["deny_regex"] = list(r.DenyRegex)
	out["deny_extensions"] = list(r.DenyExtensions)
	if r.Expires == math.Trunc(r.Expires) {
		out["expires"] = int64(r.Expires)
	} else {
		out["expires"] = r.Expires
	}
	out["useragent"] = nullable(r.UserAgent)
	out["cookie"] = nullable(r.Cookie)
	if r.Attrs != nil {
		out["attrs"] = r.Attrs
	} else {
		out["attrs"] = nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
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
	c := r.clone()
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
	c := r.clone()
	c.RetryTimes++
	c.Priority -= 10
	return c
}

func (r *Request) clone() *Request {
	c := *r
	c.AllowedDomains = slices.Clone(r.AllowedDomains)
	c.AllowRegex = slices.Clone(r.AllowRegex)
	c.DenyRegex = slices.Clone(r.DenyRegex)
	c.DenyExtensions = slices.Clone(r.DenyExtensions)
	c.Attrs = slices.Clone(r.Attrs)
	c.extra = maps.Clone(r.extra)
	return &c
}

// Extra returns a field this package has no place for (raw JSON), e.g. "ts".
func (r *Request) Extra(name string) (json.RawMessage, bool) {
	v, ok := r.extra[name]
	return v, ok
}
