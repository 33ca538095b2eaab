package session

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

var redisServer harness.SharedRedis

func TestMain(m *testing.M) { redisServer.Main(m) }

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// sent is the Cookie header a jar gives u.
func sent(t *testing.T, j *Jar, u string) string {
	t.Helper()
	var parts []string
	for _, c := range j.Cookies(mustURL(t, u)) {
		parts = append(parts, c.Name+"="+c.Value)
	}
	slices.Sort(parts) // the jar orders by path length, then by when it got them
	return strings.Join(parts, "; ")
}

func setCookies(t *testing.T, j *Jar, u string, lines ...string) {
	t.Helper()
	var cs []*http.Cookie
	for _, l := range lines {
		c, err := http.ParseSetCookie(l)
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	j.SetCookies(mustURL(t, u), cs)
}

func TestTwoCrawlersShareTheJarWithBrowserRules(t *testing.T) {
	ctx := context.Background()
	rdb := redisServer.EmptyClient(t)
	crawl := Crawl{AppID: "app", CrawlID: "shared"}
	a, b := NewStore(rdb, time.Hour), NewStore(rdb, time.Hour)

	one, err := a.Load(ctx, crawl)
	if err != nil {
		t.Fatal(err)
	}
	setCookies(t, one, "https://www.shop.example/login",
		"auth=t1; Path=/account; HttpOnly",
		"site=1; Domain=shop.example; Path=/",
		"tls=1; Path=/; Secure",
		"short=1; Path=/; Max-Age=60",
		"bad=1; Domain=example; Path=/", // a public suffix: refused
		"other=1; Domain=elsewhere.example; Path=/")
	if err := a.Save(ctx, one); err != nil {
		t.Fatal(err)
	}
	two, err := b.Load(ctx, crawl)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ url, want string }{
		{"https://www.shop.example/account/1", "auth=t1; short=1; site=1; tls=1"},
		{"http://www.shop.example/account/1", "auth=t1; short=1; site=1"}, // no Secure over http
		{"https://www.shop.example/", "short=1; site=1; tls=1"},           // auth's path only
		{"https://img.shop.example/", "site=1"},                           // the domain cookie only
		{"https://elsewhere.example/", ""},
	} {
		if got := sent(t, two, tc.url); got != tc.want {
			t.Errorf("the other crawler sends %s: %q, want %q", tc.url, got, tc.want)
		}
	}
	// Max-Age is kept as an absolute time, so that a crawler loading the
	// jar later does not make the cookie live longer.
	stored := rdb.HGetAll(ctx, rediskeys.SessionKey(crawl.AppID, crawl.CrawlID)).Val()
	short := stored["www.shop.example;/;short"]
	if !strings.Contains(short, "\nshort=1; Path=/; Expires=") || strings.Contains(short, "Max-Age") {
		t.Errorf("short's record %q, want an absolute Expires", short)
	}
	if len(stored) != 4 {
		t.Errorf("stored %d cookies, want 4 (not those the jar refuses): %v", len(stored), stored)
	}
	// A cookie deleted by one crawler is gone for the other.
	setCookies(t, two, "https://www.shop.example/logout", "auth=; Path=/account; Max-Age=0")
	if err := b.Save(ctx, two); err != nil {
		t.Fatal(err)
	}
	again, _ := a.Load(ctx, crawl)
	if got := sent(t, again, "https://www.shop.example/account/"); got != "short=1; site=1; tls=1" {
		t.Errorf("after the logout: %q", got)
	}
}

func TestTheJarExpiresWithTheCrawl(t *testing.T) {
	ctx := context.Background()
	rdb := redisServer.EmptyClient(t)
	s := NewStore(rdb, 90*time.Second)
	for _, tc := range []struct {
		crawl       Crawl
		least, most time.Duration
	}{
		{Crawl{AppID: "app", CrawlID: "no-expiry"}, 80 * time.Second, 90 * time.Second},
		{Crawl{AppID: "app", CrawlID: "expires", Expires: float64(time.Now().Add(time.Hour).Unix())}, 59 * time.Minute, time.Hour},
	} {
		j, _ := s.Load(ctx, tc.crawl)
		setCookies(t, j, "http://shop.example/", "a=1; Path=/")
		if err := s.Save(ctx, j); err != nil {
			t.Fatal(err)
		}
		ttl := rdb.TTL(ctx, rediskeys.SessionKey(tc.crawl.AppID, tc.crawl.CrawlID)).Val()
		if ttl < tc.least || ttl > tc.most {
			t.Errorf("%s: ttl %v, want %v..%v", tc.crawl.CrawlID, ttl, tc.least, tc.most)
		}
	}
}

func TestAJarGivenNothingWritesNothing(t *testing.T) {
	ctx := context.Background()
	rdb := redisServer.EmptyClient(t)
	s := NewStore(rdb, time.Hour)
	j, _ := s.Load(ctx, Crawl{AppID: "app", CrawlID: "quiet"})
	_ = j.Cookies(mustURL(t, "http://shop.example/"))
	if err := s.Save(ctx, j); err != nil {
		t.Fatal(err)
	}
	if n := rdb.DBSize(ctx).Val(); n != 0 {
		t.Errorf("%d keys written", n)
	}
}

func TestOversizedCookiesAreNotKept(t *testing.T) {
	j := NewJar(Crawl{AppID: "app", CrawlID: "big"})
	setCookies(t, j, "http://shop.example/", "big="+strings.Repeat("x", maxCookieBytes)+"; Path=/", "small=1; Path=/")
	if got := sent(t, j, "http://shop.example/"); got != "small=1" {
		t.Errorf("got %q", got)
	}
}
