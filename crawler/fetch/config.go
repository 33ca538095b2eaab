package fetch

import (
	"errors"
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

// The defaults, in one place: Defaults (the settings) and Config's zero
// values both come from these.
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

// Defaults are the crawler's download settings. The crawler adds them to its
// settings.Defaults (maps.Copy).
func Defaults() settings.Defaults {
	return settings.Defaults{
		"DOWNLOAD_TIMEOUT":               defaultTimeout.Seconds(),
		"DOWNLOAD_MAXSIZE":               defaultMaxSize,
		"REDIRECT_ENABLED":               true,
		"REDIRECT_MAX_TIMES":             defaultMaxRedirects,
		"USER_AGENT":                     DefaultUserAgent,
		"DEFAULT_REQUEST_HEADERS":        defaultHeaders(),
		"ROBOTSTXT_OBEY":                 false,
		"ROBOTSTXT_USER_AGENT":           "",
		"ROBOTSTXT_CACHE_TTL":            int(defaultRobotsTTL.Seconds()),
		"CONCURRENT_REQUESTS":            defaultConcurrency,
		"CONCURRENT_REQUESTS_PER_DOMAIN": defaultPerDomain,
		"RETRY_TIMES":                    defaultRetryTimes,
		"RETRY_HTTP_CODES":               []int{defaultRetryStatusCode},
		// Config's zero value blocks (AllowPrivate false): the default is
		// the safe one, whichever way a Config is made.
		"FETCH_BLOCK_PRIVATE":    !Config{}.AllowPrivate,
		"FETCH_ALLOWED_NETWORKS": []string{},
	}
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

// DefaultConfig is the configuration Defaults describe.
func DefaultConfig() Config {
	c := Config{}.withDefaults()
	c.RetryTimes = defaultRetryTimes
	c.RetryHTTPCodes = []int{defaultRetryStatusCode}
	return c
}

// withDefaults fills the zero fields that have defaults.
func (c Config) withDefaults() Config {
	if c.Timeout <= 0 {
		c.Timeout = defaultTimeout
	}
	if c.MaxSize <= 0 {
		c.MaxSize = defaultMaxSize
	}
	if c.MaxRedirects <= 0 {
		c.MaxRedirects = defaultMaxRedirects
	}
	if c.UserAgent == "" {
		c.UserAgent = DefaultUserAgent
	}
	if c.DefaultHeaders == nil {
		c.DefaultHeaders = defaultHeaders()
	}
	if c.RobotsCacheTTL <= 0 {
		c.RobotsCacheTTL = defaultRobotsTTL
	}
	if c.MaxConns <= 0 {
		c.MaxConns = defaultConcurrency
	}
	if c.MaxConnsPerHost <= 0 {
		c.MaxConnsPerHost = defaultPerDomain
	}
	return c
}

// ConfigFromSettings reads the download settings (see Defaults). It fails
// with the setting's name when a value is unusable.
func ConfigFromSettings(s *settings.Settings) (Config, error) {
	headers, err := settings.Lookup[map[string]string](s, "DEFAULT_REQUEST_HEADERS")
	if err != nil {
		return Config{}, err
	}
	allowed, err := ParseNetworks(s.Strings("FETCH_ALLOWED_NETWORKS"))
	if err != nil {
		return Config{}, fmt.Errorf("setting FETCH_ALLOWED_NETWORKS: %w", err)
	}
	cfg := Config{
		Timeout:          s.Seconds("DOWNLOAD_TIMEOUT"),
		MaxSize:          int64(s.Int("DOWNLOAD_MAXSIZE")),
		DisableRedirects: !s.Bool("REDIRECT_ENABLED"),
		MaxRedirects:     s.Int("REDIRECT_MAX_TIMES"),
		UserAgent:        s.String("USER_AGENT"),
		DefaultHeaders:   headers,
		ObeyRobots:       s.Bool("ROBOTSTXT_OBEY"),
		RobotsUserAgent:  s.String("ROBOTSTXT_USER_AGENT"),
		RobotsCacheTTL:   s.Seconds("ROBOTSTXT_CACHE_TTL"),
		MaxConns:         s.Int("CONCURRENT_REQUESTS"),
		MaxConnsPerHost:  s.Int("CONCURRENT_REQUESTS_PER_DOMAIN"),
		RetryTimes:       s.Int("RETRY_TIMES"),
		RetryHTTPCodes:   s.Ints("RETRY_HTTP_CODES"),
		AllowPrivate:     !s.Bool("FETCH_BLOCK_PRIVATE"),
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

// Validate reports the first unusable field of a complete configuration
// (from ConfigFromSettings or DefaultConfig), by its setting's name. New
// itself accepts zero fields and fills them in.
func (c Config) Validate() error {
	switch {
	case c.Timeout <= 0:
		return errors.New("setting DOWNLOAD_TIMEOUT: must be positive")
	case c.MaxSize <= 0:
		return errors.New("setting DOWNLOAD_MAXSIZE: must be a positive number of bytes")
	case c.MaxRedirects <= 0:
		return errors.New("setting REDIRECT_MAX_TIMES: must be at least 1 (REDIRECT_ENABLED false turns redirects off)")
	case c.RobotsCacheTTL <= 0:
		return errors.New("setting ROBOTSTXT_CACHE_TTL: must be positive")
	case c.MaxConns <= 0:
		return errors.New("setting CONCURRENT_REQUESTS: must be at least 1")
	case c.MaxConnsPerHost <= 0:
		return errors.New("setting CONCURRENT_REQUESTS_PER_DOMAIN: must be at least 1")
	case c.RetryTimes < 0:
		return errors.New("setting RETRY_TIMES: must not be negative")
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
