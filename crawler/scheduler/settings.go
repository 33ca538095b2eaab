package scheduler

import (
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/fetch"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisconn"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/throttle"
)

// The scheduler's settings, names and defaults as the original's crawler
// settings.py (times in seconds).
var (
	Persist                = settings.Bool("SCHEDULER_PERSIST", true, "false: the spider's queues and filters are cleared when the crawler stops")
	QueueRefresh           = settings.Seconds("SCHEDULER_QUEUE_REFRESH", 10, "seconds between scans for domain queues (new queues are also announced at once)").Positive()
	QueueTimeout           = settings.Seconds("SCHEDULER_QUEUE_TIMEOUT", 3600, "seconds an unused domain queue stays in memory")
	BacklogBlacklist       = settings.Bool("SCHEDULER_BACKLOG_BLACKLIST", true, "false: requests for blacklisted domains are not even queued")
	TypeEnabled            = settings.Bool("SCHEDULER_TYPE_ENABLED", true, "throttle per spider type")
	IPEnabled              = settings.Bool("SCHEDULER_IP_ENABLED", true, "throttle per public IP address")
	IPRefresh              = settings.Seconds("SCHEDULER_IP_REFRESH", 60, "seconds between public IP lookups; the crawler's heartbeat lives twice that")
	ItemRetries            = settings.Int("SCHEUDLER_ITEM_RETRIES", 2, "accepted for compatibility (the original's misspelt name), unused: the scheduler waits on denials instead of cycling")
	PublicIPURL            = settings.String("PUBLIC_IP_URL", "http://ip.42.pl/raw", "where the public IP is read; empty: never (127.0.0.1)")
	IPAddrRegex            = settings.String("IP_ADDR_REGEX", `(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})`, "its first match in the answer is the public IP")
	DupeFilterTimeout      = settings.Seconds("DUPEFILTER_TIMEOUT", 600, "seconds a crawl's duplicate filter outlives its last queued request").Positive()
	GlobalPageLimit        = settings.Int("GLOBAL_PAGE_PER_DOMAIN_LIMIT", 0, "pages any crawl may queue per domain; 0: no limit")
	GlobalPageLimitTimeout = settings.Seconds("GLOBAL_PAGE_PER_DOMAIN_LIMIT_TIMEOUT", 600, "seconds that per-domain count outlives its last change")
	DomainMaxPageTimeout   = settings.Seconds("DOMAIN_MAX_PAGE_TIMEOUT", 600, "seconds a crawl's `domain_max_pages` count outlives its last change")
	LeaseTimeout           = settings.Seconds("LEASE_TIMEOUT", 20.0, "seconds a request stays leased to a crawler that stopped renewing its leases "+
		"(rounded up to the next whole second of Redis's clock)").Ours().AtLeast(time.Second)
	LeaseReapInterval = settings.Seconds("LEASE_REAP_INTERVAL", 5.0, "seconds between returns of expired leases to their queues").Ours().Positive()
	DupeFilterMode    = settings.String("DUPEFILTER_MODE", DupeExact, "`exact`: a crawl's duplicate filter is the set of its fingerprints "+
		"(`<spiderid>:dupefilter:<crawlid>`, the original's); `bloom`: a compact filter (`bloom:<spiderid>:<crawlid>:bits` and `:meta`) "+
		"that may drop a new request as seen at `DUPEFILTER_ERROR_RATE` at most, each crawl's ledger estimating how many it dropped. "+
		"Every crawler of a spider must use the same").Ours()
	DupeFilterErrorRate = settings.Float("DUPEFILTER_ERROR_RATE", 0.001, "with `DUPEFILTER_MODE` bloom: the most a new request may be "+
		"taken for one seen before (its false-positive rate); a crawl's filter keeps the rate it was made with").Ours().Within(1e-9, 0.1)
	DupeFilterCapacity = settings.Int("DUPEFILTER_CAPACITY", 100000, "with `DUPEFILTER_MODE` bloom: the requests a crawl's filter "+
		"holds before it grows (each new layer holds twice the last at half the rate); "+
		"a crawl's filter keeps the capacity it was made with; on a Redis Cluster, where a crawl has a filter per domain, each starts at "+
		"the smaller of this and "+strconv.Itoa(clusterBloomCapacity)).Ours().Within(1, 10000000)
	ClusterAckLinger = settings.Millis("SCHEDULER_CLUSTER_ACK_LINGER_MS", 250, "on a Redis Cluster (`REDIS_CLUSTER_NODES`): "+
		"milliseconds a domain's acknowledgements wait for more of the same domain before they are sent together "+
		"(or until "+strconv.Itoa(clusterAckSet)+" are waiting): each batch of a domain costs its master a fixed run of the finish script. "+
		"A page's lease ends, its follow-ups are queued and its crawl's ledger counts it done up to this much later; "+
		"0: 5 ms batches as with one Redis. Unused with one Redis").Ours().Within(0, time.Second)
)

// The duplicate filter modes (DUPEFILTER_MODE).
const (
	DupeExact = "exact"
	DupeBloom = "bloom"
)

// Settings are the scheduler's settings, for the crawler's settings.Group.
// It also reads the downloader's CONCURRENT_REQUESTS and
// CONCURRENT_REQUESTS_PER_DOMAIN (fetch.Settings) and LEDGER_TTL.
func Settings() settings.Group {
	return settings.Declare(Persist, QueueRefresh, QueueTimeout, BacklogBlacklist, TypeEnabled, IPEnabled, IPRefresh, ItemRetries,
		PublicIPURL, IPAddrRegex, throttle.QueueHits, throttle.QueueWindow, throttle.QueueModerated, DupeFilterTimeout, GlobalPageLimit, GlobalPageLimitTimeout,
		DomainMaxPageTimeout, LeaseTimeout, LeaseReapInterval, DupeFilterMode, DupeFilterErrorRate, DupeFilterCapacity, ClusterAckLinger)
}

// Config is what the scheduler needs to know.
type Config struct {
	// SpiderID is the spider type whose queues this scheduler serves.
	SpiderID string
	// Layout is the key layout of the Redis mode, the caller's
	// redisconn.KeyLayout (the zero value is the one Redis's): the
	// queues it finds and pops.
	Layout rediskeys.Layout
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
	DupeTimeout time.Duration
	// DupeMode is DupeExact or DupeBloom; BloomRate and BloomCapacity a
	// compact filter's (DUPEFILTER_ERROR_RATE, DUPEFILTER_CAPACITY).
	DupeMode             string
	BloomRate            float64
	BloomCapacity        int
	DomainMaxPageTimeout time.Duration
	GlobalPageLimit      int
	GlobalPageTimeout    time.Duration
	// LeaseTTL and ReapInterval: crash safety.
	LeaseTTL, ReapInterval time.Duration
	// ClusterAckLinger, on a Redis Cluster: how long a lease set's
	// (a domain's) acknowledgements wait for more of the same set
	// (SCHEDULER_CLUSTER_ACK_LINGER_MS; 0: none beyond ackLinger).
	// Unused with one Redis.
	ClusterAckLinger time.Duration
	// Concurrency and PerDomain cap the requests in flight.
	Concurrency, PerDomain int
	// LedgerTTL is how long a crawl's ledger lives after its last new work
	// (LEDGER_TTL; 0: ledger.DefaultTTL).
	LedgerTTL time.Duration
	// Render: the crawler renders (RENDER_ENABLED), so it also finds and
	// pops its spider's render queues (<spiderid>:<domain>:renderqueue).
	Render bool
	// Wait, when not nil, makes the writes that record accepted work (a
	// pop's leases, a finish ending leases and queueing follow-ups) wait
	// for replicas (REDIS_WAIT_REPLICAS): the caller's
	// redisconn.NewWaiter, whose client is the scheduler's.
	Wait *redisconn.Waiter
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
	re, err := regexp.Compile(IPAddrRegex.From(s))
	if err != nil {
		return Config{}, fmt.Errorf("setting %s: %w", IPAddrRegex.Name(), err)
	}
	ledgerTTL := ledger.TTL.From(s)
	c := Config{
		LedgerTTL: ledgerTTL,
		SpiderID:  spiderID, Hits: throttle.QueueHits.From(s), Window: throttle.QueueWindow.From(s), Moderated: throttle.QueueModerated.From(s),
		ByType: TypeEnabled.From(s), ByIP: IPEnabled.From(s),
		PublicIPURL: PublicIPURL.From(s), IPRegex: re, IPRefresh: IPRefresh.From(s),
		QueueRefresh: QueueRefresh.From(s), QueueTimeout: QueueTimeout.From(s),
		BacklogBlacklist: BacklogBlacklist.From(s), Persist: Persist.From(s),
		DupeTimeout: DupeFilterTimeout.From(s), DomainMaxPageTimeout: DomainMaxPageTimeout.From(s),
		DupeMode: DupeFilterMode.From(s), BloomRate: DupeFilterErrorRate.From(s), BloomCapacity: DupeFilterCapacity.From(s),
		GlobalPageLimit: GlobalPageLimit.From(s), GlobalPageTimeout: GlobalPageLimitTimeout.From(s),
		LeaseTTL: LeaseTimeout.From(s), ReapInterval: LeaseReapInterval.From(s), ClusterAckLinger: ClusterAckLinger.From(s),
		Concurrency: fetch.ConcurrentRequests.From(s), PerDomain: fetch.ConcurrentPerDomain.From(s),
	}
	return c, c.validate()
}

// validate checks what the settings' declared bounds do not: the spider
// type and DUPEFILTER_MODE (the empty mode is exact: a Config made in
// code). The numbers (QUEUE_HITS, the queue, lease and filter times, a
// compact filter's rate and capacity, the concurrency) are refused out of
// their declared bounds when the settings are loaded; a Config made in
// code keeps to the same.
func (c Config) validate() error {
	switch {
	case c.SpiderID == "":
		return fmt.Errorf("no spider type given")
	case c.DupeMode != "" && c.DupeMode != DupeExact && c.DupeMode != DupeBloom:
		return fmt.Errorf("setting DUPEFILTER_MODE: %q is neither %q nor %q", c.DupeMode, DupeExact, DupeBloom)
	}
	return nil
}

// validateMode checks that c's key layout is the mode of rdb.
func (c Config) validateMode(rdb redis.UniversalClient) error {
	_, cluster := rdb.(*redis.ClusterClient)
	switch {
	case cluster && !c.Layout.IsCluster():
		return fmt.Errorf("the scheduler's Redis client is a cluster client but its key layout is the one Redis's (Config.Layout: redisconn.KeyLayout)")
	case !cluster && c.Layout.IsCluster():
		return fmt.Errorf("the scheduler's key layout is a Redis Cluster's but its Redis client is not a cluster client")
	}
	return nil
}

// dupeFilter is the keys of the duplicate filter of crawlID's crawl: its
// set, or a compact filter's bits and meta; on a Redis Cluster those of
// its requests for domain.
func (c Config) dupeFilter(domain, crawlID string) (key, meta string) {
	if c.DupeMode == DupeBloom {
		return c.Layout.BloomFilter(c.SpiderID, domain, crawlID)
	}
	return c.Layout.DupeFilter(c.SpiderID, domain, crawlID), ""
}

// clusterBloomCapacity is the first layer of a domain's compact duplicate
// filter on a Redis Cluster (DUPEFILTER_CAPACITY when that is smaller):
// there a crawl has a filter per domain, each grown by layers as the one
// Redis's is (each layer twice the last at half its rate, so a request is
// taken for a seen one at DUPEFILTER_ERROR_RATE at most, as in one-Redis
// mode), and a first layer of DUPEFILTER_CAPACITY in each would multiply
// the filter's memory by the crawl's domains. 1,024 requests at the
// default rate are about 2 KB.
const clusterBloomCapacity = 1024

// bloomCapacity is the first layer of the compact duplicate filters this
// crawler makes: DUPEFILTER_CAPACITY, or clusterBloomCapacity on a Redis
// Cluster when smaller.
func (c Config) bloomCapacity() int {
	if c.Layout.IsCluster() {
		return min(c.BloomCapacity, clusterBloomCapacity)
	}
	return c.BloomCapacity
}
