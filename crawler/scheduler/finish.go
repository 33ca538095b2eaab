package scheduler

import (
	"context"
	_ "embed"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/fingerprint"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
)

//go:embed finish.lua
var finishSource string

// finishScript ends leases and queues follow-up requests (finish.lua).
var finishScript = redis.NewScript(ledger.LuaNewWork + finishSource)

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
	acks     []any // per acknowledgement: id, owner, tally, again
	pages    []any
	limits   map[string]int // limit pair key number by domain max page key
	groups   []int          // each page's number of groups
}

func (b *finishBatch) nacks() int { return len(b.acks) / 4 }

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
// an earlier send of it failed (it may have reached Redis). It returns the
// acknowledgement's number.
func (b *finishBatch) ack(id, owner string, tally *ledger.Tally, again bool) int {
	o := slices.Index(b.owners, owner) + 1
	if o == 0 {
		b.owners = append(b.owners, owner)
		o = len(b.owners)
	}
	sentAgain := "0"
	if again {
		sentAgain = "1"
	}
	b.acks = append(b.acks, id, o, b.tally(tally), sentAgain)
	return b.nacks()
}

// tally is the number of t among the batch's distinct tallies (0: t counts
// nothing); the pages of a crawl mostly end alike.
func (b *finishBatch) tally(t *ledger.Tally) int {
	var triples []any
	var parts []string // Each iterates in no set order: the signature sorts the counts
	t.Each(func(c ledger.Crawl, field string, n int64) {
		triples = append(triples, c, field, n)
		parts = append(parts, c.SpiderID+"\x00"+c.AppID+"\x00"+c.CrawlID+"\x00"+field+"\x00"+strconv.FormatInt(n, 10))
	})
	if len(triples) == 0 {
		return 0
	}
	slices.Sort(parts)
	sig := strings.Join(parts, "\x01")
	if n, ok := b.tallyNum[sig]; ok {
		return n
	}
	for i := 0; i < len(triples); i += 3 {
		triples[i] = b.ledger(triples[i].(ledger.Crawl))
	}
	b.tallies = append(b.tallies, triples)
	if b.tallyNum == nil {
		b.tallyNum = map[string]int{}
	}
	b.tallyNum[sig] = len(b.tallies)
	return len(b.tallies)
}

// page adds f's follow-ups, queued only when acknowledgement ack (0: none)
// ends its lease now.
func (b *finishBatch) page(f *followUps, ack int) {
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

// run runs the batch at now; owners and records are the leases' keys
// (throttle.Leases.Keys).
func (b *finishBatch) run(ctx context.Context, rdb redis.Scripter, now time.Time, cfg Config, owners, records string) (finished, error) {
	keys := append([]string{owners, records}, b.keys...)
	args := make([]any, 0, 12+2*len(b.ledgers)+len(b.channels)+len(b.owners)+4*len(b.tallies)+len(b.acks)+len(b.pages))
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
	args = append(args, b.nacks())
	args = append(args, b.acks...)
	args = append(args, len(b.groups))
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
	for _, groups := range b.groups {
		if len(rest) == 0 {
			return finished{}, fmt.Errorf("finish: unexpected answer %v", res)
		}
		n := 1
		if rest[0] == 1 {
			n += 3 * groups
		}
		if len(rest) < n {
			return finished{}, fmt.Errorf("finish: unexpected answer %v", res)
		}
		out.pages = append(out.pages, rest[:n])
		rest = rest[n:]
	}
	return out, nil
}
