package scheduler

import (
	"fmt"
	"regexp"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// Defaults are the scheduler's settings, names and defaults as the
// original's crawler settings.py (settings this implementation adds are
// marked "(Go)"):
//
//	SCHEDULER_PERSIST                     true   false clears the spider's queues and filters when the crawler stops
//	SCHEDULER_QUEUE_REFRESH               10     seconds between scans for domain queues (new queues are also announced at once)
//	SCHEDULER_QUEUE_TIMEOUT               3600   seconds an unused domain queue stays in memory
//	SCHEDULER_BACKLOG_BLACKLIST           true   false: requests for blacklisted domains are not queued at all
//	SCHEDULER_TYPE_ENABLED                true   throttle per spider type
//	SCHEDULER_IP_ENABLED                  true   throttle per public IP address
//	SCHEDULER_IP_REFRESH                  60     seconds between public IP lookups
//	SCHEUDLER_ITEM_RETRIES                2      accepted for compatibility (the original's misspelt name); the scheduler waits on denials instead of cycling
//	PUBLIC_IP_URL                         "http://ip.42.pl/raw"  where the public IP is read; "" never looks it up (127.0.0.1)
//	IP_ADDR_REGEX                         the first IPv4 address in the answer
//	QUEUE_HITS                            10     pops per QUEUE_WINDOW per domain, unless the domain config says otherwise
//	QUEUE_WINDOW                          60     seconds
//	QUEUE_MODERATED                       true   spread the hits evenly over the window
//	DUPEFILTER_TIMEOUT                    600    seconds a crawl's duplicate filter outlives its last queued request
//	GLOBAL_PAGE_PER_DOMAIN_LIMIT          0      pages any crawl may queue per domain; 0 no limit
//	GLOBAL_PAGE_PER_DOMAIN_LIMIT_TIMEOUT  600    seconds that count outlives its last change
//	DOMAIN_MAX_PAGE_TIMEOUT               600    seconds a crawl's domain_max_pages count outlives its last change
//	LEASE_TIMEOUT                         20     (Go) seconds a popped request stays leased to a crawler that stopped renewing it
//	LEASE_REAP_INTERVAL                   5      (Go) seconds between returns of expired leases to their queues
func Defaults() settings.Defaults {
	return settings.Defaults{
		"SCHEDULER_PERSIST":                    true,
		"SCHEDULER_QUEUE_REFRESH":              10,
		"SCHEDULER_QUEUE_TIMEOUT":              3600,
		"SCHEDULER_BACKLOG_BLACKLIST":          true,
		"SCHEDULER_TYPE_ENABLED":               true,
		"SCHEDULER_IP_ENABLED":                 true,
		"SCHEDULER_IP_REFRESH":                 60,
		"SCHEUDLER_ITEM_RETRIES":               2,
		"PUBLIC_IP_URL":                        "http://ip.42.pl/raw",
		"IP_ADDR_REGEX":                        `(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})`,
		"QUEUE_HITS":                           10,
		"QUEUE_WINDOW":                         60,
		"QUEUE_MODERATED":                      true,
		"DUPEFILTER_TIMEOUT":                   600,
		"GLOBAL_PAGE_PER_DOMAIN_LIMIT":         0,
		"GLOBAL_PAGE_PER_DOMAIN_LIMIT_TIMEOUT": 600,
		"DOMAIN_MAX_PAGE_TIMEOUT":              600,
		"LEASE_TIMEOUT":                        20.0,
		"LEASE_REAP_INTERVAL":                  5.0,
	}
}

// Config is what the scheduler needs to know.
type Config struct {
	// SpiderID is the spider type whose queues this scheduler serves.
	SpiderID string
	// Hits per Window, Moderated: the default domain throttle.
	Hits      int
	Window    time.Duration
	Moderated bool
	// ByType and ByIP choose the throttle style (the keys' parts).
	ByType, ByIP bool
	// PublicIPURL, IPRegex and IPRefresh find the public IP for ByIP.
	PublicIPURL string
	IPRegex     *regexp.Regexp
	IPRefresh   time.Duration
	// QueueRefresh is how often queues are rescanned; QueueTimeout how long
	// an unused domain stays in memory.
	QueueRefresh, QueueTimeout time.Duration
	// BacklogBlacklist: queue requests for blacklisted domains anyway.
	BacklogBlacklist bool
	// Persist: keep queues and filters when the crawler stops.
	Persist bool
	// DupeTimeout, DomainMaxPageTimeout, GlobalPageLimit(+Timeout): the filters.
	DupeTimeout          time.Duration
	DomainMaxPageTimeout time.Duration
	GlobalPageLimit      int
	GlobalPageTimeout    time.Duration
	// LeaseTTL and ReapInterval: crash safety.
	LeaseTTL, ReapInterval time.Duration
	// Concurrency and PerDomain cap the requests in flight.
	Concurrency, PerDomain int
	// LedgerTTL is how long a crawl's ledger lives after its last new work
	// (LEDGER_TTL; 0: ledger.DefaultTTL).
	LedgerTTL time.Duration
}

func (c Config) ledgerTTL() time.Duration {
	if c.LedgerTTL <= 0 {
		return ledger.DefaultTTL
	}
	return c.LedgerTTL
}

// ConfigFromSettings reads the scheduler's settings (and
// CONCURRENT_REQUESTS, CONCURRENT_REQUESTS_PER_DOMAIN, LEDGER_TTL) for
// spiderID.
func ConfigFromSettings(s *settings.Settings, spiderID string) (Config, error) {
	re, err := regexp.Compile(s.String("IP_ADDR_REGEX"))
	if err != nil {
		return Config{}, fmt.Errorf("setting IP_ADDR_REGEX: %w", err)
	}
	ledgerTTL, err := ledger.TTLFromSettings(s)
	if err != nil {
		return Config{}, err
	}
	c := Config{
		LedgerTTL: ledgerTTL,
		SpiderID:  spiderID, Hits: s.Int("QUEUE_HITS"), Window: s.Seconds("QUEUE_WINDOW"), Moderated: s.Bool("QUEUE_MODERATED"),
		ByType: s.Bool("SCHEDULER_TYPE_ENABLED"), ByIP: s.Bool("SCHEDULER_IP_ENABLED"),
		PublicIPURL: s.String("PUBLIC_IP_URL"), IPRegex: re, IPRefresh: s.Seconds("SCHEDULER_IP_REFRESH"),
		QueueRefresh: s.Seconds("SCHEDULER_QUEUE_REFRESH"), QueueTimeout: s.Seconds("SCHEDULER_QUEUE_TIMEOUT"),
		BacklogBlacklist: s.Bool("SCHEDULER_BACKLOG_BLACKLIST"), Persist: s.Bool("SCHEDULER_PERSIST"),
		DupeTimeout: s.Seconds("DUPEFILTER_TIMEOUT"), DomainMaxPageTimeout: s.Seconds("DOMAIN_MAX_PAGE_TIMEOUT"),
		GlobalPageLimit: s.Int("GLOBAL_PAGE_PER_DOMAIN_LIMIT"), GlobalPageTimeout: s.Seconds("GLOBAL_PAGE_PER_DOMAIN_LIMIT_TIMEOUT"),
		LeaseTTL: s.Seconds("LEASE_TIMEOUT"), ReapInterval: s.Seconds("LEASE_REAP_INTERVAL"),
		Concurrency: s.Int("CONCURRENT_REQUESTS"), PerDomain: s.Int("CONCURRENT_REQUESTS_PER_DOMAIN"),
	}
	return c, c.validate()
}

func (c Config) validate() error {
	switch {
	case c.SpiderID == "":
		return fmt.Errorf("no spider type given")
	case c.Hits < 1:
		return fmt.Errorf("setting QUEUE_HITS: must be at least 1")
	case c.Window <= 0:
		return fmt.Errorf("setting QUEUE_WINDOW: must be positive")
	case c.QueueRefresh <= 0:
		return fmt.Errorf("setting SCHEDULER_QUEUE_REFRESH: must be positive")
	case c.LeaseTTL < time.Second:
		return fmt.Errorf("setting LEASE_TIMEOUT: must be at least 1 second")
	case c.ReapInterval <= 0:
		return fmt.Errorf("setting LEASE_REAP_INTERVAL: must be positive")
	case c.Concurrency < 1:
		return fmt.Errorf("setting CONCURRENT_REQUESTS: must be at least 1")
	case c.PerDomain < 1:
		return fmt.Errorf("setting CONCURRENT_REQUESTS_PER_DOMAIN: must be at least 1")
	case c.DupeTimeout <= 0:
		return fmt.Errorf("setting DUPEFILTER_TIMEOUT: must be positive")
	}
	return nil
}
