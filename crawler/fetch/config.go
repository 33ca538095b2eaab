package fetch

import (
	"fmt"
	"maps"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// DefaultUserAgent is USER_AGENT's default, in the form of Scrapy's
// ("Scrapy/VERSION (+https://scrapy.org)"); its robots.txt token is
// "scrapy-cluster-go".
const DefaultUserAgent = "Scrapy-Cluster-Go/1.3 (+https://github.com/scrapycluster/scrapy-cluster-go)"

// The defaults, in one place: the settings' and Config's zero values' both
// come from these.
const (
	defaultTimeout         = 10 * time.Second
	defaultMaxSize         = 10 << 20
	defaultMaxRedirects    = 20
	defaultRobotsTTL       = time.Hour
	defaultConcurrency     = 16
	defaultPerDomain       = 8
	defaultRetryTimes      = 3
	defaultAccept          = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
	defaultAcceptLanguage  = "en"
	defaultRetryStatusCode = http.StatusGatewayTimeout
)

func defaultHeaders() map[string]string {
	return map[string]string{"Accept": defaultAccept, "Accept-Language": defaultAcceptLanguage}
}

// The downloader's settings, Scrapy's names and defaults (times in
// seconds). The scheduler also reads CONCURRENT_REQUESTS and
// CONCURRENT_REQUESTS_PER_DOMAIN: they cap the requests in flight.
var (
	DownloadTimeout    = settings.Seconds("DOWNLOAD_TIMEOUT", defaultTimeout.Seconds(), "seconds for a whole request (redirects and body included)").Positive()
	DownloadMaxSize    = settings.Int("DOWNLOAD_MAXSIZE", defaultMaxSize, "bodies are cut here; (Go) with `CONCURRENT_REQUESTS` it sets the soft memory limit of Go's garbage collector, 2 × `CONCURRENT_REQUESTS` × `DOWNLOAD_MAXSIZE` + 3 × `KAFKA_PRODUCER_MAX_REQUEST_SIZE` + `FOLLOWUPS_HELD_BYTES` + 64 MiB, unless `GOMEMLIMIT` is set ([memory](production.md#fetching-safely))").Positive()
	RedirectEnabled    = settings.Bool("REDIRECT_ENABLED", true, "follow redirects; false: 3xx responses are crawl results as they are")
	RedirectMaxTimes   = settings.Int("REDIRECT_MAX_TIMES", defaultMaxRedirects, "redirects one request follows (`REDIRECT_ENABLED` false turns redirects off)").AtLeast(1)
	UserAgent          = settings.String("USER_AGENT", DefaultUserAgent, "sent when a request has no `useragent`")
	DefaultHeaders     = settings.StringMap("DEFAULT_REQUEST_HEADERS", defaultHeaders(), "sent with every request; a header set to `\"\"` is not sent")
	RobotsObey         = settings.Bool("ROBOTSTXT_OBEY", false, "honour robots.txt (cached per host)")
	RobotsUserAgent    = settings.String("ROBOTSTXT_USER_AGENT", "", "the robots.txt group matched; empty: the product token of the request's User-Agent").Ours()
	RobotsCacheTTL     = settings.Seconds("ROBOTSTXT_CACHE_TTL", int(defaultRobotsTTL.Seconds()), "seconds a host's robots.txt is kept").Ours().Positive()
	ConcurrentRequests = settings.Int("CONCURRENT_REQUESTS", defaultConcurrency, "requests being fetched at once, in all; as many fetched pages again may be parsed meanwhile "+
		"(Go: and as many again wait for Kafka to have their results, encoded, within 3 × `KAFKA_PRODUCER_MAX_REQUEST_SIZE` bytes, holding no body; "+
		"then up to 4 times as many wait for their acknowledgement, up to 5 ms to share a round trip (on a Redis Cluster up to `SCHEDULER_CLUSTER_ACK_LINGER_MS` for more of their domain's, and more of them), "+
		"holding nothing but the lease and the follow-ups; [requests in hand](crawler.md#requests-in-hand-go))").AtLeast(1)
	ConcurrentPerDomain = settings.Int("CONCURRENT_REQUESTS_PER_DOMAIN", defaultPerDomain, "requests being fetched at once per domain; (Go) an unmoderated domain's pop takes up to twice as many ahead "+
		"(`CONCURRENT_REQUESTS` in all), leased, to start as its fetches end ([popping ahead](throttling-and-crash-safety.md#the-cluster-wide-domain-throttle))").AtLeast(1)
	RetryTimes     = settings.Int("RETRY_TIMES", defaultRetryTimes, "retries of a request that got no response (a timeout, a connection error) or a status of `RETRY_HTTP_CODES`").AtLeast(0)
	RetryHTTPCodes = settings.Ints("RETRY_HTTP_CODES", []int{defaultRetryStatusCode}, "statuses retried; other 4xx and 5xx pages are crawl results")
	// Config's zero value blocks (AllowPrivate false): the default is the
	// safe one, whichever way a Config is made.
	BlockPrivate    = settings.Bool("FETCH_BLOCK_PRIVATE", !Config{}.AllowPrivate, "refuse loopback, private, link-local and other internal addresses ([fetching safely](production.md#fetching-safely))").Ours()
	AllowedNetworks = settings.Strings("FETCH_ALLOWED_NETWORKS", []string{}, "internal networks fetched despite `FETCH_BLOCK_PRIVATE`, CIDR, comma-separated (e.g. `127.0.0.0/8,::1/128`)").Ours()
)

// Settings are the downloader's settings, for the crawler's settings.Group.
func Settings() settings.Group {
	return settings.Declare(DownloadTimeout, DownloadMaxSize, RedirectEnabled, RedirectMaxTimes, UserAgent, DefaultHeaders, RobotsObey,
		RobotsUserAgent, RobotsCacheTTL, ConcurrentRequests, ConcurrentPerDomain, RetryTimes, RetryHTTPCodes, BlockPrivate, AllowedNetworks)
}

// Config is the download part of the crawler's settings. The zero value
// works: New uses the default for every zero field marked so below.
type Config struct {
	// Timeout bounds a whole Fetch: waiting for robots.txt, connecting,
	// every redirect hop and reading the body (DOWNLOAD_TIMEOUT; zero: 10 s).
	Timeout time.Duration
	// MaxSize is the most body bytes kept, after decompression; a longer
	// body is cut and the Result marked Truncated (DOWNLOAD_MAXSIZE; zero: 10 MiB).
	MaxSize int64
	// DisableRedirects returns 3xx responses as they are instead of
	// following them (REDIRECT_ENABLED false).
	DisableRedirects bool
	// MaxRedirects is how many redirects one Fetch follows (REDIRECT_MAX_TIMES; zero: 20).
	MaxRedirects int
	// UserAgent is sent when the request names none (USER_AGENT; zero:
	// DefaultUserAgent).
	UserAgent string
	// DefaultHeaders are sent with every request; a header set to "" is
	// not sent (DEFAULT_REQUEST_HEADERS; nil: Scrapy's Accept and
	// Accept-Language).
	DefaultHeaders map[string]string
	// ObeyRobots makes Fetch refuse URLs robots.txt disallows (ROBOTSTXT_OBEY).
	ObeyRobots bool
	// RobotsUserAgent is the token matched against robots.txt user-agent
	// groups (ROBOTSTXT_USER_AGENT; zero: the product token of the request's
	// User-Agent, e.g. "scrapy-cluster-go").
	RobotsUserAgent string
	// RobotsCacheTTL is how long a host's robots.txt is kept (ROBOTSTXT_CACHE_TTL; zero: 1 h).
	RobotsCacheTTL time.Duration
	// MaxConns and MaxConnsPerHost size the idle connection pools
	// (CONCURRENT_REQUESTS, CONCURRENT_REQUESTS_PER_DOMAIN; zero: 16 and 8).
	// The engine enforces them as concurrency limits.
	MaxConns        int
	MaxConnsPerHost int
	// RetryTimes and RetryHTTPCodes are for the engine: how often a request
	// that failed with a retryable error or status is tried again
	// (RETRY_TIMES, 3), and which statuses are retried (RETRY_HTTP_CODES,
	// [504]). Zero values mean no retries; DefaultConfig has the defaults.
	RetryTimes     int
	RetryHTTPCodes []int
	// Proxy chooses a proxy per request (nil: the standard environment
	// variables HTTP_PROXY, HTTPS_PROXY and NO_PROXY, read by New, as
	// http.ProxyFromEnvironment reads them: requests to localhost and
	// loopback addresses never use a proxy). The proxy's own address is
	// never refused; what it connects to is its business (see AllowPrivate).
	Proxy func(*http.Request) (*url.URL, error)
	// AllowPrivate turns the address guard off (FETCH_BLOCK_PRIVATE false).
	// By default (false) the fetcher refuses, with ErrForbiddenAddress, to
	// connect to loopback, private (RFC 1918, fc00::/7), link-local
	// (169.254/16, fe80::/10), shared (100.64/10), unspecified, multicast,
	// broadcast and reserved addresses and their IPv4-mapped forms: it
	// checks each address it dials, whatever name led there, and hosts
	// written as addresses (127.1, 2130706433, [::ffff:127.0.0.1]) or
	// localhost names before it sends anything. Through a proxy only the
	// latter is possible: the proxy resolves names and must refuse internal
	// addresses itself.
	AllowPrivate bool
	// AllowedNetworks are internal networks the fetcher may reach despite
	// the guard, e.g. 127.0.0.0/8 for a test site on loopback
	// (FETCH_ALLOWED_NETWORKS; nil: none).
	AllowedNetworks []netip.Prefix
}

// DefaultConfig is the configuration the settings' defaults describe.
func DefaultConfig() Config {
	c := Config{}.withDefaults()
	c.RetryTimes = defaultRetryTimes
	c.RetryHTTPCodes = []int{defaultRetryStatusCode}
	return c
}

// withDefaults fills the zero fields that have defaults.
func (c Config) withDefaults() Config {
	positiveOr(&c.Timeout, defaultTimeout)
	positiveOr(&c.MaxSize, defaultMaxSize)
	positiveOr(&c.MaxRedirects, defaultMaxRedirects)
	positiveOr(&c.RobotsCacheTTL, defaultRobotsTTL)
	positiveOr(&c.MaxConns, defaultConcurrency)
	positiveOr(&c.MaxConnsPerHost, defaultPerDomain)
	if c.UserAgent == "" {
		c.UserAgent = DefaultUserAgent
	}
	if c.DefaultHeaders == nil {
		c.DefaultHeaders = defaultHeaders()
	}
	return c
}

// positiveOr sets *v to def unless it is positive.
func positiveOr[T int | int64 | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// ConfigFromSettings reads the download settings (Settings). It fails
// with the setting's name when a value is unusable.
func ConfigFromSettings(s *settings.Settings) (Config, error) {
	allowed, err := ParseNetworks(AllowedNetworks.From(s))
	if err != nil {
		return Config{}, fmt.Errorf("setting %s: %w", AllowedNetworks.Name(), err)
	}
	cfg := Config{
		Timeout:          DownloadTimeout.From(s),
		MaxSize:          int64(DownloadMaxSize.From(s)),
		DisableRedirects: !RedirectEnabled.From(s),
		MaxRedirects:     RedirectMaxTimes.From(s),
		UserAgent:        UserAgent.From(s),
		DefaultHeaders:   DefaultHeaders.From(s),
		ObeyRobots:       RobotsObey.From(s),
		RobotsUserAgent:  RobotsUserAgent.From(s),
		RobotsCacheTTL:   RobotsCacheTTL.From(s),
		MaxConns:         ConcurrentRequests.From(s),
		MaxConnsPerHost:  ConcurrentPerDomain.From(s),
		RetryTimes:       RetryTimes.From(s),
		RetryHTTPCodes:   RetryHTTPCodes.From(s),
		AllowPrivate:     !BlockPrivate.From(s),
		AllowedNetworks:  allowed,
	}
	return cfg, cfg.Validate()
}

// ParseNetworks reads networks in CIDR notation ("127.0.0.0/8",
// "::1/128"); a bare address is a network of that one address. Host bits
// are cleared ("10.1.2.3/8" is 10.0.0.0/8).
func ParseNetworks(cidrs []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range cidrs {
		s = strings.TrimSpace(s)
		p, err := netip.ParsePrefix(s)
		if err != nil {
			addr, aerr := netip.ParseAddr(s)
			if aerr != nil || addr.Zone() != "" {
				return nil, fmt.Errorf("%q is not a network in CIDR notation (such as 10.0.0.0/8 or fd00::/8): %w", s, err)
			}
			p = netip.PrefixFrom(addr, addr.BitLen())
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// Validate reports the first unusable field of a configuration from
// ConfigFromSettings or DefaultConfig, by its setting's name: what the
// settings' bounds (which settings.Load enforces) do not say. New itself
// accepts zero fields and fills them in.
func (c Config) Validate() error {
	switch {
	case c.UserAgent == "" || !httpguts.ValidHeaderFieldValue(c.UserAgent):
		return fmt.Errorf("setting USER_AGENT: %q is not a usable header value", c.UserAgent)
	case !httpguts.ValidHeaderFieldValue(c.RobotsUserAgent):
		return fmt.Errorf("setting ROBOTSTXT_USER_AGENT: %q is not a valid user agent", c.RobotsUserAgent)
	}
	for _, p := range c.AllowedNetworks {
		if !p.IsValid() {
			return fmt.Errorf("setting FETCH_ALLOWED_NETWORKS: %v is not a valid network", p)
		}
	}
	for _, code := range c.RetryHTTPCodes {
		if code < 100 || code > 599 {
			return fmt.Errorf("setting RETRY_HTTP_CODES: %d is not an HTTP status", code)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.DefaultHeaders)) {
		if !httpguts.ValidHeaderFieldName(name) {
			return fmt.Errorf("setting DEFAULT_REQUEST_HEADERS: %q is not a valid header name", name)
		}
		if !httpguts.ValidHeaderFieldValue(c.DefaultHeaders[name]) {
			return fmt.Errorf("setting DEFAULT_REQUEST_HEADERS: header %s: %q is not a valid header value", name, c.DefaultHeaders[name])
		}
	}
	return nil
}

// RetryableStatus reports whether a response with this status is retried
// (its code is in cfg.RetryHTTPCodes, RETRY_HTTP_CODES). Other statuses,
// 4xx and 5xx included, are crawl results like any page.
func RetryableStatus(code int, cfg Config) bool { return slices.Contains(cfg.RetryHTTPCodes, code) }
