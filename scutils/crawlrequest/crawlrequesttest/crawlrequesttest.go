// Package crawlrequesttest holds the queue members every reader and writer
// of the crawl request contract is tested against (testdata/members.json):
// the Kafka Monitor's form, the Go crawler's form, the original crawler's
// meta form, unicode, unknown fields, odd numbers and members no crawler
// can crawl, each with what crawlrequest.Decode and Encode make of it and
// the crawl the Redis Monitor counts it under. The shared codec, the Kafka
// Monitor's scraper plugin and the Redis Monitor's fast reader all test
// against this one set, so they cannot disagree unnoticed.
package crawlrequesttest

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
)

//go:embed testdata/members.json
var membersJSON []byte

// Member is one queue member and what each reader makes of it.
type Member struct {
	// Name says what the member is, as a sentence.
	Name string
	// Member is the member's exact bytes.
	Member string
	// Fed, for a member of the Kafka Monitor's form, is the crawl request
	// as fed to it: the Kafka Monitor writes exactly Member for it.
	Fed string
	// Request is what Decode reads (nil when it refuses the member) and
	// Encoded the exact bytes Encode writes back for it.
	Request *Want
	Encoded string
	// Error is part of Decode's error for a member it refuses.
	Error string
	// Crawl is the crawl the member names (nil for none): what the Redis
	// Monitor counts and purges it under. For a member Decode reads it is
	// the request's appid and crawlid.
	Crawl *Crawl
}

// Crawl is a member's crawl.
type Crawl struct {
	AppID   string `json:"appid"`
	CrawlID string `json:"crawlid"`
}

// Want is a decoded request's fields (contract names) and its unknown
// fields (Extra).
type Want struct {
	URL            string                     `json:"url"`
	AppID          string                     `json:"appid"`
	CrawlID        string                     `json:"crawlid"`
	SpiderID       string                     `json:"spiderid"`
	Priority       int                        `json:"priority"`
	MaxDepth       int                        `json:"maxdepth"`
	CurDepth       int                        `json:"curdepth"`
	RetryTimes     int                        `json:"retry_times"`
	DomainMaxPages int                        `json:"domain_max_pages"`
	AllowedDomains []string                   `json:"allowed_domains"`
	AllowRegex     []string                   `json:"allow_regex"`
	DenyRegex      []string                   `json:"deny_regex"`
	DenyExtensions []string                   `json:"deny_extensions"`
	Expires        float64                    `json:"expires"`
	UserAgent      string                     `json:"useragent"`
	Cookie         string                     `json:"cookie"`
	Attrs          json.RawMessage            `json:"attrs"`
	Extra          map[string]json.RawMessage `json:"extra"`
}

// Request is w as a crawlrequest.Request.
func (w *Want) Request() (*crawlrequest.Request, error) {
	r := &crawlrequest.Request{
		URL: w.URL, AppID: w.AppID, CrawlID: w.CrawlID, SpiderID: w.SpiderID, Priority: w.Priority,
		MaxDepth: w.MaxDepth, CurDepth: w.CurDepth, RetryTimes: w.RetryTimes, DomainMaxPages: w.DomainMaxPages,
		AllowedDomains: w.AllowedDomains, AllowRegex: w.AllowRegex, DenyRegex: w.DenyRegex, DenyExtensions: w.DenyExtensions,
		Expires: w.Expires, UserAgent: w.UserAgent, Cookie: w.Cookie, Attrs: w.Attrs,
	}
	for k, v := range w.Extra {
		if err := r.SetExtra(k, v); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// member is Member as stored: a member that is JSON is written as itself
// ("member", exact bytes), one that is not as a string ("text").
type member struct {
	Name    string          `json:"name"`
	Fed     json.RawMessage `json:"fed"`
	Member  json.RawMessage `json:"member"`
	Text    *string         `json:"text"`
	Request *Want           `json:"request"`
	Encoded json.RawMessage `json:"encoded"`
	Error   string          `json:"error"`
	Crawl   *Crawl          `json:"crawl"`
}

// Members returns the fixtures, checked for consistency.
func Members() ([]Member, error) {
	var stored []member
	if err := json.Unmarshal(membersJSON, &stored); err != nil {
		return nil, fmt.Errorf("read testdata/members.json: %w", err)
	}
	out := make([]Member, 0, len(stored))
	names := map[string]bool{}
	for _, s := range stored {
		m := Member{Name: s.Name, Member: string(s.Member), Fed: string(s.Fed), Request: s.Request,
			Encoded: string(s.Encoded), Error: s.Error, Crawl: s.Crawl}
		if s.Text != nil {
			m.Member = *s.Text
		}
		bad := func(why string) error { return fmt.Errorf("testdata/members.json: %q %s", s.Name, why) }
		switch {
		case s.Name == "" || names[s.Name]:
			return nil, bad("needs a name of its own")
		case (s.Text == nil) == (s.Member == nil):
			return nil, bad("needs one of member and text")
		case (s.Request == nil) == (s.Error == ""):
			return nil, bad("needs one of request and error")
		case s.Request != nil && s.Encoded == nil:
			return nil, bad("needs encoded, what Encode writes")
		case s.Request == nil && (s.Encoded != nil || s.Fed != nil):
			return nil, bad("is refused: it has no encoded or fed form")
		}
		if s.Request != nil {
			want := Crawl{AppID: s.Request.AppID, CrawlID: s.Request.CrawlID}
			if s.Crawl != nil && *s.Crawl != want {
				return nil, bad("names another crawl than its request's")
			}
			m.Crawl = &want
		}
		names[s.Name] = true
		out = append(out, m)
	}
	return out, nil
}

// Load is Members for tests: it fails t on an error.
func Load(t testing.TB) []Member {
	t.Helper()
	ms, err := Members()
	if err != nil {
		t.Fatal(err)
	}
	return ms
}
