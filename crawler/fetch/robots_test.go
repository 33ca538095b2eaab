package fetch_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/fetch"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/testsite"
)

func obeying(mod ...func(*fetch.Config)) fetch.Config {
	return quick(append([]func(*fetch.Config){func(c *fetch.Config) { c.ObeyRobots = true }}, mod...)...)
}

func TestRobotsTxtIsObeyedWhenAskedTo(t *testing.T) {
	site := testsite.Start(t)
	f := newFetcher(t, obeying())
	for _, p := range []string{"/private/1", "/private/x?y=1", "/redirect?to=/private/2"} {
		_, err := f.Fetch(context.Background(), fetch.Request{URL: site.URL(p)})
		if !errors.Is(err, fetch.ErrRobotsDisallowed) || fetch.IsRetryable(err) {
			t.Errorf("%s: %v", p, err)
		}
	}
	mustFetch(t, f, fetch.Request{URL: site.URL("/page/1")})
	mustFetch(t, f, fetch.Request{URL: site.URL("/")})
	if n := len(site.HitsFor("/private/1")) + len(site.HitsFor("/private/2")); n != 0 {
		t.Fatalf("disallowed pages requested %d times", n)
	}
	if hits := site.HitsFor("/robots.txt"); len(hits) != 1 || hits[0].UserAgent != fetch.DefaultUserAgent {
		t.Fatalf("robots.txt hits %+v", hits)
	}
	// Without ROBOTSTXT_OBEY robots.txt is not even read.
	site.Reset()
	mustFetch(t, newFetcher(t, quick()), fetch.Request{URL: site.URL("/private/1")})
	if n := len(site.HitsFor("/robots.txt")); n != 0 {
		t.Fatalf("robots.txt read %d times without ROBOTSTXT_OBEY", n)
	}
}

func TestRobotsTxtIsPerHost(t *testing.T) {
	site := testsite.Start(t)
	open := testsite.StartAt(t, "127.0.0.2:0", testsite.WithRobots(http.StatusOK, "User-agent: *\nDisallow:\n"))
	f := newFetcher(t, obeying())
	mustFetch(t, f, fetch.Request{URL: open.URL("/private/1")})
	// Redirected to a host whose robots.txt forbids the target.
	_, err := f.Fetch(context.Background(), fetch.Request{URL: open.URL("/redirect?to=" + site.URL("/private/1"))})
	if !errors.Is(err, fetch.ErrRobotsDisallowed) {
		t.Fatalf("redirect to a disallowed page: %v", err)
	}
	if len(site.HitsFor("/robots.txt")) != 1 || len(open.HitsFor("/robots.txt")) != 1 {
		t.Fatalf("robots.txt hits %d and %d", len(site.HitsFor("/robots.txt")), len(open.HitsFor("/robots.txt")))
	}
}

func TestRobotsTxtUserAgentGroups(t *testing.T) {
	site := testsite.Start(t, testsite.WithRobots(http.StatusOK,
		"User-agent: scrapy-cluster-go\nDisallow: /page/\n\nUser-agent: otherbot\nDisallow: /allow/\n\nUser-agent: *\nDisallow: /private/\n"))
	tests := []struct {
		name        string
		robotsAgent string
		userAgent   string
		allowed     map[string]bool
	}{
		{"our default agent follows its own group", "", "", map[string]bool{"/page/1": false, "/private/1": true, "/allow/1": true}},
		{"a crawl's agent follows its group", "", "OtherBot/1.0 (+http://example.com)", map[string]bool{"/page/1": true, "/private/1": true, "/allow/1": false}},
		{"an unknown agent follows *", "", "Mozilla/5.0 (X11)", map[string]bool{"/page/1": true, "/private/1": false, "/allow/1": true}},
		{"ROBOTSTXT_USER_AGENT wins", "otherbot", "Mozilla/5.0", map[string]bool{"/page/1": true, "/allow/1": false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFetcher(t, obeying(func(c *fetch.Config) { c.RobotsUserAgent = tt.robotsAgent }))
			for path, allowed := range tt.allowed {
				_, err := f.Fetch(context.Background(), fetch.Request{URL: site.URL(path), UserAgent: tt.userAgent})
				if allowed != (err == nil) || (!allowed && !errors.Is(err, fetch.ErrRobotsDisallowed)) {
					t.Errorf("%s: %v, want allowed %v", path, err, allowed)
				}
			}
		})
	}
}

func TestRobotsTxtThatCannotBeHadAllowsEverything(t *testing.T) {
	for _, tt := range []struct {
		name   string
		status int
		body   string
	}{
		{"missing", http.StatusNotFound, "User-agent: *\nDisallow: /\n"},
		{"forbidden", http.StatusForbidden, "User-agent: *\nDisallow: /\n"},
		{"server error", http.StatusInternalServerError, "User-agent: *\nDisallow: /\n"},
		{"empty", http.StatusOK, ""},
		{"not robots.txt at all", http.StatusOK, "<html>\x00\xff{{}}</html>"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			site := testsite.Start(t, testsite.WithRobots(tt.status, tt.body))
			f := newFetcher(t, obeying())
			mustFetch(t, f, fetch.Request{URL: site.URL("/private/1")})
			mustFetch(t, f, fetch.Request{URL: site.URL("/page/1")})
		})
	}
	t.Run("hanging", func(t *testing.T) {
		release := make(chan struct{})
		site := testsite.Start(t, testsite.WithHandler("/robots.txt", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-release:
			}
		})))
		defer close(release)
		f := newFetcher(t, obeying(func(c *fetch.Config) { c.Timeout = 200 * time.Millisecond }))
		// The first Fetch waits for robots.txt and (as the load gives up at
		// about the same time) usually times out, retryably; once the load
		// has given up, everything is allowed.
		_, err := f.Fetch(context.Background(), fetch.Request{URL: site.URL("/private/1")})
		if err != nil && (!errors.Is(err, fetch.ErrTimeout) || !fetch.IsRetryable(err)) {
			t.Fatalf("first fetch: %v", err)
		}
		waitFor(t, "an allowed fetch", func() bool {
			_, err := f.Fetch(context.Background(), fetch.Request{URL: site.URL("/private/1")})
			return err == nil
		})
	})
}

// clock is a settable clock for the robots.txt cache.
type clock struct{ offset atomic.Int64 }

func (c *clock) now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *clock) advance(d time.Duration) { c.offset.Add(int64(d)) }

func TestRobotsTxtIsCachedForItsTTL(t *testing.T) {
	site := testsite.Start(t)
	f := newFetcher(t, obeying(func(c *fetch.Config) { c.RobotsCacheTTL = 10 * time.Minute }))
	var clk clock
	fetch.SetClock(f, clk.now)
	for range 5 {
		mustFetch(t, f, fetch.Request{URL: site.URL("/page/1")})
	}
	clk.advance(9 * time.Minute)
	mustFetch(t, f, fetch.Request{URL: site.URL("/page/1")})
	if n := len(site.HitsFor("/robots.txt")); n != 1 {
		t.Fatalf("robots.txt read %d times within its TTL", n)
	}
	clk.advance(2 * time.Minute)
	mustFetch(t, f, fetch.Request{URL: site.URL("/page/1")})
	if n := len(site.HitsFor("/robots.txt")); n != 2 {
		t.Fatalf("robots.txt read %d times after its TTL, want 2", n)
	}
}

func TestRobotsTxtThatFailedIsTriedAgainSooner(t *testing.T) {
	site := testsite.Start(t, testsite.WithRobots(http.StatusServiceUnavailable, ""))
	f := newFetcher(t, obeying())
	var clk clock
	fetch.SetClock(f, clk.now)
	mustFetch(t, f, fetch.Request{URL: site.URL("/page/1")})
	clk.advance(59 * time.Second)
	mustFetch(t, f, fetch.Request{URL: site.URL("/page/1")})
	clk.advance(2 * time.Second)
	mustFetch(t, f, fetch.Request{URL: site.URL("/page/1")})
	if n := len(site.HitsFor("/robots.txt")); n != 2 {
		t.Fatalf("robots.txt read %d times, want 2", n)
	}
}

func TestConcurrentFetchesShareOneRobotsTxtLoad(t *testing.T) {
	release := make(chan struct{})
	var loads atomic.Int32
	site := testsite.Start(t, testsite.WithHandler("/robots.txt", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		loads.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		_, _ = w.Write([]byte(testsite.DefaultRobots))
	})))
	f := newFetcher(t, obeying())
	const n = 16
	var started atomic.Int32
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			path := "/page/1"
			if i%2 == 1 {
				path = "/private/1"
			}
			started.Add(1)
			_, err := f.Fetch(context.Background(), fetch.Request{URL: site.URL(path)})
			if disallowed := i%2 == 1; (disallowed && !errors.Is(err, fetch.ErrRobotsDisallowed)) || (!disallowed && err != nil) {
				errs <- fmt.Errorf("%s: %v", path, err)
			}
		})
	}
	// Hold robots.txt until every Fetch has started and the load is under way.
	waitFor(t, "all fetches to start", func() bool { return started.Load() == n && loads.Load() >= 1 })
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("unexpected result: %v", err)
	}
	if got := loads.Load(); got != 1 {
		t.Fatalf("robots.txt loaded %d times, want 1", got)
	}
}

func TestRobotsTxtIsReadUpTo500KiB(t *testing.T) {
	padding := "# " + strings.Repeat("x", 600<<10) + "\n"
	for _, tt := range []struct {
		name, body string
		allowed    bool
	}{
		{"a rule before the cap holds", "User-agent: *\nDisallow: /page/\n" + padding, false},
		{"a rule past the cap is never read", "User-agent: *\nAllow: /\n" + padding + "User-agent: *\nDisallow: /page/\n", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			site := testsite.Start(t, testsite.WithRobots(http.StatusOK, tt.body))
			_, err := newFetcher(t, obeying()).Fetch(context.Background(), fetch.Request{URL: site.URL("/page/1")})
			if allowed := err == nil; allowed != tt.allowed || (err != nil && !errors.Is(err, fetch.ErrRobotsDisallowed)) {
				t.Fatalf("fetch: %v, want allowed %v", err, tt.allowed)
			}
		})
	}
}
