package rediskeys_test

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// The single layout is the original's keys, byte for byte.
func TestSingleLayoutIsTheOriginalsKeys(t *testing.T) {
	l := rediskeys.Single
	for _, tt := range []struct{ got, want string }{
		{l.Queue("link", "example.com"), "link:example.com:queue"},
		{l.Throttle("link", "1.2.3.4", "example.com", true, true), "link:1.2.3.4:example.com"},
		{l.Throttle("link", "1.2.3.4", "example.com", false, false), "example.com"},
		{l.Leases("link", "example.com"), "leases:link"},
		{l.DupeFilter("link", "example.com", "c1"), "link:dupefilter:c1"},
		{first(l.BloomFilter("link", "example.com", "c1")), "bloom:link:c1:bits"},
		{second(l.BloomFilter("link", "example.com", "c1")), "bloom:link:c1:meta"},
		{l.DomainMaxPage("link", "example.com", "c1"), "link:domain_max_page_filter:example.com:c1"},
		{l.GlobalPageCount("link", "example.com", "c1"), "link:global_page_count_filter:example.com:c1"},
		{l.LedgerCounts("link", "app", "c1", "example.com"), "ledger:link:app:c1:counts"},
		{l.QueuePattern("link"), "link:*:queue"},
		{l.RequestLock("info:link:app:c1"), "lock:info:link:app:c1"},
		{l.RequestFailures("info:link:app:c1"), "lock:info:link:app:c1:failures"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
	if l.IsCluster() || !rediskeys.Cluster.IsCluster() {
		t.Fatal("IsCluster wrong")
	}
	if got := l.GroupBySlot([]string{"a.com", "b.com", "a.com"}); !slices.Equal(got[0], []string{"a.com", "b.com"}) || len(got) != 1 {
		t.Fatalf("single layout groups %q, want one group", got)
	}
}

// clusterKeys are every cluster-layout key of a domain.
func clusterKeys(domain string) []string {
	l := rediskeys.Cluster
	return []string{
		l.Queue("link", domain), l.Throttle("link", "1.2.3.4", domain, true, true),
		l.Throttle("link", "", domain, false, false), l.Leases("link", domain),
		l.DupeFilter("link", domain, "c1"), l.DomainMaxPage("link", domain, "c1"),
		l.GlobalPageCount("link", domain, "c1"), l.LedgerCounts("link", "app", "c1", domain),
		first(l.BloomFilter("link", domain, "c1")), second(l.BloomFilter("link", domain, "c1")),
	}
}

func first(a, _ string) string  { return a }
func second(_, b string) string { return b }

// Cluster keys carry their domain's tag, name their spider and crawl, and
// stay out of the patterns the original's components scan.
func TestClusterLayoutTagsEveryKeyWithItsDomain(t *testing.T) {
	want := []string{
		"cluster:{example.com}:queue:link", "cluster:{example.com}:throttle:link:1.2.3.4",
		"cluster:{example.com}:throttle", "cluster:{example.com}:leases:link",
		"cluster:{example.com}:seen:link:c1", "cluster:{example.com}:domain_max_page:link:c1",
		"cluster:{example.com}:global_page_count:link:c1", "cluster:{example.com}:ledger:link:app:c1",
		"cluster:{example.com}:bloom:link:c1:bits", "cluster:{example.com}:bloom:link:c1:meta",
	}
	if got := clusterKeys("example.com"); !slices.Equal(got, want) {
		t.Fatalf("cluster keys\n%q\nwant\n%q", got, want)
	}
	for _, d := range []string{"example.com", "127.0.0.1.", "::1.", "localhost."} {
		spider, domain, ok := rediskeys.Cluster.ParseQueue(rediskeys.Cluster.Queue("link", d))
		if !ok || spider != "link" || domain != d {
			t.Errorf("ParseQueue of %q's queue: %q %q %v", d, spider, domain, ok)
		}
	}
	for _, k := range []string{"link:example.com:queue", "cluster:{}:queue:link", "cluster:{a.com}:seen:link:c1", "cluster:{a.com}:queue:"} {
		if _, _, ok := rediskeys.Cluster.ParseQueue(k); ok {
			t.Errorf("ParseQueue took %q", k)
		}
	}
	if p := rediskeys.Cluster.QueuePattern("li*nk"); p != `cluster:{*}:queue:li\*nk` {
		t.Errorf("QueuePattern %q", p)
	}
}

// On a real Redis Cluster: every key of a domain is in one slot (one
// script may touch them all), the queues of 20 domains spread over all
// three masters, and GroupBySlot's groups are whole slots.
func TestClusterLayoutOnARealCluster(t *testing.T) {
	c := harness.StartRedisCluster(t)
	rdb := c.TestClient(t)
	ctx := context.Background()
	var domains []string
	for i := range 20 {
		domains = append(domains, fmt.Sprintf("site%d.example", i))
	}
	masters := map[string]bool{}
	for _, d := range domains {
		keys := clusterKeys(d)
		for _, k := range keys {
			slot, err := rdb.ClusterKeySlot(ctx, k).Result()
			if err != nil {
				t.Fatal(err)
			}
			if int(slot) != rediskeys.Slot(k) || int(slot) != rediskeys.Slot(rediskeys.DomainTag(d)) {
				t.Fatalf("%q in slot %d, Slot says %d, its domain's tag %d", k, slot, rediskeys.Slot(k), rediskeys.Slot(rediskeys.DomainTag(d)))
			}
		}
		// One script touches every key of the domain: no CROSSSLOT.
		args := make([]any, len(keys))
		for i := range args {
			args[i] = i
		}
		err := rdb.Eval(ctx, "for i, k in ipairs(KEYS) do redis.call('SET', k, ARGV[i]) end return #KEYS", keys, args...).Err()
		if err != nil {
			t.Fatalf("one script on %s's keys: %v", d, err)
		}
		masters[c.MasterOf(t, rediskeys.Cluster.Queue("link", d)).Addr] = true
	}
	if len(masters) != 3 {
		t.Fatalf("20 domains' queues on %d masters, want 3", len(masters))
	}
	groups := rediskeys.Cluster.GroupBySlot(append(domains, domains[3]))
	slots := map[int]bool{}
	for _, d := range domains {
		slots[rediskeys.Slot(rediskeys.DomainTag(d))] = true
	}
	if len(groups) != len(slots) {
		t.Fatalf("%d groups for %d slots", len(groups), len(slots))
	}
	var flat []string
	for _, g := range groups {
		for _, d := range g {
			if rediskeys.Slot(rediskeys.DomainTag(d)) != rediskeys.Slot(rediskeys.DomainTag(g[0])) {
				t.Fatalf("group %q mixes slots", g)
			}
		}
		flat = append(flat, g...)
	}
	slices.Sort(flat)
	sorted := slices.Clone(domains)
	slices.Sort(sorted)
	if !slices.Equal(flat, sorted) {
		t.Fatalf("groups hold %q, want each domain once", flat)
	}
}

// The render queue and the ledger's index sets: the original's (and our
// one-Redis) keys in Single, the domain's tag in Cluster; the completion
// marker is one slot's.
func TestLayoutRenderQueueAndLedgerIndex(t *testing.T) {
	s, c := rediskeys.Single, rediskeys.Cluster
	for _, tt := range []struct{ got, want string }{
		{s.QueueFor("link", "a.com", false), "link:a.com:queue"},
		{s.QueueFor("link", "a.com", true), "link:a.com:renderqueue"},
		{s.LedgerActive("a.com"), "ledger:active"},
		{s.LedgerCrawls("a.com"), "ledger:crawls"},
		{s.LedgerAppCrawls("app", "a.com"), "ledger:app:app:crawls"},
		{c.QueueFor("link", "a.com", false), "cluster:{a.com}:queue:link"},
		{c.QueueFor("link", "a.com", true), "cluster:{a.com}:renderqueue:link"},
		{c.LedgerActive("a.com"), "cluster:{a.com}:ledger-active"},
		{c.LedgerCrawls("a.com"), "cluster:{a.com}:ledger-crawls"},
		{c.LedgerAppCrawls("app", "a.com"), "cluster:{a.com}:ledger-app-crawls:app"},
		{c.LedgerActivePattern(), "cluster:{*}:ledger-active"},
		{c.Completed("link", "app", "c1"), "cluster:{ledger}:completed:link:app:c1"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
	if d, ok := c.ParseLedgerActive(c.LedgerActive("a.com")); !ok || d != "a.com" {
		t.Errorf("ParseLedgerActive = %q, %v", d, ok)
	}
	for _, bad := range []string{"ledger:active", "cluster:{}:ledger-active", "cluster:{a.com}:queue:link"} {
		if _, ok := c.ParseLedgerActive(bad); ok {
			t.Errorf("ParseLedgerActive(%q) ok", bad)
		}
	}
	if _, ok := s.ParseLedgerActive(c.LedgerActive("a.com")); ok {
		t.Error("the single layout parses a cluster key")
	}
}

// The queue patterns and parsers of both layouts read back what QueueFor
// builds, and nothing else.
func TestLayoutParsesItsQueueKeys(t *testing.T) {
	for _, l := range []rediskeys.Layout{rediskeys.Single, rediskeys.Cluster} {
		for _, render := range []bool{false, true} {
			key := l.QueueFor("link", "a.com", render)
			spider, domain, r, ok := l.ParseAnyQueue(key)
			if !ok || spider != "link" || domain != "a.com" || r != render {
				t.Errorf("cluster %v: ParseAnyQueue(%q) = %q %q %v %v", l.IsCluster(), key, spider, domain, r, ok)
			}
		}
	}
	if got := rediskeys.Cluster.RenderQueuePattern("link"); got != "cluster:{*}:renderqueue:link" {
		t.Errorf("RenderQueuePattern = %q", got)
	}
	if got := rediskeys.Single.RenderQueuePattern("link"); got != "link:*:renderqueue" {
		t.Errorf("RenderQueuePattern = %q", got)
	}
	for _, bad := range []string{"link:a.com:queue", "cluster:{a.com}:queue:", "cluster:{a.com}:seen:link:c1", "cluster:{}:queue:link",
		"cluster:{a.com}:ledger:link:app:c1"} {
		if _, _, _, ok := rediskeys.Cluster.ParseAnyQueue(bad); ok {
			t.Errorf("ParseAnyQueue(%q) ok", bad)
		}
	}
}

// A reaper finds every domain's lease set by its owners key; a crawler
// that does not persist clears its spider's cluster keys by pattern, and
// the patterns match those keys and no other spider's.
func TestLayoutLeaseAndClearPatterns(t *testing.T) {
	c := rediskeys.Cluster
	if got := c.LeasesPattern("li*nk"); got != `cluster:{*}:leases:li\*nk:owners` {
		t.Errorf("LeasesPattern %q", got)
	}
	if got := rediskeys.Single.LeasesPattern("link"); got != "leases:link:owners" {
		t.Errorf("single LeasesPattern %q", got)
	}
	owners := c.Leases("link", "example.com") + ":owners"
	if !globMatch(c.LeasesPattern("link"), owners) || globMatch(c.LeasesPattern("other"), owners) {
		t.Errorf("LeasesPattern does not match %s alone", owners)
	}
	if base, ok := c.ParseLeasesOwners(owners); !ok || base != c.Leases("link", "example.com") {
		t.Errorf("ParseLeasesOwners(%q) = %q, %v", owners, base, ok)
	}
	cleared := []string{c.Queue("link", "example.com"), c.QueueFor("link", "example.com", true), c.DupeFilter("link", "example.com", "c1"),
		c.DomainMaxPage("link", "example.com", "c1"), c.GlobalPageCount("link", "example.com", "c1"),
		first(c.BloomFilter("link", "example.com", "c1")), second(c.BloomFilter("link", "example.com", "c1"))}
	kept := []string{c.Queue("other", "example.com"), c.DupeFilter("other", "example.com", "c1"), first(c.BloomFilter("other", "example.com", "c1")), c.LedgerCounts("link", "app", "c1", "example.com"),
		c.Leases("link", "example.com") + ":items"}
	matches := func(key string) bool {
		return slices.ContainsFunc(c.SpiderPatterns("link"), func(p string) bool { return globMatch(p, key) })
	}
	for _, k := range cleared {
		if !matches(k) {
			t.Errorf("SpiderPatterns miss %s", k)
		}
	}
	for _, k := range kept {
		if matches(k) {
			t.Errorf("SpiderPatterns match %s", k)
		}
	}
}

// Every slot has a tag, and a Redis Monitor request's lock and failure
// count are in the request key's slot in Cluster, whatever the key holds
// (braces too), while naming it.
func TestSlotTagsAndRequestKeysShareTheRequestsSlot(t *testing.T) {
	for slot := range 16384 {
		if tag := rediskeys.SlotTag(slot); rediskeys.Slot(tag) != slot || strings.ContainsAny(tag, "{}") {
			t.Fatalf("SlotTag(%d) = %q, in slot %d", slot, tag, rediskeys.Slot(tag))
		}
	}
	l := rediskeys.Cluster
	for _, key := range []string{"info:link:app:c1", "stop:link:app:{c}1", "timeout:link:a}p:{", "statsrequest:all:app", "zk:{}:x"} {
		for _, k := range []string{l.RequestLock(key), l.RequestFailures(key)} {
			if rediskeys.Slot(k) != rediskeys.Slot(key) || !strings.HasSuffix(k, ":"+key) || !strings.HasPrefix(k, "cluster:{") {
				t.Errorf("%q: slot %d, want %q's %d", k, rediskeys.Slot(k), key, rediskeys.Slot(key))
			}
		}
	}
	share := l.LedgerCounts("link", "app", "c:1", "a.com")
	if d, c, ok := l.ParseLedgerShares(share, "link", "app"); !ok || d != "a.com" || c != "c:1" {
		t.Errorf("ParseLedgerShares(%q): %q %q %v", share, d, c, ok)
	}
	if _, _, ok := l.ParseLedgerShares(share, "link", "ap"); ok {
		t.Error("ParseLedgerShares took another app's share")
	}
	if ok, _ := path.Match(l.LedgerSharesPattern("link", "app"), share); !ok {
		t.Errorf("%q does not match %q", share, l.LedgerSharesPattern("link", "app"))
	}
}

// A crawler host's response counts: the original's base key in Single, a
// hash tagged by the host in Cluster, which parses back and matches its
// pattern; other keys do not parse.
func TestCrawlerResponsesKeys(t *testing.T) {
	if got := rediskeys.Single.CrawlerResponses("vm", "link", "200"); got != "stats:crawler:vm:link:200" {
		t.Errorf("Single: %q", got)
	}
	key := rediskeys.Cluster.CrawlerResponses("vm", "link", "200")
	if key != "cluster:{vm}:responses:link:200" {
		t.Fatalf("Cluster: %q", key)
	}
	if ok, _ := path.Match(rediskeys.CrawlerResponsesPattern, key); !ok {
		t.Errorf("%q does not match %q", key, rediskeys.CrawlerResponsesPattern)
	}
	host, spider, code, ok := rediskeys.ParseCrawlerResponses(key)
	if !ok || host != "vm" || spider != "link" || code != "200" {
		t.Errorf("parsed %q %q %q %v", host, spider, code, ok)
	}
	for _, k := range []string{"stats:crawler:vm:link:200", "cluster:{}:responses:link:200", "cluster:{vm}:responses:link",
		"cluster:{vm}:responses::200", "cluster:{vm}:responses:link:", "cluster:{a:b}:responses:link:200",
		"cluster:{vm}:responses:link:200:900", "cluster:{vm}:queue:link"} {
		if _, _, _, ok := rediskeys.ParseCrawlerResponses(k); ok {
			t.Errorf("ParseCrawlerResponses took %q", k)
		}
	}
}
