package scheduler

import (
	"context"
	"fmt"
	"maps"
	"slices"

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
	// The parent's domain names the keys of its page on a Redis Cluster.
	domain, err := rediskeys.DomainOfURL(parent.URL)
	if err != nil && s.cfg.Layout.IsCluster() {
		return Enqueued{}, fmt.Errorf("queue follow-up requests of %q: %w", parent.URL, err)
	}
	f := s.followUps(parent, domain, reqs, refused)
	if f.empty() {
		return f.out, nil
	}
	if s.cfg.Layout.IsCluster() {
		return s.enqueueCluster(ctx, f)
	}
	owners, records := s.leases.Keys()
	fin := newFinish(s.cfg, owners, records, s.now())
	fin.Pages = []redisscripts.FinishPage{f.page}
	res, err := fin.Run(s.cfg.Wait.Context(ctx), s.rdb)
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
	// domain is the page's; domains[g] is page.Groups[g]'s. On a Redis
	// Cluster the page is split by domain (domainPages); the refusals
	// made before the script are counted in the page's domain.
	domain, crawlID string
	domains         []string
	// blacklist is the crawl blacklist, which page.Blacklist names with
	// one Redis; on a Redis Cluster it is read before the scripts.
	blacklist string
}

func (f *followUps) empty() bool { return f.n == 0 && len(f.page.Refused) == 0 }

// followUps checks and encodes a page's follow-up requests: refused now
// are those of an expired crawl, of a domain the domain config blacklists
// (without SCHEDULER_BACKLOG_BLACKLIST) and those whose URL has no domain.
//
// domain is parent's (the item's), which names its page's keys on a
// Redis Cluster.
func (s *Scheduler) followUps(parent *crawlrequest.Request, domain string, reqs []*crawlrequest.Request, refused map[ledger.Reason]int) *followUps {
	dupes, meta := s.cfg.dupeFilter(domain, parent.CrawlID)
	f := &followUps{page: redisscripts.FinishPage{Blacklist: rediskeys.BlacklistKey(s.cfg.SpiderID),
		Crawl: parent.AppID + "||" + parent.CrawlID, DupeFilter: dupes, DupeFilterMeta: meta,
		Fingerprint: fingerprint.Of(parent.URL)}, domain: domain, crawlID: parent.CrawlID,
		blacklist: rediskeys.BlacklistKey(s.cfg.SpiderID)}
	layout := s.cfg.Layout
	if layout.IsCluster() {
		f.page.Blacklist = "" // in another slot: read before the scripts
	}
	ledgers := ledger.Ledgers{Layout: layout} // a page's requests are mostly of its crawl
	refuse := func(c ledger.Crawl, r ledger.Reason, n int) {
		if n > 0 {
			f.page.Refused = append(f.page.Refused, redisscripts.FinishRefusal{Ledger: ledgers.In(c, domain), Reason: string(r), N: n})
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
		g := redisscripts.FinishGroup{Queue: layout.QueueFor(r.SpiderID, dom, r.Rendered()), Channel: rediskeys.QueueChannel(r.SpiderID),
			Ledger: ledgers.In(s.crawlOf(r), dom), Score: r.Score(), DomainMaxPages: r.DomainMaxPages}
		if r.DomainMaxPages > 0 || s.cfg.GlobalPageLimit > 0 {
			g.DomainMaxPageKey = layout.DomainMaxPage(s.cfg.SpiderID, dom, r.CrawlID)
			g.GlobalPageKey = layout.GlobalPageCount(s.cfg.SpiderID, dom, r.CrawlID)
		}
		i := slices.IndexFunc(f.page.Groups, func(o redisscripts.FinishGroup) bool {
			return o.Queue == g.Queue && o.Ledger == g.Ledger && o.Score == g.Score && o.DomainMaxPages == g.DomainMaxPages &&
				o.DomainMaxPageKey == g.DomainMaxPageKey
		})
		if i < 0 {
			f.page.Groups = append(f.page.Groups, g)
			f.domains = append(f.domains, dom)
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
		if r.Queued > 0 && !known[g.Queue] { // addDomain takes only this spider's
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
