package fetch

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/temoto/robotstxt"
)

const (
	// robotsMaxSize is the most of a robots.txt read (Google reads 500 KiB).
	robotsMaxSize = 500 << 10
	// robotsRetryAfter is how soon a robots.txt that could not be had is tried again.
	robotsRetryAfter = time.Minute
	// robotsMaxHosts bounds the cache; past it, expired entries go first.
	robotsMaxHosts = 10000
)

// robotsCache holds each scheme+host's parsed robots.txt.
type robotsCache struct {
	f    *Fetcher
	base context.Context // ends with the Fetcher
	now  func() time.Time

	mu      sync.Mutex
	entries map[string]*robotsEntry
}

// robotsEntry is one host's robots.txt: loading until done is closed.
type robotsEntry struct {
	done    chan struct{}
	rules   *robotstxt.RobotsData // nil: everything allowed
	expires time.Time
}

func newRobotsCache(f *Fetcher, base context.Context) *robotsCache {
	return &robotsCache{f: f, base: base, now: time.Now, entries: make(map[string]*robotsEntry)}
}

// check returns ErrRobotsDisallowed when u's robots.txt forbids it to
// userAgent, after loading the robots.txt if needed; ctx bounds the wait.
func (c *robotsCache) check(ctx context.Context, u *url.URL, userAgent string) error {
	key := strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host)
	e := c.entry(key)
	select {
	case <-e.done:
	case <-ctx.Done():
		return fmt.Errorf("waiting for %s/robots.txt: %w", key, context.Cause(ctx))
	}
	if e.rules == nil {
		return nil
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	if u.RawQuery != "" {
		path += "?" + u.RawQuery
	}
	agent := c.f.cfg.RobotsUserAgent
	if agent == "" {
		agent = productToken(userAgent)
	}
	if !e.rules.TestAgent(path, agent) {
		return fmt.Errorf("%w: %s for user agent %q", ErrRobotsDisallowed, u, agent)
	}
	return nil
}

// entry returns key's cache entry, starting a load when there is none or
// it expired. Callers arriving during a load share it.
func (c *robotsCache) entry(key string) *robotsEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if ok {
		select {
		case <-e.done:
			if c.now().Before(e.expires) {
				return e
			}
		default:
			return e // loading
		}
	}
	if len(c.entries) >= robotsMaxHosts {
		c.evictLocked()
	}
	e = &robotsEntry{done: make(chan struct{})}
	c.entries[key] = e
	// The load is not tied to the first caller's context: others may be
	// waiting for it. It ends with the Fetcher, or after DOWNLOAD_TIMEOUT.
	go c.load(key, e)
	return e
}

// evictLocked makes room: expired entries first, then any loaded ones.
func (c *robotsCache) evictLocked() {
	now := c.now()
	for _, expiredOnly := range []bool{true, false} {
		for key, e := range c.entries {
			if len(c.entries) < robotsMaxHosts*9/10 {
				return
			}
			select {
			case <-e.done:
				if !expiredOnly || !now.Before(e.expires) {
					delete(c.entries, key)
				}
			default:
			}
		}
	}
}

// load fetches key's robots.txt into e. A robots.txt that cannot be had
// allows everything and is tried again sooner.
func (c *robotsCache) load(key string, e *robotsEntry) {
	defer close(e.done)
	ctx, cancel := context.WithTimeout(c.base, c.f.cfg.Timeout)
	defer cancel()
	ttl := c.f.cfg.RobotsCacheTTL
	res, err := c.f.fetch(ctx, key+"/robots.txt", c.f.cfg.UserAgent, "", nil, false, robotsMaxSize)
	switch {
	case err != nil || res.Status >= 500 || (res.Status >= 300 && res.Status < 400):
		ttl = min(ttl, robotsRetryAfter)
	case res.Status >= 200 && res.Status < 300:
		if rules, err := robotstxt.FromBytes(res.Body); err == nil {
			e.rules = rules
		} else {
			ttl = min(ttl, robotsRetryAfter)
		}
	}
	// 4xx and everything else: allow all for the whole TTL.
	e.expires = c.now().Add(ttl)
}

// productToken is the robots.txt name of a User-Agent: its first product,
// lower case ("Scrapy-Cluster-Go/1.3 (+...)" -> "scrapy-cluster-go").
func productToken(userAgent string) string {
	token := strings.TrimSpace(userAgent)
	if i := strings.IndexAny(token, "/ ;("); i >= 0 {
		token = token[:i]
	}
	return strings.ToLower(token)
}
