package redisscripts

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Finish is finish.lua's keys and arguments: a crawler's acknowledgements,
// each ending a lease with what became of its request and queueing its
// page's follow-up requests when the lease ends now, and pages followed
// without a lease (Pages).
//
// The batch goes to Redis as one JSON object (finish.lua's header shows
// it), its keys, ledgers and tallies each listed once and its
// acknowledgements grouped by owner and tally, and the requests'
// fingerprints and members as plain arguments after it: Redis decodes a
// few hundred bytes of JSON per batch and never a member, and does no more
// work per page than with the positional arguments this replaced (the
// figures are in BenchmarkFinish's doc). Its strings are
// JSON strings: bytes that are not UTF-8 would become U+FFFD, as in every
// request field decoded from JSON already; keys and members are sent as
// they are.
type Finish struct {
	// LeaseOwners and LeaseRecords are the leases' keys (throttle.Leases.Keys).
	LeaseOwners, LeaseRecords string
	// Stamp is now, ledger.Stamp.
	Stamp string
	// The expiries of the ledgers (LEDGER_TTL), the duplicate filter
	// (DUPEFILTER_TIMEOUT) and the page limit counters
	// (DOMAIN_MAX_PAGE_TIMEOUT, GLOBAL_PAGE_PER_DOMAIN_LIMIT_TIMEOUT),
	// rounded up to whole seconds.
	LedgerTTL, DupeFilterTTL, DomainMaxPageTTL, GlobalPageTTL time.Duration
	// GlobalPageLimit is GLOBAL_PAGE_PER_DOMAIN_LIMIT (0: none).
	GlobalPageLimit int
	// BloomRate and BloomCapacity are DUPEFILTER_ERROR_RATE and
	// DUPEFILTER_CAPACITY: a compact duplicate filter (a page's
	// DupeFilterMeta) made by this batch keeps them.
	BloomRate     float64
	BloomCapacity int
	Acks          []FinishAck
	Pages         []FinishPage
}

// FinishAck is the end of one lease.
type FinishAck struct {
	// LeaseID is the lease, of Owner (throttle.OwnerOf).
	LeaseID, Owner string
	// Counts are what became of its request (ledger.Tally.Counts).
	Counts []LedgerCount
	// Again says an earlier send of it failed: it may have reached Redis.
	Again bool
	// Page is its page's follow-ups (nil: none), queued only when the
	// lease ends now.
	Page *FinishPage
}

// LedgerCount is a count in a crawl's ledger.
type LedgerCount struct {
	Ledger Ledger
	Field  string
	N      int64
}

// FinishPage is the follow-up requests of one page.
type FinishPage struct {
	// Blacklist is the spider's crawl blacklist, which holds Crawl,
	// "<appid>||<crawlid>", when the crawl was stopped ("": not checked
	// by the script; on a Redis Cluster the caller reads it before).
	Blacklist, Crawl string
	// DupeFilter is the crawl's duplicate filter; Fingerprint is the
	// page's own ("": none).
	DupeFilter, Fingerprint string
	// DupeFilterMeta is, for a compact duplicate filter (DUPEFILTER_MODE
	// bloom), its hash of sizes and counts, DupeFilter then being its
	// bits; "" when DupeFilter is the set of fingerprints.
	DupeFilterMeta string
	// Refused are the requests left out before the script.
	Refused []FinishRefusal
	Groups  []FinishGroup
}

// FinishRefusal is N requests of a crawl refused for Reason.
type FinishRefusal struct {
	Ledger Ledger
	Reason string
	N      int
}

// FinishGroup is requests of one queue, one crawl and one score.
type FinishGroup struct {
	// Queue is announced on Channel when the script creates it.
	Queue, Channel string
	Ledger         Ledger
	Score          float64
	// DomainMaxPages is their domain_max_pages (0: none).
	DomainMaxPages int
	// DomainMaxPageKey and GlobalPageKey are the page limit counters, ""
	// without limits.
	DomainMaxPageKey, GlobalPageKey string
	Requests                        []FinishRequest
}

// FinishRequest is one request to queue: its fingerprint in the duplicate
// filter and its member in the queue.
type FinishRequest struct{ Fingerprint, Member string }

// FinishResult is what one run of finish.lua did: per acknowledgement and
// per page of Pages.
type FinishResult struct {
	Acks  []AckResult
	Pages []PageResult
}

// AckResult is what became of an acknowledgement and its page.
type AckResult struct {
	State AckState
	// Page is its page's result when it had one.
	Page PageResult
}

// AckState is what became of an acknowledgement's lease.
type AckState int

// The acknowledgement states.
const (
	AckFinished       AckState = 0 // ended now
	AckLost           AckState = 1 // reaped before: its request is queued again
	AckFinishedBefore AckState = 2 // ended by an earlier send of the same acknowledgement
)

// PageResult is what became of a page's follow-ups.
type PageResult struct {
	Status PageStatus
	// Groups are, per group, the requests queued, found duplicates and
	// stopped by a page limit (when Status is PageQueued).
	Groups []GroupResult
}

// PageStatus says whether a page's follow-ups went through.
type PageStatus int

// The page states.
const (
	PageNotFollowed PageStatus = 0  // its lease did not end now
	PageQueued      PageStatus = 1  // its requests went through the checks
	PageBlacklisted PageStatus = -1 // its crawl is blacklisted: nothing queued
)

// GroupResult is what became of a group's requests.
type GroupResult struct{ Queued, Duplicates, Limited int }

// Script is finish.lua.
func (*Finish) Script() *Script { return finishScript }

// Run runs the script and reads its answer.
func (f *Finish) Run(ctx context.Context, c redis.Scripter) (FinishResult, error) {
	keys, args, ackAt := f.build()
	return f.read(finishScript.Run(ctx, c, keys, args...), ackAt)
}

// RunAll runs many batches through one pipeline of c, by SHA1 (EVALSHA):
// on a Redis Cluster client, one pipeline to each master, every batch to
// the master of its keys' slot (each batch's keys must share a slot). A
// batch Redis answers NOSCRIPT (a node that never ran the script, or
// lost its script cache) did not run: it is sent again whole (EVAL).
// It returns each batch's result and error, in fs's order.
func RunAll(ctx context.Context, c redis.Cmdable, fs []*Finish) ([]FinishResult, []error) {
	out, errs := make([]FinishResult, len(fs)), make([]error, len(fs))
	runs := make([]*pipelined, len(fs))
	ackAt := make([][]int, len(fs))
	for i, f := range fs {
		runs[i] = &pipelined{script: finishScript}
		runs[i].keys, runs[i].args, ackAt[i] = f.build()
	}
	runPipelined(ctx, c, runs)
	for i, r := range runs {
		out[i], errs[i] = fs[i].read(r.cmd, ackAt[i])
	}
	return out, errs
}

// read is a run's result from its command.
func (f *Finish) read(cmd *redis.Cmd, ackAt []int) (FinishResult, error) {
	res, err := cmd.Slice()
	if err != nil {
		return FinishResult{}, err
	}
	out, ok := f.result(res, ackAt)
	if !ok {
		return FinishResult{}, fmt.Errorf("finish: unexpected answer %v", res)
	}
	return out, nil
}

// pipelined is one run of a script in a pipeline.
type pipelined struct {
	script *Script
	keys   []string
	args   []any
	cmd    *redis.Cmd
}

// runPipelined sends runs through one pipeline of c by SHA1 (EVALSHA),
// then those Redis answered NOSCRIPT (they did not run) whole (EVAL)
// through another.
func runPipelined(ctx context.Context, c redis.Cmdable, runs []*pipelined) {
	if len(runs) == 0 {
		return
	}
	pipe := c.Pipeline()
	for _, r := range runs {
		r.cmd = pipe.EvalSha(ctx, r.script.script.Hash(), r.keys, r.args...)
	}
	_, _ = pipe.Exec(ctx) // each command's error is its own
	var again []*pipelined
	for _, r := range runs {
		if err := r.cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			again = append(again, r)
		}
	}
	if len(again) > 0 {
		pipe = c.Pipeline()
		for _, r := range again {
			r.cmd = pipe.Eval(ctx, r.script.source, r.keys, r.args...)
		}
		_, _ = pipe.Exec(ctx)
	}
}

func (f *Finish) encode() ([]string, []any) {
	keys, args, _ := f.build()
	return keys, args
}

// build makes the script's keys and arguments, and says where each
// acknowledgement is among the batch's (grouped) ones.
func (f *Finish) build() (keys []string, args []any, ackAt []int) {
	e := finishEncoder{keys: []string{f.LeaseOwners, f.LeaseRecords}, keyNum: map[string]int{},
		ledgerNum: map[Ledger]int{}, tallyNum: map[string]int{}}
	b := finishBatch{Stamp: f.Stamp, LedgerTTL: ceilSeconds(f.LedgerTTL), DupeFilterTTL: ceilSeconds(f.DupeFilterTTL),
		DomainMaxPageTTL: ceilSeconds(f.DomainMaxPageTTL), GlobalPageTTL: ceilSeconds(f.GlobalPageTTL),
		GlobalPageLimit: f.GlobalPageLimit, Acks: []finishAcks{}, Pages: []finishPage{}}
	if f.BloomCapacity > 0 {
		b.BloomRate, b.BloomCapacity = strconv.FormatFloat(f.BloomRate, 'g', -1, 64), strconv.Itoa(f.BloomCapacity)
	}
	args = []any{nil} // the batch, then the requests
	for _, a := range f.Acks {
		b.Acks = e.ack(b.Acks, a)
		if a.Page != nil {
			b.Pages = append(b.Pages, e.page(a.Page, a.LeaseID))
			args = a.Page.appendRequests(args)
		}
	}
	for i := range f.Pages {
		b.Pages = append(b.Pages, e.page(&f.Pages[i], ""))
		args = f.Pages[i].appendRequests(args)
	}
	b.Ledgers, b.Tallies = e.ledgers, e.tallies
	head, err := json.Marshal(b)
	if err != nil { // strings, numbers and booleans only
		panic(err)
	}
	args[0] = head
	return e.keys, args, e.ackAt(b.Acks)
}

func (p *FinishPage) appendRequests(args []any) []any {
	for _, g := range p.Groups {
		for _, r := range g.Requests {
			args = append(args, r.Fingerprint, r.Member)
		}
	}
	return args
}

// result reads the script's answer, {acks, pages}; ackAt says where each
// acknowledgement's state is in acks.
func (f *Finish) result(res []any, ackAt []int) (FinishResult, bool) {
	if len(res) != 2 {
		return FinishResult{}, false
	}
	acks, _ := res[0].([]any)
	pages, _ := res[1].([]any)
	if len(acks) != len(f.Acks) {
		return FinishResult{}, false
	}
	var out FinishResult
	p := 0
	for i, a := range f.Acks {
		state, _ := acks[ackAt[i]].(int64)
		r := AckResult{State: AckState(state)}
		if a.Page != nil {
			var ok bool
			if p >= len(pages) {
				return FinishResult{}, false
			}
			if r.Page, ok = pageResult(pages[p], len(a.Page.Groups)); !ok {
				return FinishResult{}, false
			}
			p++
		}
		out.Acks = append(out.Acks, r)
	}
	if len(pages) != p+len(f.Pages) {
		return FinishResult{}, false
	}
	for i, page := range pages[p:] {
		r, ok := pageResult(page, len(f.Pages[i].Groups))
		if !ok {
			return FinishResult{}, false
		}
		out.Pages = append(out.Pages, r)
	}
	return out, true
}

// pageResult reads a page's answer: {status, then per group queued,
// duplicates and limited when the status is 1}.
func pageResult(v any, groups int) (PageResult, bool) {
	res, _ := v.([]any)
	if len(res) == 0 {
		return PageResult{}, false
	}
	status, _ := res[0].(int64)
	out := PageResult{Status: PageStatus(status)}
	if out.Status != PageQueued {
		return out, len(res) == 1
	}
	if len(res) != 1+3*groups {
		return PageResult{}, false
	}
	out.Groups = make([]GroupResult, groups)
	for g := range out.Groups {
		q, _ := res[1+3*g].(int64)
		d, _ := res[2+3*g].(int64)
		l, _ := res[3+3*g].(int64)
		out.Groups[g] = GroupResult{Queued: int(q), Duplicates: int(d), Limited: int(l)}
	}
	return out, true
}

// finishBatch is ARGV[1], the JSON object finish.lua's header describes.
type finishBatch struct {
	Stamp            string          `json:"stamp"`
	LedgerTTL        string          `json:"ledger_ttl"`
	DupeFilterTTL    string          `json:"dupefilter_ttl"`
	DomainMaxPageTTL string          `json:"domain_max_page_ttl"`
	GlobalPageTTL    string          `json:"global_page_ttl"`
	GlobalPageLimit  int             `json:"global_page_limit"`
	BloomRate        string          `json:"bloom_rate,omitempty"`
	BloomCapacity    string          `json:"bloom_capacity,omitempty"`
	Ledgers          []finishLedger  `json:"ledgers"`
	Tallies          [][]finishCount `json:"tallies"`
	Acks             []finishAcks    `json:"acks"`
	Pages            []finishPage    `json:"pages"`
}

type finishLedger struct {
	Keys   int    `json:"keys"`
	Member string `json:"member"`
}

type finishCount struct {
	Ledger int    `json:"ledger"`
	Field  string `json:"field"`
	N      int64  `json:"n"`
}

type finishAcks struct {
	Owner string   `json:"owner"`
	Tally int      `json:"tally,omitempty"`
	Again bool     `json:"again,omitempty"`
	IDs   []string `json:"ids"`
}

type finishPage struct {
	Lease       string         `json:"lease,omitempty"`
	Blacklist   int            `json:"blacklist,omitempty"`
	Crawl       string         `json:"crawl"`
	DupeFilter  int            `json:"dupefilter"`
	Bloom       int            `json:"bloom,omitempty"`
	Fingerprint string         `json:"fingerprint,omitempty"`
	Refused     []finishRefuse `json:"refused,omitempty"`
	Groups      []finishGroup  `json:"groups"`
}

type finishRefuse struct {
	Ledger int    `json:"ledger"`
	Reason string `json:"reason"`
	N      int    `json:"n"`
}

type finishGroup struct {
	Queue     int    `json:"queue"`
	Channel   string `json:"channel"`
	Ledger    int    `json:"ledger"`
	Score     string `json:"score"`
	DMax      int    `json:"dmax"`
	DMaxKey   int    `json:"dmax_key,omitempty"`
	GlobalKey int    `json:"global_key,omitempty"`
	Requests  int    `json:"requests"`
}

// finishEncoder lists the keys, ledgers and tallies of a batch, each once.
type finishEncoder struct {
	keys      []string
	keyNum    map[string]int
	ledgers   []finishLedger
	ledgerNum map[Ledger]int
	tallies   [][]finishCount
	tallyNum  map[string]int
	ackGroup  [][2]int // per acknowledgement: its group, its place in it
}

// key is k's number in KEYS.
func (e *finishEncoder) key(k string) int {
	if n, ok := e.keyNum[k]; ok {
		return n
	}
	e.keys = append(e.keys, k)
	e.keyNum[k] = len(e.keys)
	return len(e.keys)
}

// ledger is l's number among the batch's ledgers, its four keys listed in
// a row.
func (e *finishEncoder) ledger(l Ledger) int {
	if n, ok := e.ledgerNum[l]; ok {
		return n
	}
	e.ledgers = append(e.ledgers, finishLedger{Keys: len(e.keys) + 1, Member: l.Member})
	e.keys = append(e.keys, l.newWorkKeys()...)
	e.ledgerNum[l] = len(e.ledgers)
	return len(e.ledgers)
}

// tally is the number of counts among the batch's distinct tallies (0:
// none); the pages of a crawl mostly end alike.
func (e *finishEncoder) tally(counts []LedgerCount) int {
	if len(counts) == 0 {
		return 0
	}
	parts := make([]string, len(counts))
	for i, c := range counts {
		parts[i] = c.Ledger.Hash + "\x00" + c.Field + "\x00" + strconv.FormatInt(c.N, 10)
	}
	slices.Sort(parts)
	sig := strings.Join(parts, "\x01")
	if n, ok := e.tallyNum[sig]; ok {
		return n
	}
	t := make([]finishCount, len(counts))
	for i, c := range counts {
		t[i] = finishCount{Ledger: e.ledger(c.Ledger), Field: c.Field, N: c.N}
	}
	e.tallies = append(e.tallies, t)
	e.tallyNum[sig] = len(e.tallies)
	return len(e.tallies)
}

// ack adds a to the group of acknowledgements of its owner, tally and
// again.
func (e *finishEncoder) ack(groups []finishAcks, a FinishAck) []finishAcks {
	g := finishAcks{Owner: a.Owner, Tally: e.tally(a.Counts), Again: a.Again}
	i := slices.IndexFunc(groups, func(o finishAcks) bool { return o.Owner == g.Owner && o.Tally == g.Tally && o.Again == g.Again })
	if i < 0 {
		i = len(groups)
		groups = append(groups, g)
	}
	e.ackGroup = append(e.ackGroup, [2]int{i, len(groups[i].IDs)})
	groups[i].IDs = append(groups[i].IDs, a.LeaseID)
	return groups
}

// ackAt is where each acknowledgement, in the order added, is among the
// groups' ids.
func (e *finishEncoder) ackAt(groups []finishAcks) []int {
	first := make([]int, len(groups))
	for i := 1; i < len(groups); i++ {
		first[i] = first[i-1] + len(groups[i-1].IDs)
	}
	at := make([]int, len(e.ackGroup))
	for i, g := range e.ackGroup {
		at[i] = first[g[0]] + g[1]
	}
	return at
}

func (e *finishEncoder) page(p *FinishPage, lease string) finishPage {
	out := finishPage{Lease: lease, Crawl: p.Crawl, DupeFilter: e.key(p.DupeFilter),
		Fingerprint: p.Fingerprint, Groups: make([]finishGroup, len(p.Groups))}
	if p.Blacklist != "" {
		out.Blacklist = e.key(p.Blacklist)
	}
	if p.DupeFilterMeta != "" {
		out.Bloom = e.key(p.DupeFilterMeta)
	}
	for _, r := range p.Refused {
		out.Refused = append(out.Refused, finishRefuse{Ledger: e.ledger(r.Ledger), Reason: r.Reason, N: r.N})
	}
	for i, g := range p.Groups {
		fg := finishGroup{Queue: e.key(g.Queue), Channel: g.Channel, Ledger: e.ledger(g.Ledger),
			Score: strconv.FormatFloat(g.Score, 'f', -1, 64), DMax: g.DomainMaxPages, Requests: len(g.Requests)}
		if g.DomainMaxPageKey != "" {
			fg.DMaxKey, fg.GlobalKey = e.key(g.DomainMaxPageKey), e.key(g.GlobalPageKey)
		}
		out.Groups[i] = fg
	}
	return out
}

// ceilSeconds is d in whole seconds, rounded up.
func ceilSeconds(d time.Duration) string { return strconv.FormatInt(int64(math.Ceil(d.Seconds())), 10) }
