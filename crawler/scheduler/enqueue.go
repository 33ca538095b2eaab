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

//go:embed finish.lua
var finishSource string

// finishScript ends leases and queues follow-up requests (finish.lua).
var finishScript = redis.NewScript(ledger.LuaNewWork + finishSource)

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
	res, err := b.run(ctx, s.rdb, s.now(), s.cfg)
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
	queues                []string // of the groups, each once, in their order
	n                     int      // requests in the groups
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
			if !slices.Contains(f.queues, g.queue) {
				f.queues = append(f.queues, g.queue)
			}
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

// finishBatch is one run of the finish script: acknowledgements and pages,
// with the keys, ledgers, channels, owners and tallies they name, each
// listed once.
type finishBatch struct {
	keys     []string // KEYS from the third on
	keyNum   map[string]int
	ledgers  []ledger.Crawl
	ledgerAt []int // each ledger's first key number
	channels []string
	owners   []string
	tallies  [][]any // each distinct tally's triples
	tallyNum map[string]int
	acks     [2][]any // sent for the first time, sent again: id, owner, tally
	pages    []any
	npages   int
	limits   map[string]int // limit pair key number by domain max page key
	groups   []int          // each page's number of groups
}

func (b *finishBatch) pageGroups() []int { return b.groups }

func (b *finishBatch) nacks() int { return (len(b.acks[0]) + len(b.acks[1])) / 3 }

// key is the number of k in KEYS.
func (b *finishBatch) key(k string) int {
	if n, ok := b.keyNum[k]; ok {
		return n
	}
	if b.keyNum == nil {
		b.keyNum = map[string]int{}
	}
	b.keys = append(b.keys, k)
	b.keyNum[k] = len(b.keys) + 2
	return len(b.keys) + 2
}

// ledger is the number of c's ledger, its keys listed.
func (b *finishBatch) ledger(c ledger.Crawl) int {
	if i := slices.Index(b.ledgers, c); i >= 0 {
		return i + 1
	}
	b.ledgers = append(b.ledgers, c)
	b.ledgerAt = append(b.ledgerAt, len(b.keys)+3)
	b.keys = append(b.keys, ledger.NewWorkKeys(c)...) // four in a row
	return len(b.ledgers)
}

func (b *finishBatch) channel(c string) int {
	if i := slices.Index(b.channels, c); i >= 0 {
		return i + 1
	}
	b.channels = append(b.channels, c)
	return len(b.channels)
}

// limitPair is the number of a page limit's domain max page counter, its
// global page counter listed right after it.
func (b *finishBatch) limitPair(dmaxKey, globalKey string) int {
	if n, ok := b.limits[dmaxKey]; ok {
		return n
	}
	if b.limits == nil {
		b.limits = map[string]int{}
	}
	b.keys = append(b.keys, dmaxKey, globalKey)
	b.limits[dmaxKey] = len(b.keys) + 1
	return len(b.keys) + 1
}

// ack adds the end of lease id (of owner) with tally's counts; again says
// an earlier send of it failed (it may have reached Redis). Acknowledgements
// are numbered first all those sent for the first time, then the others;
// ack returns its place among its kind, for numberAck.
func (b *finishBatch) ack(id, owner string, tally *ledger.Tally, again bool) int {
	o := slices.Index(b.owners, owner) + 1
	if o == 0 {
		b.owners = append(b.owners, owner)
		o = len(b.owners)
	}
	kind := 0
	if again {
		kind = 1
	}
	b.acks[kind] = append(b.acks[kind], id, o, b.tally(tally))
	return len(b.acks[kind]) / 3
}

// numberAck is the number, in the script, of the n-th acknowledgement of
// its kind.
func (b *finishBatch) numberAck(n int, again bool) int {
	if again {
		return len(b.acks[0])/3 + n
	}
	return n
}

// tally is the number of t among the batch's distinct tallies (0: t counts
// nothing); the pages of a crawl mostly end alike.
func (b *finishBatch) tally(t *ledger.Tally) int {
	var triples []any
	var sig strings.Builder
	t.Each(func(c ledger.Crawl, field string, n int64) {
		triples = append(triples, c, field, n)
	})
	if len(triples) == 0 {
		return 0
	}
	// Each iterates in no set order: the signature sorts the counts.
	parts := make([]string, 0, len(triples)/3)
	for i := 0; i < len(triples); i += 3 {
		c := triples[i].(ledger.Crawl)
		parts = append(parts, c.Member()+"\x00"+triples[i+1].(string)+"\x00"+strconv.FormatInt(triples[i+2].(int64), 10))
	}
	slices.Sort(parts)
	for _, p := range parts {
		sig.WriteString(p)
		sig.WriteByte('\x01')
	}
	if n, ok := b.tallyNum[sig.String()]; ok {
		return n
	}
	for i := 0; i < len(triples); i += 3 {
		triples[i] = b.ledger(triples[i].(ledger.Crawl))
	}
	b.tallies = append(b.tallies, triples)
	if b.tallyNum == nil {
		b.tallyNum = map[string]int{}
	}
	b.tallyNum[sig.String()] = len(b.tallies)
	return len(b.tallies)
}

// page adds f's follow-ups, queued only when acknowledgement ack (0: none)
// ends its lease now.
func (b *finishBatch) page(f *followUps, ack int) {
	b.npages++
	b.groups = append(b.groups, len(f.groups))
	p := f.parent
	b.pages = append(b.pages, ack, b.key(f.blacklistKey), p.AppID+"||"+p.CrawlID, b.key(f.dupeKey), fingerprint.Of(p.URL), len(f.refusals))
	for _, r := range f.refusals {
		b.pages = append(b.pages, b.ledger(r.crawl), string(r.reason), r.n)
	}
	b.pages = append(b.pages, len(f.groups))
	for _, g := range f.groups {
		limits := 0
		if g.dmaxKey != "" {
			limits = b.limitPair(g.dmaxKey, g.globalKey)
		}
		b.pages = append(b.pages, b.key(g.queue), b.channel(g.channel), b.ledger(g.crawl), g.score, g.dmax, limits, len(g.reqs)/2)
		for _, v := range g.reqs {
			b.pages = append(b.pages, v)
		}
	}
}

// finished is what one run of the finish script did: per acknowledgement
// its state (finishedNow, finishedLost, finishedBefore), per page its
// result (see finish.lua).
type finished struct {
	acks  []int64
	pages [][]int64
}

// What became of an acknowledgement's lease.
const (
	finishedNow    = 0 // ended now
	finishedLost   = 1 // reaped before: its request is queued again
	finishedBefore = 2 // ended by an earlier run of the same batch
)

// run runs the batch, the leases' keys those of leases (nil without
// acknowledgements), at now.
func (b *finishBatch) run(ctx context.Context, rdb redis.Scripter, now time.Time, cfg Config, leaseKeys ...string) (finished, error) {
	owners, records := "", ""
	if len(leaseKeys) == 2 {
		owners, records = leaseKeys[0], leaseKeys[1]
	} else if b.nacks() > 0 {
		return finished{}, fmt.Errorf("acknowledgements without their lease keys")
	}
	if owners == "" {
		// Unused without acknowledgements, but every key is declared.
		owners, records = rediskeys.LeaseKey(cfg.SpiderID)+":owners", rediskeys.LeaseKey(cfg.SpiderID)+":items"
	}
	keys := append([]string{owners, records}, b.keys...)
	args := make([]any, 0, 12+2*len(b.ledgers)+len(b.channels)+len(b.owners)+4*len(b.tallies)+len(b.acks[0])+len(b.acks[1])+len(b.pages))
	args = append(args, ledger.Stamp(now), seconds(cfg.ledgerTTL()), seconds(cfg.DupeTimeout), seconds(cfg.DomainMaxPageTimeout),
		cfg.GlobalPageLimit, seconds(cfg.GlobalPageTimeout), len(b.ledgers))
	for i, c := range b.ledgers {
		args = append(args, b.ledgerAt[i], c.Member())
	}
	args = append(args, len(b.channels))
	for _, c := range b.channels {
		args = append(args, c)
	}
	args = append(args, len(b.owners))
	for _, o := range b.owners {
		args = append(args, o)
	}
	args = append(args, len(b.tallies))
	for _, t := range b.tallies {
		args = append(args, len(t)/3)
		args = append(args, t...)
	}
	for _, acks := range b.acks {
		args = append(args, len(acks)/3)
		args = append(args, acks...)
	}
	args = append(args, b.npages)
	args = append(args, b.pages...)
	res, err := finishScript.Run(ctx, rdb, keys, args...).Int64Slice()
	if err != nil {
		return finished{}, err
	}
	if len(res) < b.nacks() {
		return finished{}, fmt.Errorf("finish: unexpected answer %v", res)
	}
	out := finished{acks: res[:b.nacks()]}
	rest := res[b.nacks():]
	// A page's result is its flag, then per group three counts when the
	// flag is 1; the groups are known from the arguments.
	groups := b.pageGroups()
	for p := 0; p < b.npages; p++ {
		if len(rest) == 0 {
			return finished{}, fmt.Errorf("finish: unexpected answer %v", res)
		}
		n := 1
		if rest[0] == 1 {
			n += 3 * groups[p]
		}
		if len(rest) < n {
			return finished{}, fmt.Errorf("finish: unexpected answer %v", res)
		}
		out.pages = append(out.pages, rest[:n])
		rest = rest[n:]
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
