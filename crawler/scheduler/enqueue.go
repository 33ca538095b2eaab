package scheduler

import (
	"context"
	_ "embed"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/fingerprint"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// Enqueued says what became of the follow-up requests of a page: how many
// were queued, and how many were refused by reason (those refused before
// Enqueue, passed in, included). Both are what the crawl's ledger counts.
type Enqueued struct {
	Queued  int
	Refused map[ledger.Reason]int
}

func (e *Enqueued) refuse(r ledger.Reason, n int) {
	if n == 0 {
		return
	}
	if e.Refused == nil {
		e.Refused = map[ledger.Reason]int{}
	}
	e.Refused[r] += n
}

//go:embed enqueue.lua
var enqueueSource string

var enqueueScript = redis.NewScript(ledger.LuaNewWork + enqueueSource)

// Enqueue queues the follow-up requests of parent's page (all of parent's
// crawl): skipping expired crawls and, without SCHEDULER_BACKLOG_BLACKLIST,
// blacklisted domains, then in one atomic step the crawl blacklist, the
// duplicate filter (parent's own URL is marked seen too), domain_max_pages
// and GLOBAL_PAGE_PER_DOMAIN_LIMIT. A queue created by it is announced.
//
// The same step counts, in the ledger of each request's crawl, what it
// queued (enqueued) and what was refused (refused:<reason>), with refused:
// the links the spider left out (by reason, counted in parent's crawl). A
// call with nothing to queue and nothing refused makes no round trip.
func (s *Scheduler) Enqueue(ctx context.Context, parent *crawlrequest.Request, reqs []*crawlrequest.Request, refused map[ledger.Reason]int) (Enqueued, error) {
	var out Enqueued
	parentCrawl := s.crawlOf(parent)
	ledgers := []ledger.Crawl{parentCrawl}
	ledgerOf := func(r *crawlrequest.Request) int {
		c := s.crawlOf(r)
		if i := slices.Index(ledgers, c); i >= 0 {
			return i + 1
		}
		ledgers = append(ledgers, c)
		return len(ledgers)
	}
	type refusal struct {
		ledger int
		reason ledger.Reason
		n      int
	}
	var refusals []refusal
	refuse := func(l int, r ledger.Reason, n int) {
		if n > 0 {
			refusals = append(refusals, refusal{l, r, n})
			out.refuse(r, n)
		}
	}
	for _, r := range slices.Sorted(maps.Keys(refused)) {
		refuse(1, r, refused[r])
	}
	if parent.Expired(s.now()) {
		for _, r := range reqs {
			refuse(ledgerOf(r), ledger.RefusedExpired, 1)
		}
		reqs = nil
	}
	s.mu.Lock()
	blacklist := s.config.Blacklist
	s.mu.Unlock()
	keys := []string{rediskeys.BlacklistKey(s.cfg.SpiderID), rediskeys.DupeFilterKey(s.cfg.SpiderID, parent.CrawlID)}
	var queues, channels []string // queue keys and their announce channels, by queue number - 1
	var limitKeys []string        // pairs of page limit counters, by limit pair number - 1
	type group struct {
		queue, ledger int
		score         float64
		dmax, limits  int
	}
	var groups []group
	var reqArgs []any // fingerprint, member, group number of each request
	for _, r := range reqs {
		dom, err := rediskeys.DomainOfURL(r.URL)
		if err != nil {
			refuse(ledgerOf(r), ledger.RefusedInvalidURL, 1)
			continue
		}
		if !s.cfg.BacklogBlacklist && slices.Contains(blacklist, dom) {
			refuse(ledgerOf(r), ledger.RefusedDomainBlacklisted, 1)
			continue
		}
		member, err := r.Encode()
		if err != nil {
			refuse(ledgerOf(r), ledger.RefusedInvalidURL, 1)
			continue
		}
		queue := rediskeys.QueueKey(r.SpiderID, dom)
		q := slices.Index(queues, queue) + 1
		if q == 0 {
			queues = append(queues, queue)
			channels = append(channels, rediskeys.QueueChannel(r.SpiderID))
			q = len(queues)
		}
		limits := 0
		if r.DomainMaxPages > 0 || s.cfg.GlobalPageLimit > 0 {
			dmaxKey := rediskeys.DomainMaxPageKey(s.cfg.SpiderID, dom, r.CrawlID)
			for p := 0; p < len(limitKeys); p += 2 {
				if limitKeys[p] == dmaxKey {
					limits = p/2 + 1
				}
			}
			if limits == 0 {
				limitKeys = append(limitKeys, dmaxKey, rediskeys.GlobalPageCountKey(s.cfg.SpiderID, dom, r.CrawlID))
				limits = len(limitKeys) / 2
			}
		}
		g := group{queue: q, ledger: ledgerOf(r), score: r.Score(), dmax: r.DomainMaxPages, limits: limits}
		gi := slices.Index(groups, g) + 1
		if gi == 0 {
			groups = append(groups, g)
			gi = len(groups)
		}
		reqArgs = append(reqArgs, fingerprint.Of(r.URL), member, gi)
	}
	if len(groups) == 0 && len(refusals) == 0 {
		return out, nil
	}
	n := len(reqArgs) / 3
	keys = append(keys, queues...)
	for _, c := range ledgers {
		keys = append(keys, ledger.NewWorkKeys(c)...)
	}
	keys = append(keys, limitKeys...)
	args := make([]any, 0, 12+len(ledgers)+len(channels)+5*len(groups)+len(reqArgs)+3*len(refusals))
	args = append(args,
		parent.AppID+"||"+parent.CrawlID, seconds(s.cfg.DupeTimeout), seconds(s.cfg.DomainMaxPageTimeout),
		s.cfg.GlobalPageLimit, seconds(s.cfg.GlobalPageTimeout), fingerprint.Of(parent.URL),
		ledger.Stamp(s.now()), seconds(s.cfg.ledgerTTL()), len(queues), len(ledgers), len(groups), n,
	)
	for _, c := range ledgers {
		args = append(args, c.Member())
	}
	for _, c := range channels {
		args = append(args, c)
	}
	for _, g := range groups {
		args = append(args, g.queue, g.ledger, g.score, g.dmax, g.limits)
	}
	args = append(args, reqArgs...)
	for _, r := range refusals {
		args = append(args, r.ledger, string(r.reason), r.n)
	}
	counts, err := enqueueScript.Run(ctx, s.rdb, keys, args...).Int64Slice()
	if err != nil {
		return out, fmt.Errorf("queue follow-up requests: %w", err)
	}
	if len(counts) == 1 && counts[0] == -1 {
		out.refuse(ledger.RefusedCrawlBlacklisted, n)
		return out, nil
	}
	if len(counts) != 3*len(groups) {
		return out, fmt.Errorf("queue follow-up requests: %d counts for %d groups", len(counts), len(groups))
	}
	known := make([]bool, len(queues)) // queues this scheduler was told of
	for i, g := range groups {
		queued := int(counts[3*i])
		out.Queued += queued
		out.refuse(ledger.RefusedDuplicate, int(counts[3*i+1]))
		out.refuse(ledger.RefusedPageLimit, int(counts[3*i+2]))
		if q := g.queue - 1; queued > 0 && !known[q] && strings.HasPrefix(queues[q], s.cfg.SpiderID+":") {
			known[q] = true
			s.addDomain(queues[q])
		}
	}
	return out, nil
}

// crawlOf is the crawl whose ledger counts r: r's own crawl under its
// spider type (this scheduler's when r names none).
func (s *Scheduler) crawlOf(r *crawlrequest.Request) ledger.Crawl {
	spider := r.SpiderID
	if spider == "" {
		spider = s.cfg.SpiderID
	}
	return ledger.Crawl{SpiderID: spider, AppID: r.AppID, CrawlID: r.CrawlID}
}

func seconds(d time.Duration) string { return strconv.FormatInt(int64(math.Ceil(d.Seconds())), 10) }
