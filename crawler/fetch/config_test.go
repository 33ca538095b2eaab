package fetch_test

import (
	"maps"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/fetch"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

func load(t *testing.T, env ...string) (*settings.Settings, error) {
	t.Helper()
	return settings.Load(fetch.Settings(), settings.Options{Environ: env})
}

func TestTheDefaultSettingsAreTheDefaultConfig(t *testing.T) {
	s, err := load(t)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := fetch.ConfigFromSettings(s)
	if err != nil {
		t.Fatal(err)
	}
	want := fetch.DefaultConfig()
	if cfg.Timeout != want.Timeout || cfg.MaxSize != want.MaxSize || cfg.DisableRedirects || cfg.MaxRedirects != want.MaxRedirects ||
		cfg.UserAgent != want.UserAgent || !maps.Equal(cfg.DefaultHeaders, want.DefaultHeaders) || cfg.ObeyRobots ||
		cfg.RobotsUserAgent != "" || cfg.RobotsCacheTTL != want.RobotsCacheTTL || cfg.MaxConns != 16 || cfg.MaxConnsPerHost != 8 ||
		cfg.RetryTimes != 3 || !slices.Equal(cfg.RetryHTTPCodes, []int{504}) || cfg.Proxy != nil ||
		cfg.AllowPrivate || len(cfg.AllowedNetworks) != 0 || cfg.AllowPrivate != want.AllowPrivate {
		t.Fatalf("from settings %+v\nwant %+v", cfg, want)
	}
	if err := want.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.Timeout != 10*time.Second || cfg.MaxSize != 10<<20 || !strings.HasPrefix(cfg.UserAgent, "Scrapy-Cluster-Go/") {
		t.Fatalf("defaults %+v", cfg)
	}
}

func TestSettingsOverrideTheDefaults(t *testing.T) {
	s, err := load(t, "DOWNLOAD_TIMEOUT=2.5", "DOWNLOAD_MAXSIZE=1000", "REDIRECT_ENABLED=false", "REDIRECT_MAX_TIMES=3",
		"USER_AGENT=MyBot/1", `DEFAULT_REQUEST_HEADERS={"X-Team": "crawl", "Accept-Language": "de"}`, "ROBOTSTXT_OBEY=true",
		"ROBOTSTXT_USER_AGENT=mybot", "ROBOTSTXT_CACHE_TTL=60", "CONCURRENT_REQUESTS=32", "CONCURRENT_REQUESTS_PER_DOMAIN=4",
		"RETRY_TIMES=0", "RETRY_HTTP_CODES=503,504", "FETCH_BLOCK_PRIVATE=false",
		"FETCH_ALLOWED_NETWORKS=127.0.0.0/8, ::1/128,10.1.2.3/8,192.168.0.7")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := fetch.ConfigFromSettings(s)
	if err != nil {
		t.Fatal(err)
	}
	wantHeaders := map[string]string{"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", "Accept-Language": "de", "X-Team": "crawl"}
	if cfg.Timeout != 2500*time.Millisecond || cfg.MaxSize != 1000 || !cfg.DisableRedirects || cfg.MaxRedirects != 3 ||
		cfg.UserAgent != "MyBot/1" || !maps.Equal(cfg.DefaultHeaders, wantHeaders) || !cfg.ObeyRobots || cfg.RobotsUserAgent != "mybot" ||
		cfg.RobotsCacheTTL != time.Minute || cfg.MaxConns != 32 || cfg.MaxConnsPerHost != 4 || cfg.RetryTimes != 0 ||
		!slices.Equal(cfg.RetryHTTPCodes, []int{503, 504}) || !cfg.AllowPrivate {
		t.Fatalf("config %+v", cfg)
	}
	wantNetworks := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128"),
		netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.168.0.7/32")}
	if !slices.Equal(cfg.AllowedNetworks, wantNetworks) {
		t.Fatalf("allowed networks %v, want %v", cfg.AllowedNetworks, wantNetworks)
	}
	if !fetch.RetryableStatus(503, cfg) || fetch.RetryableStatus(500, cfg) {
		t.Fatal("RetryableStatus ignores RETRY_HTTP_CODES")
	}
}

func TestUnusableSettingsAreRejectedByName(t *testing.T) {
	tests := []struct{ env, want string }{
		{"DOWNLOAD_TIMEOUT=0", "DOWNLOAD_TIMEOUT"},
		{"DOWNLOAD_TIMEOUT=-1", "DOWNLOAD_TIMEOUT"},
		{"DOWNLOAD_MAXSIZE=0", "DOWNLOAD_MAXSIZE"},
		{"REDIRECT_MAX_TIMES=0", "REDIRECT_MAX_TIMES"},
		{"USER_AGENT=", "USER_AGENT"},
		{"USER_AGENT=bad\x01agent", "USER_AGENT"},
		{"ROBOTSTXT_CACHE_TTL=0", "ROBOTSTXT_CACHE_TTL"},
		{"CONCURRENT_REQUESTS=0", "CONCURRENT_REQUESTS"},
		{"CONCURRENT_REQUESTS_PER_DOMAIN=-2", "CONCURRENT_REQUESTS_PER_DOMAIN"},
		{"RETRY_TIMES=-1", "RETRY_TIMES"},
		{"RETRY_HTTP_CODES=504,999", "RETRY_HTTP_CODES"},
		{`DEFAULT_REQUEST_HEADERS={"Bad Name": "x"}`, "DEFAULT_REQUEST_HEADERS"},
		{`DEFAULT_REQUEST_HEADERS={"X-A": "line\nbreak"}`, "DEFAULT_REQUEST_HEADERS"},
		{"FETCH_ALLOWED_NETWORKS=127.0.0.0/33", "FETCH_ALLOWED_NETWORKS"},
		{"FETCH_ALLOWED_NETWORKS=10.0.0.0/8,intranet", "FETCH_ALLOWED_NETWORKS"},
		{"FETCH_ALLOWED_NETWORKS=fe80::1%eth0", "FETCH_ALLOWED_NETWORKS"},
		{"FETCH_BLOCK_PRIVATE=maybe", "FETCH_BLOCK_PRIVATE"},
	}
	for _, tt := range tests {
		s, err := load(t, tt.env)
		if err == nil {
			_, err = fetch.ConfigFromSettings(s)
		}
		if err == nil || !strings.Contains(err.Error(), "setting "+tt.want) {
			t.Errorf("%q: %v", tt.env, err)
		}
	}
}
