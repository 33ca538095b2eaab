package scheduler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisconn"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisscripts"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/throttle"
)

// On a Redis Cluster (docs/redis-cluster.md) every atomic step touches the
// keys of one slot, and a domain's keys share one (rediskeys.Layout):
//   - each domain has its own lease set, cluster:{<domain>}:leases:<spiderid>
//     (:owners, :items), so that a pop leases its items in the queue's
//     slot; this crawler has an owner in each set it popped from, renewed
//     while it holds leases there (or popped there lately), and reapers
//     find every domain's set by scanning every master;
//   - an acknowledgement ends its lease, counts what became of its request
//     in its crawl's share of the request's domain, and queues the page's
//     follow-ups for that same domain, in one step; the follow-ups for
//     other domains are queued (counted in their domains' shares) before
//     it, one run of the finish script per slot; the runs of a step are
//     sent as one run of finish_node.lua per master (the runs of every
//     slot it serves, one after the other in one script), falling back to
//     one run per slot when a master refuses it (a slot moved); every
//     run of a batch in one pipeline. When the lease turns out reaped, those are
//     queued all the same: the crawl of the request again finds them in
//     the duplicate filter (and counts them refused as duplicates), so a
//     page's links are never lost between the two steps, at the cost of
//     over-counting duplicates in that rare case;
//   - the crawl blacklist (<spiderid>:blacklist, the one Redis's key) is in
//     another slot: it is read before the scripts, not in them.

// leaseSet is a domain's lease set and when this crawler last popped
// from it.
type leaseSet struct {
	leases *throttle.Leases
	used   time.Time
}

// leasesOf is the lease set of domain's requests: the spider's one with
// one Redis; on a Redis Cluster the domain's own (made on first use).
func (s *Scheduler) leasesOf(domain string) *throttle.Leases {
	if s.leases != nil {
		return s.leases
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ls, ok := s.leaseSets[domain]
	if !ok {
		// NewLeases fails only for a TTL under a second: validate refuses it.
		l, _ := throttle.NewLeases(s.rdb, s.cfg.Layout.Leases(s.cfg.SpiderID, domain), s.cfg.LeaseTTL)
		ls = &leaseSet{leases: l}
		s.leaseSets[domain] = ls
	}
	ls.used = s.now()
	return ls.leases
}

// LeasesOf is the lease set of domain's requests (for tests and tools):
// Leases with one Redis, the domain's own on a Redis Cluster.
func (s *Scheduler) LeasesOf(domain string) *throttle.Leases { return s.leasesOf(domain) }

// leasesToRenew are the lease sets whose owner renewals keep alive: with
// one Redis the one set; on a Redis Cluster every set holding a lease of
// this crawler or popped from within two lease TTLs (a pop may be leasing
// an item now). The owner of a set unused for longer expires with no
// lease in it (a pop there later finds it reaped and goes on under a new
// owner); the set is forgotten with its domain (whose last failed pop may
// hold a lease of it), and made again by a later pop.
func (s *Scheduler) leasesToRenew() []*throttle.Leases {
	if s.leases != nil {
		return []*throttle.Leases{s.leases}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	holding := map[*throttle.Leases]bool{}
	for _, it := range s.inflight {
		holding[it.leases] = true
	}
	known := map[string]bool{}
	for _, d := range s.domains {
		known[d.name] = true
	}
	recent := s.now().Add(-2 * s.cfg.LeaseTTL)
	var out []*throttle.Leases
	for domain, ls := range s.leaseSets {
		switch {
		case holding[ls.leases] || ls.used.After(recent):
			out = append(out, ls.leases)
		case !known[domain]:
			delete(s.leaseSets, domain)
		}
	}
	return out
}

// reap puts the leases of owners past their deadline back in their queues,
// up to max owners per lease set, and says how many requests it returned:
// with one Redis from the spider's one set, on a Redis Cluster from every
// domain's set found on every master.
func (s *Scheduler) reap(ctx context.Context, max int) (int, error) {
	if s.leases != nil {
		return s.leases.Reap(ctx, max)
	}
	var bases []string
	var mu sync.Mutex // fn runs on every master at once
	err := redisconn.ScanMasters(ctx, s.rdb, s.cfg.Layout.LeasesPattern(s.cfg.SpiderID), 1000, func(keys []string) {
		mu.Lock()
		defer mu.Unlock()
		for _, k := range keys {
			if base, ok := s.cfg.Layout.ParseLeasesOwners(k); ok {
				bases = append(bases, base)
			}
		}
	})
	var errs []error
	if err != nil {
		errs = append(errs, fmt.Errorf("find lease sets: %w", err))
	}
	// Every set's reap (throttle.Leases.Reap's two scripts: the owners past
	// their deadline, the leases of the earlier form) in one pipeline: one
	// round trip to each master, the masters at once, rather than two per
	// domain, one after the other (each a wake-up of its master, whatever
	// it carries).
	runs := make([]redisscripts.Args, 0, 2*len(bases))
	for _, base := range bases {
		l, lerr := throttle.NewLeases(s.rdb, base, s.cfg.LeaseTTL)
		if lerr != nil {
			return 0, lerr
		}
		owners, records := l.Keys()
		runs = append(runs, redisscripts.LeaseReap{Owners: owners, Records: records, Max: max},
			redisscripts.LeaseRestore{Legacy: base, Records: records, Max: max})
	}
	total := 0
	for i, cmd := range redisscripts.RunPipelined(ctx, s.rdb, runs) {
		n, rerr := cmd.Int()
		total += n
		if rerr != nil {
			errs = append(errs, fmt.Errorf("reap leases of %s: %w", bases[i/2], rerr))
		}
	}
	return total, errors.Join(errs...)
}

// clusterUpkeep is upkeepClient on a Redis Cluster: a cluster client of
// c's seeds with maxRenewals connections to each master, the renewal
// script loaded on every master, and the reap's two: renewals and reaps
// each go in one pipeline (renew, reap), where a script a master does not
// know is sent whole for every set it serves, not once.
func (s *Scheduler) clusterUpkeep(ctx context.Context, c *redis.ClusterClient) redis.UniversalClient {
	opt := *c.Options()
	opt.PoolSize, opt.MaxActiveConns, opt.MinIdleConns, opt.MaxIdleConns = maxRenewals, maxRenewals, 0, maxRenewals
	opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	upkeep := redis.NewClusterClient(&opt)
	wctx, cancel := context.WithTimeout(ctx, upkeepWarmUp)
	defer cancel()
	if err := redisscripts.Load(wctx, upkeep, redisscripts.LeaseOwner{}, redisscripts.LeaseReap{}, redisscripts.LeaseRestore{}); err != nil && ctx.Err() == nil {
		s.log.Warning("Could not prepare the lease renewals' connections yet; renewals will open them", logfactory.Extra{"error": err.Error()})
	}
	return upkeep
}

// domainPage is the part of a page's follow-ups for one domain on a Redis
// Cluster: a page of the finish script whose keys are in the domain's
// slot, with groups, the page's groups it holds (their indices).
type domainPage struct {
	domain string
	page   redisscripts.FinishPage
	groups []int
}

// domainPages splits f's page by domain: the page's own domain first,
// with its fingerprint and the refusals made before the script, then one
// page per other domain, in the order of their first group. A page of a
// blacklisted crawl queues nothing: each group is refused as
// crawl_blacklisted in its domain's share.
func (b *ackBatcher) domainPages(f *followUps, blacklisted bool) []domainPage {
	own := f.page
	own.Groups, own.Refused = nil, slices.Clone(f.page.Refused)
	pages := []domainPage{{domain: f.domain, page: own}}
	at := map[string]int{f.domain: 0}
	for g, grp := range f.page.Groups {
		d := f.domains[g]
		i, ok := at[d]
		if !ok {
			dupes, meta := b.cfg.dupeFilter(d, f.crawlID)
			i = len(pages)
			at[d] = i
			pages = append(pages, domainPage{domain: d, page: redisscripts.FinishPage{Crawl: f.page.Crawl, DupeFilter: dupes, DupeFilterMeta: meta}})
		}
		p := &pages[i]
		if blacklisted {
			p.page.Refused = append(p.page.Refused, redisscripts.FinishRefusal{Ledger: grp.Ledger,
				Reason: string(ledger.RefusedCrawlBlacklisted), N: len(grp.Requests)})
			continue
		}
		p.page.Groups = append(p.page.Groups, grp)
		p.groups = append(p.groups, g)
	}
	return pages
}

// mergePages is f's page result from its domain pages' results: a
// blacklisted crawl's, or each group's from its domain's page.
func mergePages(f *followUps, pages []domainPage, results []redisscripts.PageResult, blacklisted bool) redisscripts.PageResult {
	if blacklisted {
		return redisscripts.PageResult{Status: redisscripts.PageBlacklisted}
	}
	out := redisscripts.PageResult{Status: redisscripts.PageQueued, Groups: make([]redisscripts.GroupResult, len(f.page.Groups))}
	for i, p := range pages {
		if results[i].Status != redisscripts.PageQueued {
			continue
		}
		for j, g := range p.groups {
			out.Groups[g] = results[i].Groups[j]
		}
	}
	return out
}

// blacklisted reads which of the crawls of pages ("<appid>||<crawlid>")
// the crawl blacklist holds, in one round trip.
func (b *ackBatcher) blacklisted(ctx context.Context, pages []*followUps) (map[string]bool, error) {
	pipe := b.rdb.Pipeline()
	cmds := map[string]*redis.BoolCmd{}
	for _, f := range pages {
		if f == nil || f.empty() {
			continue
		}
		if _, ok := cmds[f.page.Crawl]; !ok {
			cmds[f.page.Crawl] = pipe.SIsMember(ctx, f.blacklist, f.page.Crawl)
		}
	}
	if len(cmds) == 0 {
		return nil, nil
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("read the crawl blacklist: %w", err)
	}
	out := map[string]bool{}
	for crawl, c := range cmds {
		out[crawl] = c.Val()
	}
	return out, nil
}

// pageRuns puts domain pages into runs of the finish script, one per
// slot, each with the lease keys of its first domain's set (unused by a
// run without acknowledgements, but in its slot); at[i][j] is where page
// j of pages[i] is: its run and its place among the run's pages.
func (b *ackBatcher) pageRuns(pages [][]domainPage, now time.Time) (runs []*redisscripts.Finish, at [][][2]int) {
	bySlot := map[int]int{}
	at = make([][][2]int, len(pages))
	for i, ps := range pages {
		at[i] = make([][2]int, len(ps))
		for j, p := range ps {
			slot := rediskeys.Slot(rediskeys.DomainTag(p.domain))
			r, ok := bySlot[slot]
			if !ok {
				base := b.cfg.Layout.Leases(b.cfg.SpiderID, p.domain)
				r = len(runs)
				bySlot[slot] = r
				runs = append(runs, newFinish(b.cfg, base+":owners", base+":items", now))
			}
			at[i][j] = [2]int{r, len(runs[r].Pages)}
			runs[r].Pages = append(runs[r].Pages, p.page)
		}
	}
	return runs, at
}

// runByNode runs runs, each in one slot, with one run per master
// (redisscripts.RunByNode: one run of finish_node.lua for the runs of
// every slot a master serves; a node that refuses it, its slot map stale,
// falls back to one run per slot), or, on a client that is not a cluster
// client or once a master could not run finish_node.lua (Redis before
// 7), one run per slot (redisscripts.RunAll).
func (b *ackBatcher) runByNode(ctx context.Context, runs []*redisscripts.Finish) ([]redisscripts.FinishResult, []error) {
	ctx = b.cfg.Wait.Context(ctx)
	cc, err := redisconn.ClusterClient(b.rdb)
	if err != nil || b.perSlot.Load() {
		return redisscripts.RunAll(ctx, b.rdb, runs)
	}
	res, errs, fb := redisscripts.RunByNode(ctx, cc, runs)
	if fb.Unsupported {
		b.perSlot.Store(true)
	}
	return res, errs
}

// enqueueCluster is Enqueue on a Redis Cluster: f's domain pages, one run
// per slot, in one pipeline per master (one run per master).
func (s *Scheduler) enqueueCluster(ctx context.Context, f *followUps) (Enqueued, error) {
	bl, err := s.acks.blacklisted(ctx, []*followUps{f})
	if err != nil {
		return f.out, fmt.Errorf("queue follow-up requests: %w", err)
	}
	pages := s.acks.domainPages(f, bl[f.page.Crawl])
	runs, at := s.acks.pageRuns([][]domainPage{pages}, s.now())
	res, errs := s.acks.runByNode(ctx, runs)
	results := make([]redisscripts.PageResult, len(pages))
	for j, a := range at[0] {
		if errs[a[0]] != nil {
			return f.out, fmt.Errorf("queue follow-up requests: %w", errs[a[0]])
		}
		results[j] = res[a[0]].Pages[a[1]]
	}
	return s.enqueued(f, mergePages(f, pages, results, bl[f.page.Crawl]))
}

// sendCluster is send on a Redis Cluster: the crawl blacklist read for
// the batch's pages, then their follow-ups for domains other than their
// requests' queued (one run per slot), then the acknowledgements, one run
// per lease set with the follow-ups of that set's domain; each set of
// runs in one pipeline per master. An acknowledgement whose other
// follow-ups failed is not sent: its caller is told the error, and its
// lease stays, to be acknowledged again.
func (b *ackBatcher) sendCluster(ctx context.Context, batch []ackRequest) {
	follows := make([]*followUps, len(batch))
	for i, r := range batch {
		follows[i] = r.follow
	}
	bl, err := b.blacklisted(ctx, follows)
	if err != nil {
		for _, r := range batch {
			r.done <- ackResult{err: err}
		}
		return
	}
	now := b.now()
	pages := make([][]domainPage, len(batch))
	others := make([][]domainPage, len(batch))
	for i, r := range batch {
		if r.follow != nil && !r.follow.empty() {
			pages[i] = b.domainPages(r.follow, bl[r.follow.page.Crawl])
			others[i] = pages[i][1:]
		}
	}
	runs, at := b.pageRuns(others, now)
	res, errs := b.runByNode(ctx, runs)
	results := make([][]redisscripts.PageResult, len(batch))
	failed := make([]error, len(batch))
	for i := range batch {
		results[i] = make([]redisscripts.PageResult, len(pages[i]))
		for j, a := range at[i] {
			if errs[a[0]] != nil {
				failed[i] = errs[a[0]]
				break
			}
			results[i][j+1] = res[a[0]].Pages[a[1]]
		}
	}
	b.sendClusterAcks(ctx, batch, pages, results, failed, bl, now)
}

// sendClusterAcks is sendCluster's second step: the acknowledgements not
// failed, one run per lease set, each with its page's own domain page.
func (b *ackBatcher) sendClusterAcks(ctx context.Context, batch []ackRequest, pages [][]domainPage, results [][]redisscripts.PageResult,
	failed []error, bl map[string]bool, now time.Time) {
	ledgers := ledger.Ledgers{Layout: b.cfg.Layout}
	bySet := map[*throttle.Leases]int{}
	var runs []*redisscripts.Finish
	var members [][]int // per run, its acknowledgements' places in batch
	for i, r := range batch {
		if failed[i] != nil {
			r.done <- ackResult{err: failed[i]}
			continue
		}
		n, ok := bySet[r.leases]
		if !ok {
			owners, records := r.leases.Keys()
			n = len(runs)
			bySet[r.leases] = n
			runs = append(runs, newFinish(b.cfg, owners, records, now))
			members = append(members, nil)
		}
		a := redisscripts.FinishAck{LeaseID: r.id, Owner: throttle.OwnerOf(r.id), Counts: r.tally.CountsIn(&ledgers, r.domain), Again: r.again}
		if len(pages[i]) > 0 {
			a.Page = &pages[i][0].page
		}
		runs[n].Acks = append(runs[n].Acks, a)
		members[n] = append(members[n], i)
	}
	res, errs := b.runByNode(ctx, runs)
	for n, run := range runs {
		sub := make([]ackRequest, len(members[n]))
		for k, i := range members[n] {
			sub[k] = batch[i]
		}
		if errs[n] != nil {
			for _, r := range sub {
				r.done <- ackResult{err: errs[n]}
			}
			continue
		}
		// Each acknowledgement's page result: its own domain's, merged
		// with the other domains' queued before.
		for k, i := range members[n] {
			if run.Acks[k].Page == nil || res[n].Acks[k].Page.Status == redisscripts.PageNotFollowed {
				continue
			}
			results[i][0] = res[n].Acks[k].Page
			f := batch[i].follow
			res[n].Acks[k].Page = mergePages(f, pages[i], results[i], bl[f.page.Crawl])
		}
		b.answer(sub, run, res[n])
	}
}

// clearCluster is Clear on a Redis Cluster: the spider's keys found on
// every master, each deleted on its own (they are in many slots).
func (s *Scheduler) clearCluster(ctx context.Context) error {
	var errs []error
	var found []string
	var mu sync.Mutex // fn runs on every master at once
	for _, pattern := range s.cfg.Layout.SpiderPatterns(s.cfg.SpiderID) {
		err := redisconn.ScanMasters(ctx, s.rdb, pattern, 1000, func(keys []string) {
			mu.Lock()
			defer mu.Unlock()
			found = append(found, keys...)
		})
		if err != nil {
			errs = append(errs, err)
		}
	}
	for _, k := range found {
		if err := s.rdb.Del(ctx, k).Err(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
