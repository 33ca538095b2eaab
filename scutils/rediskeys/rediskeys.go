// Package rediskeys builds every Redis key and channel name the cluster's
// components share, in the exact formats of Scrapy Cluster 1.3 (the spec's
// "Redis Keys" section), so Go and Python components find each other's data.
// Build keys only through these functions.
package rediskeys

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"

	"golang.org/x/net/publicsuffix"
)

// QueueKey is a spider's priority queue for one domain:
// "<spiderid>:<domain>:queue", e.g. "link:example.com:queue".
func QueueKey(spiderID, domain string) string { return spiderID + ":" + domain + ":queue" }

// QueueKeyForURL is QueueKey for the domain of rawURL.
func QueueKeyForURL(spiderID, rawURL string) (string, error) {
	d, err := DomainOfURL(rawURL)
	if err != nil {
		return "", err
	}
	return QueueKey(spiderID, d), nil
}

// QueuePattern is the SCAN MATCH pattern of a spider's domain queues,
// "<spiderid>:*:queue" (glob characters in spiderID escaped). It also
// matches keys that are not queues; ParseQueueKey tells them apart.
func QueuePattern(spiderID string) string { return GlobEscape(spiderID) + ":*:queue" }

// AllQueuesPattern matches every spider's domain queues (and, like
// QueuePattern, some other keys: check each with ParseQueueKey).
const AllQueuesPattern = "*:*:queue"

// ParseQueueKey splits a domain queue key "<spiderid>:<domain>:queue" into
// its spider and domain. Other keys end in ":queue" too; only a key with a
// colon-free spider id and a colon-free domain counts, or an IPv6 host's
// queue, whose domain keeps the address and its dot ("link:::1.:queue").
func ParseQueueKey(key string) (spiderID, domain string, ok bool) {
	rest, found := strings.CutSuffix(key, ":queue")
	if !found {
		return "", "", false
	}
	spiderID, domain, found = strings.Cut(rest, ":")
	switch {
	case !found || spiderID == "" || domain == "":
		return "", "", false
	case strings.Contains(domain, ":") && net.ParseIP(strings.TrimSuffix(domain, ".")) == nil:
		return "", "", false
	}
	return spiderID, domain, true
}

// RenderQueueKey is a spider's queue of render requests (crawl requests
// with a "render" field) for one domain: "<spiderid>:<domain>:renderqueue",
// a sorted set with the same scores and members as QueueKey's. It is apart
// so that only a crawler with a browser pops a render request: the
// original's crawlers and ours without RENDER_ENABLED scan
// "<spiderid>:*:queue", which no render queue key matches. (Go; the
// original has no rendering.)
func RenderQueueKey(spiderID, domain string) string {
	return spiderID + ":" + domain + renderQueueSuffix
}

const renderQueueSuffix = ":renderqueue"

// RenderQueuePattern is the SCAN MATCH pattern of a spider's render queues,
// "<spiderid>:*:renderqueue"; check each key with ParseRenderQueueKey.
func RenderQueuePattern(spiderID string) string {
	return GlobEscape(spiderID) + ":*" + renderQueueSuffix
}

// AllRenderQueuesPattern matches every spider's render queues (check each
// key with ParseRenderQueueKey).
const AllRenderQueuesPattern = "*:*" + renderQueueSuffix

// ParseRenderQueueKey splits "<spiderid>:<domain>:renderqueue" into its
// spider and domain, under ParseQueueKey's rules.
func ParseRenderQueueKey(key string) (spiderID, domain string, ok bool) {
	rest, found := strings.CutSuffix(key, renderQueueSuffix)
	if !found {
		return "", "", false
	}
	return ParseQueueKey(rest + ":queue")
}

// QueueKeyFor is the queue a request of spiderID for domain waits in: its
// render queue when the request asks to be rendered, else its queue.
func QueueKeyFor(spiderID, domain string, render bool) string {
	if render {
		return RenderQueueKey(spiderID, domain)
	}
	return QueueKey(spiderID, domain)
}

// ParseAnyQueueKey is ParseQueueKey or ParseRenderQueueKey, whichever
// takes key; render says which.
func ParseAnyQueueKey(key string) (spiderID, domain string, render, ok bool) {
	if spiderID, domain, ok = ParseRenderQueueKey(key); ok {
		return spiderID, domain, true, true
	}
	spiderID, domain, ok = ParseQueueKey(key)
	return spiderID, domain, false, ok
}

// GlobEscape quotes the characters SCAN MATCH treats as special, so a name
// that holds them matches only itself.
func GlobEscape(s string) string {
	if !strings.ContainsAny(s, `*?[]\`) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// QueueChannel is the pub/sub channel on which a new domain queue of a spider
// is announced (the message is the queue key), so crawlers start on it at
// once instead of waiting for their next scan of "<spiderid>:*:queue".
func QueueChannel(spiderID string) string { return spiderID + ":queue-announce" }

// TimeoutKey holds the expiry (epoch seconds) of a crawl:
// "timeout:<spiderid>:<appid>:<crawlid>".
func TimeoutKey(spiderID, appID, crawlID string) string {
	return "timeout:" + spiderID + ":" + appID + ":" + crawlID
}

// ActionKey is an info or stop request for the Redis Monitor:
// "<action>:<spiderid>:<appid>" or, with a crawlid, "<action>:<spiderid>:<appid>:<crawlid>".
func ActionKey(action, spiderID, appID, crawlID string) string {
	k := action + ":" + spiderID + ":" + appID
	if crawlID != "" {
		k += ":" + crawlID
	}
	return k
}

// StatsRequestKey is a stats request for the Redis Monitor: "statsrequest:<stats>:<appid>".
func StatsRequestKey(stats, appID string) string { return "statsrequest:" + stats + ":" + appID }

// ZooKeeperKey is a domain/blacklist change for the Redis Monitor: "zk:<action>:<domain>:<appid>".
func ZooKeeperKey(action, domain, appID string) string {
	return "zk:" + action + ":" + domain + ":" + appID
}

// BlacklistKey is the set of "<appid>||<crawlid>" a spider must no longer crawl.
func BlacklistKey(spiderID string) string { return spiderID + ":blacklist" }

// HeartbeatKey is a component's self-report: "stats:<component>:self:<host>:<id>"
// (component "kafka-monitor", "redis-monitor" or "rest").
func HeartbeatKey(component, host, id string) string {
	return "stats:" + component + ":self:" + host + ":" + id
}

// CrawlerHeartbeatKey is a crawler process's self-report (value: epoch
// seconds, expiring): "stats:crawler:<host>:<spiderid>:<id>". The original's
// crawlers write this form (not the documented stats:crawler:self:...), and
// its Redis Monitor counts spiders by it.
func CrawlerHeartbeatKey(host, spiderID, id string) string {
	return "stats:crawler:" + host + ":" + spiderID + ":" + id
}

// CrawlerStatusKey is the base of a crawler host's response-code counters,
// "stats:crawler:<host>:<spiderid>:<code>", to which the stats package
// appends ":<window>" or ":lifetime".
func CrawlerStatusKey(host, spiderID, code string) string {
	return "stats:crawler:" + host + ":" + spiderID + ":" + code
}

// DupeFilterKey is the set of request fingerprints a crawl has queued,
// "<spiderid>:dupefilter:<crawlid>" (spiderid: the crawling spider's name).
func DupeFilterKey(spiderID, crawlID string) string { return spiderID + ":dupefilter:" + crawlID }

// DomainMaxPageKey counts the pages a crawl queued for a domain, against
// its domain_max_pages: "<spiderid>:domain_max_page_filter:<domain>:<crawlid>".
func DomainMaxPageKey(spiderID, domain, crawlID string) string {
	return spiderID + ":domain_max_page_filter:" + domain + ":" + crawlID
}

// GlobalPageCountKey counts the pages a crawl queued for a domain, against
// GLOBAL_PAGE_PER_DOMAIN_LIMIT: "<spiderid>:global_page_count_filter:<domain>:<crawlid>".
func GlobalPageCountKey(spiderID, domain, crawlID string) string {
	return spiderID + ":global_page_count_filter:" + domain + ":" + crawlID
}

// ThrottleKey is the prefix of a domain's throttle keys (<prefix>:throttle_window,
// <prefix>:throttle_time) for the configured throttle style: "<spiderid>:"
// with type throttling, "<ip>:" with IP throttling, then the domain.
func ThrottleKey(spiderID, ip, domain string, byType, byIP bool) string {
	k := ""
	if byType {
		k += spiderID + ":"
	}
	if byIP {
		k += ip + ":"
	}
	return k + domain
}

// LeaseKey is the sorted set of a spider type's leased requests (requests a
// crawler popped and has not finished), scored by deadline; their records
// are in the hash LeaseKey+":items". (Go; the original has no leases.)
func LeaseKey(spiderID string) string { return "leases:" + spiderID }

// RestPollKey holds an answer a REST service caught after its /feed caller
// stopped waiting, for a later /poll on any REST instance: "rest:poll:<uuid>".
func RestPollKey(uuid string) string { return "rest:poll:" + uuid }

// LockKey is the Redis Monitor's per-request lock, "lock:<key>", the name
// python-redis-lock uses, so Go and Python monitors exclude each other.
func LockKey(key string) string { return "lock:" + key }

// FailuresKey counts failed attempts at a Redis Monitor request:
// "lock:<key>:failures", as the original.
func FailuresKey(key string) string { return "lock:" + key + ":failures" }

// DomainConfigKey holds the domain configuration document (the YAML kept in
// ZooKeeper at ZOOKEEPER_ASSIGN_PATH+ZOOKEEPER_ID) when the cluster runs
// without ZooKeeper: "domainconfig:<path>", e.g.
// "domainconfig:/scrapy-cluster/crawler/all". (Go; no Python equivalent.)
func DomainConfigKey(path string) string { return "domainconfig:" + path }

// DomainConfigChannel is the pub/sub channel on which a change of the
// document at DomainConfigKey(path) is announced (the message is the new
// document), so crawlers apply it at once.
func DomainConfigChannel(path string) string { return DomainConfigKey(path) + ":changed" }

// StatsKey is a component's stats key: "stats:<component>:<name>", to which
// the stats package appends ":<window>" or ":lifetime".
func StatsKey(component, name string) string { return "stats:" + component + ":" + name }

// DomainOfURL returns the registered domain of an http(s) URL as the
// original's tldextract produces it ("<domain>.<suffix>"): the queue's domain
// part. It fails for URLs that are not absolute http(s) URLs with a host.
func DomainOfURL(rawURL string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", fmt.Errorf("invalid url %q: %w", rawURL, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("invalid url %q: scheme must be http or https", rawURL)
	}
	if u.Hostname() == "" {
		return "", fmt.Errorf("invalid url %q: no host", rawURL)
	}
	return Domain(u.Hostname()), nil
}

// Domain returns "<domain>.<suffix>" for a host, using only the ICANN section
// of the public suffix list as tldextract does by default:
//
//	www.example.co.uk -> example.co.uk
//	foo.github.io     -> github.io      (private suffixes ignored)
//	127.0.0.1         -> 127.0.0.1.     (no suffix: the dot stays)
//	localhost         -> localhost.
//	a.b.internal      -> internal.      (unlisted top-level domain)
func Domain(host string) string {
	if d, ok := domains.get(host); ok {
		return d
	}
	d := domainOf(host)
	domains.put(host, d)
	return d
}

// domains remembers the domains of recent hosts: a crawler's links and a
// Kafka Monitor's requests name a few hosts over and over, and a public
// suffix look-up costs more than a map's.
var domains = domainCache{m: map[string]string{}}

// maxCachedDomains bounds domainCache; past it, it starts over.
const maxCachedDomains = 10000

type domainCache struct {
	mu sync.RWMutex
	m  map[string]string
}

func (c *domainCache) get(host string) (string, bool) {
	c.mu.RLock()
	d, ok := c.m[host]
	c.mu.RUnlock()
	return d, ok
}

func (c *domainCache) put(host, domain string) {
	c.mu.Lock()
	if len(c.m) >= maxCachedDomains {
		c.m = make(map[string]string, maxCachedDomains)
	}
	c.m[host] = domain
	c.mu.Unlock()
}

func domainOf(host string) string {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if net.ParseIP(host) != nil {
		return host + "."
	}
	suffix := icannSuffix(host)
	rest := host
	if suffix != "" {
		if host == suffix {
			return "." + suffix
		}
		rest = strings.TrimSuffix(host, "."+suffix)
	}
	domain := rest[strings.LastIndexByte(rest, '.')+1:]
	return domain + "." + suffix
}

// icannSuffix is the longest ICANN public suffix of host, or "" when its
// top-level domain is not listed.
func icannSuffix(host string) string {
	suffix, icann := publicsuffix.PublicSuffix(host)
	for !icann {
		i := strings.IndexByte(suffix, '.')
		if i < 0 {
			return ""
		}
		suffix, icann = publicsuffix.PublicSuffix(suffix[i+1:])
	}
	return suffix
}

// SessionKey is a crawl's cookie jar (Go; the original has none), a hash:
// "session:" and 32 hex digits of the SHA-256 of appid, a NUL and crawlid.
// The ids are hashed so that no pattern the original's components scan
// (*:*:queue, *:dupefilter:*, *:blacklist, ...) can match the key whatever
// they hold.
func SessionKey(appID, crawlID string) string {
	sum := sha256.Sum256([]byte(appID + "\x00" + crawlID))
	return "session:" + hex.EncodeToString(sum[:16])
}
