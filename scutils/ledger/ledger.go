// Package ledger is the per-crawl ledger: one small Redis hash per crawl
// (spiderid, appid, crawlid) counting what became of every request, so that
// a crawl's progress can be read at any moment and its end detected without
// scanning queues.
//
// Every request of a crawl enters the ledger once, as a seed (the Kafka
// Monitor queued it) or as enqueued (a crawler queued it as a follow-up),
// and leaves it once, as done: published, dropped, refused after it was
// popped (robots.txt, a private address, expired) or purged from its queue
// by a stop or an expire. Retries and returns of leases move a request
// between its queue and a crawler without touching the counts. Every
// writer changes a count in the same atomic step as the queue or lease it
// counts (one Lua script, or one MULTI), so at every instant
//
//	seeds + enqueued = done + still queued + leased
//
// and a crawl whose seeds + enqueued equals done has nothing queued and
// nothing in flight: it is complete. Requests refused before they were ever
// queued (duplicates, filtered links, page limits, blacklists) are counted
// too, by reason, but are not part of that sum.
//
// The writes ride in round trips the components make anyway: the Kafka
// Monitor's pipeline of queued seeds, a crawler's enqueue script and its
// batched lease acknowledgements, the Redis Monitor's purges.
//
// Keys (see rediskeys): the hash LedgerKey per crawl, expiring TTL after its
// last new work or its completion; the index LedgerCrawlsKey and
// LedgerAppCrawlsKey (every crawl, by start time) and LedgerActiveKey (crawls
// that may still have work). Index members are Crawl.Member: a JSON array
// [spiderid, appid, crawlid].
package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisscripts"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// DefaultTTL is LEDGER_TTL's default.
const DefaultTTL = 7 * 24 * time.Hour

// DefaultCompleteInterval is LEDGER_COMPLETE_INTERVAL's default.
const DefaultCompleteInterval = time.Second

// DefaultCompleteQuiet is LEDGER_COMPLETE_QUIET's default.
const DefaultCompleteQuiet = 5 * time.Second

// The ledger's settings; the components that write or read the ledger
// declare them (Settings).
var (
	TTL = settings.Seconds("LEDGER_TTL", int(DefaultTTL.Seconds()),
		"seconds a crawl's ledger is kept after its last new work or its completion").Ours().AtLeast(time.Second)
	CompleteInterval = settings.Seconds("LEDGER_COMPLETE_INTERVAL", DefaultCompleteInterval.Seconds(),
		"seconds between a Redis Monitor's looks for finished crawls (`crawl-complete`). The other components ignore it").Ours().Positive()
	CompleteQuiet = settings.Seconds("LEDGER_COMPLETE_QUIET", DefaultCompleteQuiet.Seconds(),
		"seconds a crawl with nothing left must also have had no new work (no seed, no follow-up queued) before it counts as finished (`crawl-complete`), so that seeds fed as separate messages make one crawl; 0: none. A stop or an expire ends a crawl at once. Read by the Redis Monitor").Ours().AtLeast(0)
)

// Settings are the ledger's settings, for a component's settings.Group.
func Settings() settings.Group { return settings.Declare(TTL, CompleteInterval, CompleteQuiet) }

// The hash's fields. Counters by reason or code are "<prefix><reason>".
const (
	FieldSeeds              = "seeds"
	FieldEnqueued           = "enqueued"
	FieldDone               = "done"
	FieldRetried            = "retried"
	FieldPublished          = "published"
	FieldPublishedTruncated = "published_truncated"
	FieldStarted            = "started"       // epoch seconds of the first seed or enqueue
	FieldLastActivity       = "last_activity" // epoch seconds of the last write
	FieldEndedBy            = "ended_by"      // "stop" or "expire", once one ended the crawl
	FieldCompleted          = "completed"     // epoch seconds, once a crawl-complete was published
	FieldCompleting         = "completing"    // "<owner>|<deadline>" while a monitor publishes it
	FieldRun                = "run"           // the run of a scheduled crawl (scutils/recrawl) the counts are of
	FieldUnchanged          = "unchanged"     // pages of a re-run found unchanged (published or not)
	FieldWithheld           = "withheld"      // unchanged pages not published (emit "changed"): done
	FieldSkippedFresh       = "skipped_fresh" // pages an adaptive re-run did not fetch (fresh enough): done
	// FieldFalseDropsEstimate is, with a compact duplicate filter
	// (DUPEFILTER_MODE bloom), the expected number of new requests it
	// dropped as seen (counted in refused:duplicate): a float, the sum over
	// the requests it let through of p/(1-p), p its false-positive
	// probability from its fill when asked. Not part of the ledger's sum.
	FieldFalseDropsEstimate = "dupefilter_false_drops_estimate"

	PrefixFetched = "fetched:" // by status code
	PrefixRefused = "refused:" // by Reason
	PrefixDropped = "dropped:" // by Reason
	PrefixPurged  = "purged:"  // by Purge
)

// Reason says why a request was refused or dropped. The values are bounded
// (they become field names and metric labels).
type Reason string

// Refused before the queue: the request never entered the ledger's sum.
const (
	RefusedDuplicate         Reason = "duplicate"          // seen before in this crawl (the dupefilter)
	RefusedOffDomain         Reason = "off_domain"         // outside allowed_domains
	RefusedRegex             Reason = "regex"              // allow_regex / deny_regex
	RefusedExtension         Reason = "extension"          // deny_extensions
	RefusedCrawlBlacklisted  Reason = "crawl_blacklisted"  // the crawl was stopped or expired
	RefusedDomainBlacklisted Reason = "domain_blacklisted" // the domain config's blacklist
	RefusedPageLimit         Reason = "page_limit"         // domain_max_pages, GLOBAL_PAGE_PER_DOMAIN_LIMIT
	RefusedInvalidURL        Reason = "invalid_url"        // not an http(s) URL with a host
	RefusedTooManyLinks      Reason = "too_many_links"     // past the page's MAX_LINKS_PER_PAGE
)

// Refused after the pop (done: counted in the sum), and RefusedExpired
// before the queue too (follow-ups of an expired crawl).
const (
	RefusedRobots         Reason = "robots"          // disallowed by robots.txt
	RefusedPrivateAddress Reason = "private_address" // the fetcher's SSRF guard
	RefusedExpired        Reason = "expired"         // the crawl expired before the fetch
)

// Dropped (done): given up after retries, or fetched and not published.
const (
	DroppedTimeout     Reason = "timeout"     // no response in DOWNLOAD_TIMEOUT, after RETRY_TIMES retries
	DroppedConnection  Reason = "connection"  // no connection, after RETRY_TIMES retries
	Dropped504         Reason = "504"         // a 504 (or a RETRY_HTTP_CODES code) after RETRY_TIMES retries
	DroppedUncrawlable Reason = "uncrawlable" // can never be fetched (bad URL, redirect loop, ...)
	DroppedTooLarge    Reason = "too_large"   // cannot fit a Kafka message even reduced
	DroppedUnpublished Reason = "unpublished" // Kafka refused it for good
	DroppedNoResult    Reason = "no_result"   // the spider made no result of the page
	// DroppedMetaRefresh is a page whose <meta http-equiv="refresh">
	// target was queued instead of it (METAREFRESH_ENABLED): not a failure.
	DroppedMetaRefresh Reason = "meta_refresh"
)

// Purge says which action removed queued requests.
type Purge string

// The purges.
const (
	PurgedStop   Purge = "stop"
	PurgedExpire Purge = "expire"
)

// Crawl names one crawl. The same crawlid under another spider or app is
// another crawl, as in the queues.
type Crawl struct{ SpiderID, AppID, CrawlID string }

// Key is the crawl's ledger hash.
func (c Crawl) Key() string { return rediskeys.LedgerKey(c.SpiderID, c.AppID, c.CrawlID) }

// Member is the crawl's entry in the index sorted sets: the JSON array
// [spiderid, appid, crawlid].
func (c Crawl) Member() string {
	b, _ := json.Marshal([3]string{c.SpiderID, c.AppID, c.CrawlID})
	return string(b)
}

// ParseMember reads an index entry.
func ParseMember(m string) (Crawl, error) {
	var ids [3]string
	if err := json.Unmarshal([]byte(m), &ids); err != nil {
		return Crawl{}, fmt.Errorf("ledger index entry %q: %w", m, err)
	}
	return Crawl{SpiderID: ids[0], AppID: ids[1], CrawlID: ids[2]}, nil
}

// A Tally collects ledger counts for any number of crawls, to be written
// together (Write) in a round trip the caller makes anyway. The zero value
// is empty and ready; a Tally is not safe for concurrent use.
type Tally struct {
	crawls map[Crawl]*counts
}

type counts struct {
	fields  map[string]int64
	newWork bool // seeds or enqueued: the crawl is (again) active
}

func (t *Tally) add(c Crawl, field string, n int64, done bool) {
	if n == 0 {
		return
	}
	if t.crawls == nil {
		t.crawls = map[Crawl]*counts{}
	}
	e := t.crawls[c]
	if e == nil {
		e = &counts{fields: map[string]int64{}}
		t.crawls[c] = e
	}
	e.fields[field] += n
	if done {
		e.fields[FieldDone] += n
	}
	if field == FieldSeeds || field == FieldEnqueued {
		e.newWork = true
	}
}

// Enqueued counts n requests a crawler queued for c.
func (t *Tally) Enqueued(c Crawl, n int) { t.add(c, FieldEnqueued, int64(n), false) }

// Refused counts n requests refused before the queue.
func (t *Tally) Refused(c Crawl, r Reason, n int) { t.add(c, PrefixRefused+string(r), int64(n), false) }

// RefusedPopped counts a popped request refused before its fetch
// (RefusedRobots, RefusedPrivateAddress, RefusedExpired): it is done.
func (t *Tally) RefusedPopped(c Crawl, r Reason) { t.add(c, PrefixRefused+string(r), 1, true) }

// Fetched counts a response with status code.
func (t *Tally) Fetched(c Crawl, code int) { t.add(c, PrefixFetched+strconv.Itoa(code), 1, false) }

// Retried counts a request queued again for another try.
func (t *Tally) Retried(c Crawl) { t.add(c, FieldRetried, 1, false) }

// Published counts a request whose result reached Kafka (truncated: cut to
// fit): it is done.
func (t *Tally) Published(c Crawl, truncated bool) {
	t.add(c, FieldPublished, 1, true)
	if truncated {
		t.add(c, FieldPublishedTruncated, 1, false)
	}
}

// Dropped counts a request given up or not published: it is done.
func (t *Tally) Dropped(c Crawl, r Reason) { t.add(c, PrefixDropped+string(r), 1, true) }

// Purged counts n queued requests removed by a stop or an expire: they are
// done.
func (t *Tally) Purged(c Crawl, p Purge, n int) { t.add(c, PrefixPurged+string(p), int64(n), true) }

// Unchanged counts a page of a re-run found unchanged (scutils/recrawl).
func (t *Tally) Unchanged(c Crawl) { t.add(c, FieldUnchanged, 1, false) }

// Withheld counts an unchanged page not published (emit "changed"): it is done.
func (t *Tally) Withheld(c Crawl) { t.add(c, FieldWithheld, 1, true) }

// SkippedFresh counts a page an adaptive re-run did not fetch: it is done.
func (t *Tally) SkippedFresh(c Crawl) { t.add(c, FieldSkippedFresh, 1, true) }

// Merge adds o's counts to t.
func (t *Tally) Merge(o *Tally) {
	if o == nil {
		return
	}
	for c, e := range o.crawls {
		for f, n := range e.fields {
			t.add(c, f, n, false)
		}
		if e.newWork {
			t.crawls[c].newWork = true
		}
	}
}

// Each calls f with every count of t, crawl by crawl (in no set order).
func (t *Tally) Each(f func(c Crawl, field string, n int64)) {
	if t == nil {
		return
	}
	for c, e := range t.crawls {
		for field, n := range e.fields {
			f(c, field, n)
		}
	}
}

// Empty reports whether t counts nothing.
func (t *Tally) Empty() bool { return t == nil || len(t.crawls) == 0 }

// Crawls lists the crawls t counts for.
func (t *Tally) Crawls() []Crawl {
	if t == nil {
		return nil
	}
	return slices.Collect(maps.Keys(t.crawls))
}

// Count returns t's count of a field for c (for tests and logs).
func (t *Tally) Count(c Crawl, field string) int64 {
	if t == nil || t.crawls[c] == nil {
		return 0
	}
	return t.crawls[c].fields[field]
}

// Write adds t's counts to pipe, a MULTI (TxPipeline) that also holds the
// queue or lease changes they count, so both happen at once. Every ledger
// written lives ttl from now (also one first written by a crawler, for a
// crawl the original's Kafka Monitor seeded); a crawl with new work is
// (again) active and indexed.
func (t *Tally) Write(ctx context.Context, pipe redis.Pipeliner, now time.Time, ttl time.Duration) {
	t.WriteIn(ctx, pipe, rediskeys.Single, "", now, ttl)
}

// WriteIn is Write to the crawls' shares of domain under layout l
// (Crawl.LedgerIn): in Cluster, in the slot of domain's queue and leases.
func (t *Tally) WriteIn(ctx context.Context, pipe redis.Pipeliner, l rediskeys.Layout, domain string, now time.Time, ttl time.Duration) {
	if t.Empty() {
		return
	}
	stamp := Stamp(now)
	for c, e := range t.crawls {
		keys := c.LedgerIn(l, domain)
		key := keys.Hash
		for f, n := range e.fields {
			pipe.HIncrBy(ctx, key, f, n)
		}
		pipe.HSet(ctx, key, FieldLastActivity, stamp)
		pipe.Expire(ctx, key, ttl)
		if e.newWork {
			pipe.HSetNX(ctx, key, FieldStarted, stamp)
			pipe.HDel(ctx, key, FieldCompleted)
			index(ctx, pipe, keys, now)
		}
	}
}

// index lists a crawl (its ledger keys l) among the crawls and the active
// ones.
func index(ctx context.Context, pipe redis.Pipeliner, l redisscripts.Ledger, now time.Time) {
	m, score := l.Member, epoch(now)
	pipe.ZAdd(ctx, l.Active, redis.Z{Score: score, Member: m})
	pipe.ZAddNX(ctx, l.Crawls, redis.Z{Score: score, Member: m})
	pipe.ZAddNX(ctx, l.AppCrawls, redis.Z{Score: score, Member: m})
}

// Stamp formats t as the ledger's times: epoch seconds with milliseconds.
func Stamp(t time.Time) string { return strconv.FormatFloat(epoch(t), 'f', 3, 64) }

func epoch(t time.Time) float64 { return float64(t.UnixMilli()) / 1000 }
