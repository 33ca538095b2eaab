package scheduler

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

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
//
// A crawler queues a crawled page's follow-ups with Finish, in the step
// that ends the page's lease; Enqueue queues them on their own.
func (s *Scheduler) Enqueue(ctx context.Context, parent *crawlrequest.Request, reqs []*crawlrequest.Request, refused map[ledger.Reason]int) (Enqueued, error) {
	f := s.followUps(parent, reqs, refused)
	if f.empty() {
		return f.out, nil
	}
	var b finishBatch
	b.page(f, 0)
	owners, records := s.leases.Keys()
	res, err := b.run(ctx, s.rdb, s.now(), s.cfg, owners, records)
	if err != nil {
		return f.out, fmt.Errorf("queue follow-up requests: %w", err)
	}
	return s.enqueued(f, res.pages[0])
}

// followUps are the follow-up requests of one page, checked and encoded
// for the finish script, in groups of one queue, one crawl, one score and
// the same page limits (a page's links to one domain, usually all of them).
type followUps struct {
	parent *crawlrequest.Request
	// the spider's crawl blacklist and the crawl's duplicate filter
	blacklistKey, dupeKey string
	out                   Enqueued // with the refusals decided before the script
	refusals              []refusal
	groups                []followGroup
	n                     int // requests in the groups
}

type refusal struct {
	crawl  ledger.Crawl
	reason ledger.Reason
	n      int
}

type followGroup struct {
	queue, channel     string
	crawl              ledger.Crawl
	score              float64
	dmax               int
	dmaxKey, globalKey string   // the page limit counters; "" without limits
	reqs               []string // fingerprint, member, ...
}

func (f *followUps) empty() bool { return f.n == 0 && len(f.refusals) == 0 }

// followUps checks and encodes a page's follow-up requests: refused now
// are those of an expired crawl, of a domain the domain config blacklists
// (without SCHEDULER_BACKLOG_BLACKLIST) and those whose URL has no domain.
func (s *Scheduler) followUps(parent *crawlrequest.Request, reqs []*crawlrequest.Request, refused map[ledger.Reason]int) *followUps {
	f := &followUps{parent: parent, blacklistKey: rediskeys.BlacklistKey(s.cfg.SpiderID),
		dupeKey: rediskeys.DupeFilterKey(s.cfg.SpiderID, parent.CrawlID)}
	refuse := func(c ledger.Crawl, r ledger.Reason, n int) {
		if n > 0 {
			f.refusals = append(f.refusals, refusal{c, r, n})
			f.out.refuse(r, n)
		}
	}
	parentCrawl := s.crawlOf(parent)
	for _, r := range slices.Sorted(maps.Keys(refused)) {
		refuse(parentCrawl, r, refused[r])
	}
	if parent.Expired(s.now()) {
		for _, r := range reqs {
			refuse(s.crawlOf(r), ledger.RefusedExpired, 1)
		}
		reqs = nil
	}
	s.mu.Lock()
	blacklist := s.config.Blacklist
	s.mu.Unlock()
	for _, r := range reqs {
		dom, err := rediskeys.DomainOfURL(r.URL)
		if err != nil {
			refuse(s.crawlOf(r), ledger.RefusedInvalidURL, 1)
			continue
		}
		if !s.cfg.BacklogBlacklist && slices.Contains(blacklist, dom) {
			refuse(s.crawlOf(r), ledger.RefusedDomainBlacklisted, 1)
			continue
		}
		member, err := r.Encode()
		if err != nil {
			refuse(s.crawlOf(r), ledger.RefusedInvalidURL, 1)
			continue
		}
		g := followGroup{queue: rediskeys.QueueKey(r.SpiderID, dom), channel: rediskeys.QueueChannel(r.SpiderID),
			crawl: s.crawlOf(r), score: r.Score(), dmax: r.DomainMaxPages}
		if r.DomainMaxPages > 0 || s.cfg.GlobalPageLimit > 0 {
			g.dmaxKey = rediskeys.DomainMaxPageKey(s.cfg.SpiderID, dom, r.CrawlID)
			g.globalKey = rediskeys.GlobalPageCountKey(s.cfg.SpiderID, dom, r.CrawlID)
		}
		i := slices.IndexFunc(f.groups, func(o followGroup) bool {
			return o.queue == g.queue && o.crawl == g.crawl && o.score == g.score && o.dmax == g.dmax && o.dmaxKey == g.dmaxKey
		})
		if i < 0 {
			f.groups = append(f.groups, g)
			i = len(f.groups) - 1
		}
		f.groups[i].reqs = append(f.groups[i].reqs, fingerprint.Of(r.URL), string(member))
		f.n++
	}
	return f
}

// enqueued is what the finish script did with f (its page result: see
// finish.lua), counted in f.out; the queues it queued to are known to this
// scheduler from now on.
func (s *Scheduler) enqueued(f *followUps, res []int64) (Enqueued, error) {
	out := f.out
	switch {
	case len(res) == 1 && res[0] == -1:
		out.refuse(ledger.RefusedCrawlBlacklisted, f.n)
		return out, nil
	case len(res) != 1+3*len(f.groups) || res[0] != 1:
		return out, fmt.Errorf("queue follow-up requests: unexpected answer %v for %d groups", res, len(f.groups))
	}
	known := map[string]bool{} // queues this scheduler was told of
	for i, g := range f.groups {
		queued := int(res[1+3*i])
		out.Queued += queued
		out.refuse(ledger.RefusedDuplicate, int(res[2+3*i]))
		out.refuse(ledger.RefusedPageLimit, int(res[3+3*i]))
		if queued > 0 && !known[g.queue] && strings.HasPrefix(g.queue, s.cfg.SpiderID+":") {
			known[g.queue] = true
			s.addDomain(g.queue)
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
