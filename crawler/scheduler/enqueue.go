package scheduler

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/fingerprint"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisscripts"
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
	fin := newFinish(s.cfg, s.leases, s.now())
	fin.Pages = []redisscripts.FinishPage{f.page}
	res, err := fin.Run(ctx, s.rdb)
	if err != nil {
		return f.out, fmt.Errorf("queue follow-up requests: %w", err)
	}
	return s.enqueued(f, res.Pages[0])
}

// followUps are the follow-up requests of one page, checked and encoded
// for the finish script, in groups of one queue, one crawl, one score and
// the same page limits (a page's links to one domain, usually all of them).
type followUps struct {
	page redisscripts.FinishPage
	out  Enqueued // with the refusals decided before the script
	n    int      // requests in the groups
}

func (f *followUps) empty() bool { return f.n == 0 && len(f.page.Refused) == 0 }

// followUps checks and encodes a page's follow-up requests: refused now
// are those of an expired crawl, of a domain the domain config blacklists
// (without SCHEDULER_BACKLOG_BLACKLIST) and those whose URL has no domain.
func (s *Scheduler) followUps(parent *crawlrequest.Request, reqs []*crawlrequest.Request, refused map[ledger.Reason]int) *followUps {
	dupes, meta := s.cfg.dupeFilter(parent.CrawlID)
	f := &followUps{page: redisscripts.FinishPage{Blacklist: rediskeys.BlacklistKey(s.cfg.SpiderID),
		Crawl: parent.AppID + "||" + parent.CrawlID, DupeFilter: dupes, DupeFilterMeta: meta,
		Fingerprint: fingerprint.Of(parent.URL)}}
	var ledgers ledger.Ledgers // a page's requests are mostly of its crawl
	refuse := func(c ledger.Crawl, r ledger.Reason, n int) {
		if n > 0 {
			f.page.Refused = append(f.page.Refused, redisscripts.FinishRefusal{Ledger: ledgers.Of(c), Reason: string(r), N: n})
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
		g := redisscripts.FinishGroup{Queue: rediskeys.QueueKeyFor(r.SpiderID, dom, r.Rendered()), Channel: rediskeys.QueueChannel(r.SpiderID),
			Ledger: ledgers.Of(s.crawlOf(r)), Score: r.Score(), DomainMaxPages: r.DomainMaxPages}
		if r.DomainMaxPages > 0 || s.cfg.GlobalPageLimit > 0 {
			g.DomainMaxPageKey = rediskeys.DomainMaxPageKey(s.cfg.SpiderID, dom, r.CrawlID)
			g.GlobalPageKey = rediskeys.GlobalPageCountKey(s.cfg.SpiderID, dom, r.CrawlID)
		}
		i := slices.IndexFunc(f.page.Groups, func(o redisscripts.FinishGroup) bool {
			return o.Queue == g.Queue && o.Ledger == g.Ledger && o.Score == g.Score && o.DomainMaxPages == g.DomainMaxPages &&
				o.DomainMaxPageKey == g.DomainMaxPageKey
		})
		if i < 0 {
			f.page.Groups = append(f.page.Groups, g)
			i = len(f.page.Groups) - 1
		}
		f.page.Groups[i].Requests = append(f.page.Groups[i].Requests, redisscripts.FinishRequest{Fingerprint: fingerprint.Of(r.URL), Member: string(member)})
		f.n++
	}
	return f
}

// enqueued is what the finish script did with f (its page's result),
// counted in f.out; the queues it queued to are known to this scheduler
// from now on.
func (s *Scheduler) enqueued(f *followUps, res redisscripts.PageResult) (Enqueued, error) {
	out := f.out
	switch res.Status {
	case redisscripts.PageBlacklisted:
		out.refuse(ledger.RefusedCrawlBlacklisted, f.n)
		return out, nil
	case redisscripts.PageQueued:
	default:
		return out, fmt.Errorf("queue follow-up requests: unexpected answer %v", res)
	}
	known := map[string]bool{} // queues this scheduler was told of
	for i, g := range f.page.Groups {
		r := res.Groups[i]
		out.Queued += r.Queued
		out.refuse(ledger.RefusedDuplicate, r.Duplicates)
		out.refuse(ledger.RefusedPageLimit, r.Limited)
		if r.Queued > 0 && !known[g.Queue] && strings.HasPrefix(g.Queue, s.cfg.SpiderID+":") {
			known[g.Queue] = true
			s.addDomain(g.Queue)
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
