// Package session is the cookie jar of a crawl that asks for
// "session": true: one jar per crawl (appid, crawlid), kept in Redis so
// that every crawler taking the crawl's requests shares it.
//
// The cookie rules are net/http/cookiejar's, which are a browser's (RFC
// 6265): domain and host-only cookies, path matching, expiry (Expires and
// Max-Age), Secure cookies only over https (and to loopback, which browsers
// count as secure), public suffixes refused as cookie domains
// (golang.org/x/net/publicsuffix). Redis holds what the jar was told: the
// hash rediskeys.SessionKey has one field per cookie (its domain, path and
// name, as the jar tells cookies apart) whose value is the URL that set it
// and its Set-Cookie line, with Max-Age turned into an absolute Expires.
// Load replays them into a fresh cookiejar.Jar; the cookies a response
// sets are recorded as they are given to the jar, and Save writes them
// (a cookie deleted or expired is removed). When two crawlers change the
// same cookie at once, the last write wins, as between two browser tabs.
//
// The hash expires with the crawl: at its expires time when it has one,
// else SESSION_TTL seconds after its last change. Cookie values are never
// logged.
package session

import (
	"context"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/net/publicsuffix"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// TTL is how long a crawl's jar is kept after its last change when the
// crawl has no expires.
var TTL = settings.Seconds("SESSION_TTL", 86400, "seconds a `session` crawl's cookie jar outlives its last change, when the crawl has no `expires`").Ours()

// Settings are the session settings, for the crawler's settings.Group.
func Settings() settings.Group { return settings.Declare(TTL) }

// maxCookieBytes bounds a kept Set-Cookie line (browsers keep 4096 bytes
// of name and value).
const maxCookieBytes = 4096

// Store loads and saves crawls' jars.
type Store struct {
	rdb redis.Cmdable
	ttl time.Duration
	now func() time.Time
}

// NewStore returns a Store on rdb keeping jars ttl after their last change
// (SESSION_TTL).
func NewStore(rdb redis.Cmdable, ttl time.Duration) *Store {
	return &Store{rdb: rdb, ttl: ttl, now: time.Now}
}

// Crawl names a crawl's jar: its ids, and its expires (epoch seconds, 0
// never).
type Crawl struct {
	AppID, CrawlID string
	Expires        float64
}

// Jar is one crawl's cookies for one request: an http.CookieJar that
// notes the cookies it is given, for Save.
type Jar struct {
	crawl Crawl
	jar   *cookiejar.Jar
	now   func() time.Time

	mu      sync.Mutex
	changed map[string]string // field -> record; "" deletes
}

// NewJar returns an empty jar for crawl that Store.Save can write.
func NewJar(crawl Crawl) *Jar { return newJar(crawl, time.Now) }

func newJar(crawl Crawl, now func() time.Time) *Jar {
	jar, _ := cookiejar.New(&cookiejar.Options{PublicSuffixList: publicsuffix.List}) // never fails
	return &Jar{crawl: crawl, jar: jar, now: now, changed: map[string]string{}}
}

// Load reads crawl's jar from Redis (empty when it has none).
func (s *Store) Load(ctx context.Context, crawl Crawl) (*Jar, error) {
	fields, err := s.rdb.HGetAll(ctx, rediskeys.SessionKey(crawl.AppID, crawl.CrawlID)).Result()
	if err != nil {
		return nil, fmt.Errorf("load the session of %s/%s: %w", crawl.AppID, crawl.CrawlID, err)
	}
	j := newJar(crawl, s.now)
	for _, record := range fields {
		rawURL, line, ok := strings.Cut(record, "\n")
		if !ok {
			continue // not ours: ignored
		}
		u, err := url.Parse(rawURL)
		if err != nil {
			continue
		}
		if c, err := http.ParseSetCookie(line); err == nil {
			j.jar.SetCookies(u, []*http.Cookie{c})
		}
	}
	return j, nil
}

// Save writes the cookies j was given since it was loaded, and renews the
// jar's expiry. A jar given nothing costs nothing.
func (s *Store) Save(ctx context.Context, j *Jar) error {
	j.mu.Lock()
	changed := j.changed
	j.changed = map[string]string{}
	j.mu.Unlock()
	if len(changed) == 0 {
		return nil
	}
	key := rediskeys.SessionKey(j.crawl.AppID, j.crawl.CrawlID)
	pipe := s.rdb.TxPipeline()
	for field, record := range changed {
		if record == "" {
			pipe.HDel(ctx, key, field)
		} else {
			pipe.HSet(ctx, key, field, record)
		}
	}
	if j.crawl.Expires > 0 {
		pipe.ExpireAt(ctx, key, time.Unix(0, int64(j.crawl.Expires*1e9)))
	} else {
		pipe.Expire(ctx, key, s.ttl)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		j.mu.Lock() // keep them for the next Save
		for field, record := range changed {
			if _, newer := j.changed[field]; !newer {
				j.changed[field] = record
			}
		}
		j.mu.Unlock()
		return fmt.Errorf("save the session of %s/%s: %w", j.crawl.AppID, j.crawl.CrawlID, err)
	}
	return nil
}

// Cookies are the cookies to send to u.
func (j *Jar) Cookies(u *url.URL) []*http.Cookie { return j.jar.Cookies(u) }

// SetCookies takes the cookies a response from u set, and notes them for
// Save.
func (j *Jar) SetCookies(u *url.URL, cookies []*http.Cookie) {
	now := j.now()
	kept := make([]*http.Cookie, 0, len(cookies))
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, c := range cookies {
		c := *c
		if c.MaxAge > 0 { // absolute, so that a later Load means the same
			c.Expires, c.MaxAge = now.Add(time.Duration(c.MaxAge)*time.Second), 0
		}
		deleted := c.MaxAge < 0 || (!c.Expires.IsZero() && !c.Expires.After(now))
		line := c.String()
		if line == "" || len(line) > maxCookieBytes {
			continue // invalid, or more than a browser keeps
		}
		field := fieldOf(u, &c)
		switch {
		case deleted:
			j.changed[field] = ""
		case accepted(u, &c):
			j.changed[field] = u.String() + "\n" + line
		default:
			continue // the jar refuses it: nothing to keep
		}
		kept = append(kept, &c)
	}
	j.jar.SetCookies(u, kept)
}

// accepted reports whether a jar takes c from u (its Domain one u's host
// may set, not a public suffix), by asking a jar of its own.
func accepted(u *url.URL, c *http.Cookie) bool {
	probe, _ := cookiejar.New(&cookiejar.Options{PublicSuffixList: publicsuffix.List})
	probe.SetCookies(u, []*http.Cookie{c})
	domain := strings.TrimPrefix(c.Domain, ".")
	if domain == "" {
		domain = u.Hostname()
	}
	return len(probe.Cookies(&url.URL{Scheme: "https", Host: domain, Path: fieldPath(u, c)})) > 0
}

// fieldOf is a cookie's field in the hash: domain, path and name, as the
// jar tells cookies apart (a later cookie with the same three replaces an
// earlier one).
func fieldOf(u *url.URL, c *http.Cookie) string {
	domain := strings.ToLower(strings.TrimPrefix(c.Domain, "."))
	if domain == "" {
		domain = strings.ToLower(u.Hostname())
	}
	return domain + ";" + fieldPath(u, c) + ";" + c.Name
}

// fieldPath is the path a cookie is kept for: its Path, or the default.
func fieldPath(u *url.URL, c *http.Cookie) string {
	if strings.HasPrefix(c.Path, "/") {
		return c.Path
	}
	return defaultPath(u.Path)
}

// defaultPath is RFC 6265 5.1.4's default cookie path of a request path.
func defaultPath(p string) string {
	if p == "" || p[0] != '/' {
		return "/"
	}
	i := strings.LastIndex(p, "/")
	if i == 0 {
		return "/"
	}
	return p[:i]
}
