package rediskeys

import (
	"strconv"
	"strings"
	"sync"
)

// Layout builds the keys whose form depends on the Redis mode: a domain's
// queue, throttle and leases, and a crawl's per-domain duplicate filter,
// page counts and ledger counts. Single (the zero Layout) is the original's
// forms, byte for byte, from the functions of this package; Cluster gives
// every one of them the hash tag of its domain, "{<domain>}", so that on a
// Redis Cluster the keys one atomic step touches (a domain's queue with
// its throttle and leases, a link's duplicate check with its domain's page
// counts and ledger counts) are in one slot, while different domains spread
// over the masters.
//
// A Layout is a value built once from the settings
// (redisconn.KeyLayout) and passed down to what builds keys, rather than a
// package-wide mode: tests run both modes in one process, and a call site
// that builds a key this way shows that it depends on the mode.
//
// Cluster-mode keys start with "cluster:", name their domain in the tag
// and then their kind, spider and crawl, e.g.
// "cluster:{example.com}:queue:link". Only Go components use them: cluster
// mode has no Python counterpart (docs/redis-cluster.md). One of them may
// be on one Redis too: the crawlers' response counts with
// WithResponseBuckets, a key no pattern of the original's components
// matches.
type Layout struct {
	cluster bool
	// responseBuckets: on one Redis, the crawlers' response counts in
	// hashes of time buckets (STATS_RESPONSE_BUCKETS), as on a cluster.
	responseBuckets bool
}

// Single is the one-Redis layout: the original's keys.
var Single = Layout{}

// Cluster is the Redis Cluster layout: keys hash-tagged by domain.
var Cluster = Layout{cluster: true}

// IsCluster reports whether l is Cluster.
func (l Layout) IsCluster() bool { return l.cluster }

// WithResponseBuckets is l with the crawlers' response counts in hashes of
// time buckets (CrawlerResponses) when on is true: on one Redis an opt-in
// (STATS_RESPONSE_BUCKETS) for a deployment whose Redis Monitors are ours,
// since the original's reads only its sorted sets; a Redis Cluster has them
// whatever on says.
func (l Layout) WithResponseBuckets(on bool) Layout {
	l.responseBuckets = on
	return l
}

// ResponseBuckets reports whether the crawlers count their responses in
// hashes of time buckets (CrawlerResponses, package stats' BucketSet)
// rather than in the original's sorted sets: always on a Redis Cluster, on
// one Redis with WithResponseBuckets.
func (l Layout) ResponseBuckets() bool { return l.cluster || l.responseBuckets }

// DomainTag is the hash tag of domain's keys in Cluster, "{<domain>}". A
// domain (Domain, DomainOfURL) never holds a brace.
func DomainTag(domain string) string { return "{" + domain + "}" }

// ClusterPrefix starts every key of the Cluster layout
// ("cluster:{<domain>}:..."); no key of the original's layout starts so
// (none holds a brace).
const ClusterPrefix = "cluster:{"

// IsClusterKey reports whether key is of the Cluster layout.
func IsClusterKey(key string) bool { return strings.HasPrefix(key, ClusterPrefix) }

// clusterKey is "cluster:{<domain>}:<kind>" followed by ":<part>" for each
// part.
func clusterKey(domain, kind string, parts ...string) string {
	var b strings.Builder
	b.WriteString("cluster:")
	b.WriteString(DomainTag(domain))
	b.WriteString(":")
	b.WriteString(kind)
	for _, p := range parts {
		b.WriteString(":")
		b.WriteString(p)
	}
	return b.String()
}

// Queue is a spider's priority queue for domain: QueueKey in Single,
// "cluster:{<domain>}:queue:<spiderid>" in Cluster.
func (l Layout) Queue(spiderID, domain string) string {
	if l.cluster {
		return clusterKey(domain, "queue", spiderID)
	}
	return QueueKey(spiderID, domain)
}

// QueueFor is the queue a spider's request for domain waits in: Queue, or
// with render the domain's render queue (RenderQueueKey in Single,
// "cluster:{<domain>}:renderqueue:<spiderid>" in Cluster), as QueueKeyFor.
func (l Layout) QueueFor(spiderID, domain string, render bool) string {
	if !l.cluster {
		return QueueKeyFor(spiderID, domain, render)
	}
	if render {
		return clusterKey(domain, "renderqueue", spiderID)
	}
	return clusterKey(domain, "queue", spiderID)
}

// ParseQueue splits a queue key of l (Queue) into its spider and domain.
func (l Layout) ParseQueue(key string) (spiderID, domain string, ok bool) {
	if !l.cluster {
		return ParseQueueKey(key)
	}
	rest, found := strings.CutPrefix(key, ClusterPrefix)
	if !found {
		return "", "", false
	}
	domain, rest, found = strings.Cut(rest, "}:queue:")
	if !found || domain == "" || rest == "" || strings.ContainsAny(domain, "{}") {
		return "", "", false
	}
	return rest, domain, true
}

// QueuePattern is the SCAN MATCH pattern of a spider's queues in l (in
// Cluster, to be scanned on every master).
func (l Layout) QueuePattern(spiderID string) string {
	if l.cluster {
		return "cluster:{*}:queue:" + GlobEscape(spiderID)
	}
	return QueuePattern(spiderID)
}

// RenderQueuePattern is the SCAN MATCH pattern of a spider's render
// queues in l (QueueFor with render).
func (l Layout) RenderQueuePattern(spiderID string) string {
	if l.cluster {
		return "cluster:{*}:renderqueue:" + GlobEscape(spiderID)
	}
	return RenderQueuePattern(spiderID)
}

// ParseAnyQueue splits a queue or render queue key of l (QueueFor) into
// its spider and domain; render says which kind it is.
func (l Layout) ParseAnyQueue(key string) (spiderID, domain string, render, ok bool) {
	if !l.cluster {
		return ParseAnyQueueKey(key)
	}
	rest, found := strings.CutPrefix(key, ClusterPrefix)
	if !found {
		return "", "", false, false
	}
	domain, rest, found = strings.Cut(rest, "}:")
	if !found || domain == "" || strings.ContainsAny(domain, "{}") {
		return "", "", false, false
	}
	if spiderID, found = strings.CutPrefix(rest, "renderqueue:"); found {
		render = true
	} else if spiderID, found = strings.CutPrefix(rest, "queue:"); !found {
		return "", "", false, false
	}
	return spiderID, domain, render, spiderID != ""
}

// Throttle is the prefix of domain's throttle keys (ThrottleKey): in
// Cluster "cluster:{<domain>}:throttle", then ":<spiderid>" with type
// throttling and ":<ip>" with IP throttling.
func (l Layout) Throttle(spiderID, ip, domain string, byType, byIP bool) string {
	if !l.cluster {
		return ThrottleKey(spiderID, ip, domain, byType, byIP)
	}
	var parts []string
	if byType {
		parts = append(parts, spiderID)
	}
	if byIP {
		parts = append(parts, ip)
	}
	return clusterKey(domain, "throttle", parts...)
}

// Leases is the base key of the leases of a spider's requests for domain
// (LeaseKey; its records are in Leases+":items"): one per spider in
// Single, "cluster:{<domain>}:leases:<spiderid>" in Cluster, so a request's
// lease is in its queue's slot.
func (l Layout) Leases(spiderID, domain string) string {
	if l.cluster {
		return clusterKey(domain, "leases", spiderID)
	}
	return LeaseKey(spiderID)
}

// DupeFilter is the set of request fingerprints a crawl has queued for
// domain: one per crawl in Single (DupeFilterKey, every domain's together),
// "cluster:{<domain>}:seen:<spiderid>:<crawlid>" in Cluster.
func (l Layout) DupeFilter(spiderID, domain, crawlID string) string {
	if l.cluster {
		return clusterKey(domain, "seen", spiderID, crawlID)
	}
	return DupeFilterKey(spiderID, crawlID)
}

// BloomFilter is a crawl's compact duplicate filter for domain
// (DUPEFILTER_MODE bloom), its bits and its meta hash: one per crawl in
// Single (BloomFilterKeys, every domain's together), in Cluster one per
// domain, "cluster:{<domain>}:bloom:<spiderid>:<crawlid>:bits" and
// ":meta", in the slot of the domain's queue and ledger share.
func (l Layout) BloomFilter(spiderID, domain, crawlID string) (bits, meta string) {
	if l.cluster {
		k := clusterKey(domain, "bloom", spiderID, crawlID)
		return k + ":bits", k + ":meta"
	}
	return BloomFilterKeys(spiderID, crawlID)
}

// DomainMaxPage counts the pages a crawl queued for domain against its
// domain_max_pages (DomainMaxPageKey); in Cluster
// "cluster:{<domain>}:domain_max_page:<spiderid>:<crawlid>".
func (l Layout) DomainMaxPage(spiderID, domain, crawlID string) string {
	if l.cluster {
		return clusterKey(domain, "domain_max_page", spiderID, crawlID)
	}
	return DomainMaxPageKey(spiderID, domain, crawlID)
}

// GlobalPageCount counts the pages a crawl queued for domain against
// GLOBAL_PAGE_PER_DOMAIN_LIMIT (GlobalPageCountKey); in Cluster
// "cluster:{<domain>}:global_page_count:<spiderid>:<crawlid>".
func (l Layout) GlobalPageCount(spiderID, domain, crawlID string) string {
	if l.cluster {
		return clusterKey(domain, "global_page_count", spiderID, crawlID)
	}
	return GlobalPageCountKey(spiderID, domain, crawlID)
}

// LedgerCounts is the hash that counts a crawl's work for domain: the
// crawl's one ledger in Single (LedgerKey), in Cluster one per domain,
// "cluster:{<domain>}:ledger:<spiderid>:<appid>:<crawlid>", beside the
// domain's queue and duplicate filter; a crawl's totals are the sum over
// its domains.
func (l Layout) LedgerCounts(spiderID, appID, crawlID, domain string) string {
	if l.cluster {
		return clusterKey(domain, "ledger", spiderID, appID, crawlID)
	}
	return LedgerKey(spiderID, appID, crawlID)
}

// LedgerActive, LedgerCrawls and LedgerAppCrawls are the ledger's index
// sorted sets (members: a crawl's index entry) that a crawl's new work
// for domain writes in the step that counts it: the crawl-wide
// LedgerActiveKey, LedgerCrawlsKey and LedgerAppCrawlsKey in Single; in
// Cluster the domain's own, "cluster:{<domain>}:ledger-active",
// "cluster:{<domain>}:ledger-crawls" and
// "cluster:{<domain>}:ledger-app-crawls:<appid>", in the slot of the
// domain's ledger counts, so that the index entry and the counts are
// written together. A crawl's domains are the domains whose index holds
// it: readers find them on every master (docs/redis-cluster.md).
func (l Layout) LedgerActive(domain string) string {
	if l.cluster {
		return clusterKey(domain, "ledger-active")
	}
	return LedgerActiveKey
}

// LedgerCrawls: see LedgerActive.
func (l Layout) LedgerCrawls(domain string) string {
	if l.cluster {
		return clusterKey(domain, "ledger-crawls")
	}
	return LedgerCrawlsKey
}

// LedgerAppCrawls: see LedgerActive.
func (l Layout) LedgerAppCrawls(appID, domain string) string {
	if l.cluster {
		return clusterKey(domain, "ledger-app-crawls", appID)
	}
	return LedgerAppCrawlsKey(appID)
}

// LedgerActivePattern is the SCAN MATCH pattern of the Cluster layout's
// per-domain LedgerActive sets (to be scanned on every master); in Single
// the one LedgerActiveKey.
func (l Layout) LedgerActivePattern() string {
	if l.cluster {
		return "cluster:{*}:ledger-active"
	}
	return LedgerActiveKey
}

// ParseLedgerActive is the domain of a Cluster LedgerActive key.
func (l Layout) ParseLedgerActive(key string) (domain string, ok bool) {
	rest, found := strings.CutPrefix(key, ClusterPrefix)
	if !l.cluster || !found {
		return "", false
	}
	domain, found = strings.CutSuffix(rest, "}:ledger-active")
	if !found || domain == "" || strings.ContainsAny(domain, "{}") {
		return "", false
	}
	return domain, true
}

// Completed is the marker a crawl's crawl-complete is claimed with in
// Cluster, once across every shard (SET NX):
// "cluster:{ledger}:completed:<spiderid>:<appid>:<crawlid>". Every
// marker is in the slot of the tag "ledger". Single has none: there the
// crawl's one ledger hash records its completion.
func (l Layout) Completed(spiderID, appID, crawlID string) string {
	return "cluster:{ledger}:completed:" + spiderID + ":" + appID + ":" + crawlID
}

// GroupBySlot splits domains into groups whose keys (in Cluster) share a
// slot, each group in the order its domains came, groups in the order of
// their first domain; a domain named twice is in its group once. In Single
// every domain is in one group: one Redis holds every key.
func (l Layout) GroupBySlot(domains []string) [][]string {
	var groups [][]string
	at := map[int]int{}
	seen := map[string]bool{}
	for _, d := range domains {
		if seen[d] {
			continue
		}
		seen[d] = true
		slot := 0
		if l.cluster {
			slot = Slot(DomainTag(d))
		}
		i, ok := at[slot]
		if !ok {
			i = len(groups)
			at[slot] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], d)
	}
	return groups
}

// Slot is the Redis Cluster hash slot of key, as Redis computes it: the
// CRC16 (XMODEM) of its hash tag, the part between the first "{" and the
// next "}" when that is not empty, or of the whole key, modulo 16384.
func Slot(key string) int {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			key = key[open+1 : open+1+end]
		}
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc % 16384)
}

// LeasesPattern is the SCAN MATCH pattern of the owners sets of a
// spider's lease sets in Cluster, "cluster:{*}:leases:<spiderid>:owners"
// (to be scanned on every master: a reaper finds every domain's lease set
// this way); in Single the one LeaseKey's owners set.
func (l Layout) LeasesPattern(spiderID string) string {
	if l.cluster {
		return "cluster:{*}:leases:" + GlobEscape(spiderID) + ":owners"
	}
	return GlobEscape(LeaseKey(spiderID)) + ":owners"
}

// ParseLeasesOwners is the lease set's base key (Leases) of an owners key
// LeasesPattern matches.
func (l Layout) ParseLeasesOwners(key string) (base string, ok bool) {
	return strings.CutSuffix(key, ":owners")
}

// SpiderPatterns are the SCAN MATCH patterns, in Cluster, of the keys a
// crawler of spiderID clears when it does not persist its queues
// (SCHEDULER_PERSIST false): its queues and render queues, and its crawls'
// duplicate filters (exact and compact) and page counts, each to be
// scanned on every master.
func (l Layout) SpiderPatterns(spiderID string) []string {
	s := GlobEscape(spiderID)
	return []string{l.QueuePattern(spiderID), l.RenderQueuePattern(spiderID),
		"cluster:{*}:seen:" + s + ":*", "cluster:{*}:domain_max_page:" + s + ":*", "cluster:{*}:global_page_count:" + s + ":*",
		"cluster:{*}:bloom:" + s + ":*:bits", "cluster:{*}:bloom:" + s + ":*:meta"}
}

// RequestLock is the lock a Redis Monitor takes on a request key (info:*,
// stop:*, timeout:*, statsrequest:*, zk:*): LockKey in Single (the
// original's "lock:<key>", python-redis-lock's protocol); in Cluster
// "cluster:{<tag>}:lock:<key>", where <tag> is SlotTag of the request
// key's slot, so the lock, the failure count and the request are in one
// slot and one master decides who holds the request.
func (l Layout) RequestLock(key string) string {
	if l.cluster {
		return "cluster:{" + SlotTag(Slot(key)) + "}:lock:" + key
	}
	return LockKey(key)
}

// RequestFailures counts the failed attempts at a Redis Monitor request:
// FailuresKey in Single ("lock:<key>:failures"); in Cluster
// "cluster:{<tag>}:failures:<key>" in the request key's slot (RequestLock),
// so that request_delete.lua removes the request and its count in one
// step.
func (l Layout) RequestFailures(key string) string {
	if l.cluster {
		return "cluster:{" + SlotTag(Slot(key)) + "}:failures:" + key
	}
	return FailuresKey(key)
}

// LedgerSharesPattern is the SCAN MATCH pattern, in Cluster, of the
// ledger shares (LedgerCounts) of every crawl of a spider and app, in every
// domain, to be scanned on every master.
func (l Layout) LedgerSharesPattern(spiderID, appID string) string {
	return "cluster:{*}:ledger:" + GlobEscape(spiderID+":"+appID+":") + "*"
}

// ParseLedgerShares splits a Cluster ledger share key of spiderID and appID
// (LedgerCounts) into its domain and crawl.
func (l Layout) ParseLedgerShares(key, spiderID, appID string) (domain, crawlID string, ok bool) {
	rest, found := strings.CutPrefix(key, ClusterPrefix)
	if !found {
		return "", "", false
	}
	domain, crawlID, found = strings.Cut(rest, "}:ledger:"+spiderID+":"+appID+":")
	if !found || domain == "" || crawlID == "" || strings.ContainsAny(domain, "{}") {
		return "", "", false
	}
	return domain, crawlID, true
}

// slotTags[s] is the shortest, first in counting order, base-36 string
// whose slot is s (SlotTag); built on first use.
var slotTags = sync.OnceValue(func() []string {
	tags := make([]string, 16384)
	left := len(tags)
	for n := uint64(0); left > 0; n++ {
		tag := strconv.FormatUint(n, 36)
		if s := Slot(tag); tags[s] == "" {
			tags[s] = tag
			left--
		}
	}
	return tags
})

// SlotTag is a short hash tag (no braces) whose keys are in slot (0 to
// 16383): "cluster:{" + SlotTag(Slot(k)) + "}:..." is in k's slot, whatever
// k holds. It panics on a slot out of range.
func SlotTag(slot int) string { return slotTags()[slot] }

// AllQueuePatterns are the SCAN MATCH patterns of every spider's queues and
// render queues in l: AllQueuesPattern and AllRenderQueuesPattern in
// Single; in Cluster "cluster:{*}:queue:*" and "cluster:{*}:renderqueue:*",
// to be scanned on every master.
func (l Layout) AllQueuePatterns() []string {
	if l.cluster {
		return []string{"cluster:{*}:queue:*", "cluster:{*}:renderqueue:*"}
	}
	return []string{AllQueuesPattern, AllRenderQueuesPattern}
}

// CrawlerResponses is, with ResponseBuckets (Cluster, or Single with
// WithResponseBuckets), the hash in which a crawler host counts a spider's
// responses of one status code per time bucket,
// "cluster:{<host>}:responses:<spiderid>:<code>" (package stats,
// BucketSet; the same key on one Redis, outside the original's patterns).
// Else the crawlers keep the original's sorted sets at CrawlerStatusKey,
// which it returns.
func (l Layout) CrawlerResponses(host, spiderID, code string) string {
	if l.ResponseBuckets() {
		return clusterKey(host, "responses", spiderID, code)
	}
	return CrawlerStatusKey(host, spiderID, code)
}

// CrawlerResponsesPattern is the SCAN MATCH pattern of every crawler
// host's response counts in hashes (CrawlerResponses with
// ResponseBuckets), to be scanned on every master of a cluster.
const CrawlerResponsesPattern = "cluster:{*}:responses:*"

// ParseCrawlerResponses splits a Cluster CrawlerResponses key into its
// host, spider and status code.
func ParseCrawlerResponses(key string) (host, spiderID, code string, ok bool) {
	rest, found := strings.CutPrefix(key, ClusterPrefix)
	if !found {
		return "", "", "", false
	}
	host, rest, found = strings.Cut(rest, "}:responses:")
	if !found || host == "" || strings.ContainsAny(host, "{}:") {
		return "", "", "", false
	}
	spiderID, code, found = strings.Cut(rest, ":")
	if !found || spiderID == "" || code == "" || strings.Contains(code, ":") {
		return "", "", "", false
	}
	return host, spiderID, code, true
}
