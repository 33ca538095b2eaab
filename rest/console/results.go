package console

import (
	"cmp"
	"encoding/json"
	"slices"
	"strings"
	"sync"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/textcut"
)

// Result is one crawl result as the console keeps it: the small fields of a
// message on the crawled firehose, never its body.
type Result struct {
	// Seq numbers the results this instance has read, from 1; the Live
	// page's stream uses it as the event id.
	Seq        uint64 `json:"seq"`
	URL        string `json:"url"`
	StatusCode int    `json:"status_code"`
	AppID      string `json:"appid"`
	CrawlID    string `json:"crawlid"`
	// Timestamp is the crawler's, as it wrote it (UTC, ISO 8601).
	Timestamp string `json:"timestamp"`
}

// The longest URL and id kept; longer ones are cut, so that a result has a
// bounded size whatever the firehose carries.
const (
	maxURL = 2048
	maxID  = 200
)

// parseResult reads a crawl result's small fields. The message may be as
// large as Kafka allows; only these fields are kept.
func parseResult(value []byte) (Result, bool) {
	var m struct {
		URL        string `json:"url"`
		StatusCode int    `json:"status_code"`
		AppID      string `json:"appid"`
		CrawlID    string `json:"crawlid"`
		Timestamp  string `json:"timestamp"`
	}
	if err := json.Unmarshal(value, &m); err != nil || m.URL == "" {
		return Result{}, false
	}
	return Result{URL: textcut.UTF8(m.URL, maxURL), StatusCode: m.StatusCode, AppID: textcut.UTF8(m.AppID, maxID),
		CrawlID: textcut.UTF8(m.CrawlID, maxID), Timestamp: textcut.UTF8(m.Timestamp, 40)}, true
}

// newestFirst sorts results by their timestamps (the crawlers', ISO 8601
// UTC, which sort as text), newest first; results of the same time keep
// their arrival order, newest first. Partitions deliver results out of
// time order, so arrival order alone would not do.
func newestFirst(rs []Result) {
	slices.SortStableFunc(rs, func(a, b Result) int {
		if c := strings.Compare(b.Timestamp, a.Timestamp); c != 0 {
			return c
		}
		return cmp.Compare(b.Seq, a.Seq)
	})
}

// filter selects results by appid and crawlid ("" matches any).
type filter struct{ AppID, CrawlID string }

func (f filter) keep(r *Result) bool {
	return (f.AppID == "" || r.AppID == f.AppID) && (f.CrawlID == "" || r.CrawlID == f.CrawlID)
}

// subBuffer is how many results a stream may fall behind before it is
// dropped (its browser then reconnects and catches up from the buffer).
const subBuffer = 256

// results is the ring buffer of the latest results and the streams
// following them. Add never blocks: a stream that cannot take a result at
// once is dropped.
type results struct {
	mu   sync.Mutex
	ring []Result // ring[(seq-1) % len(ring)]
	last uint64   // seq of the newest result; 0 before any
	subs map[*stream]struct{}
	// dropped counts streams dropped for falling behind.
	dropped uint64
}

func newResults(size int) *results {
	return &results{ring: make([]Result, size), subs: map[*stream]struct{}{}}
}

// stream is one follower of new results.
type stream struct {
	c      chan Result
	filter filter
}

// add stores r (numbering it) and hands it to the streams that want it.
func (b *results) add(r Result) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.last++
	r.Seq = b.last
	b.ring[(r.Seq-1)%uint64(len(b.ring))] = r
	for s := range b.subs {
		if !s.filter.keep(&r) {
			continue
		}
		select {
		case s.c <- r:
		default:
			delete(b.subs, s)
			close(s.c)
			b.dropped++
		}
	}
}

// since returns the kept results newer than seq that f keeps, oldest
// first, at most limit (the newest of them).
func (b *results) since(seq uint64, f filter, limit int) []Result {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sinceLocked(seq, f, limit)
}

func (b *results) sinceLocked(seq uint64, f filter, limit int) []Result {
	oldest := uint64(1)
	if n := uint64(len(b.ring)); b.last > n {
		oldest = b.last - n + 1
	}
	var out []Result
	for s := b.last; s >= max(oldest, seq+1) && len(out) < limit; s-- {
		if r := b.ring[(s-1)%uint64(len(b.ring))]; f.keep(&r) {
			out = append(out, r)
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// follow returns the kept results after seq that f keeps (at most
// backlog) and a stream of the new ones, with nothing lost in between.
func (b *results) follow(seq uint64, f filter, backlog int) ([]Result, *stream) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := &stream{c: make(chan Result, subBuffer), filter: f}
	b.subs[s] = struct{}{}
	return b.sinceLocked(seq, f, backlog), s
}

// unfollow ends a stream (unless add dropped it already).
func (b *results) unfollow(s *stream) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.subs[s]; ok {
		delete(b.subs, s)
		close(s.c)
	}
}

// counts returns the number of results read and of streams following them.
func (b *results) counts() (read uint64, streams int, dropped uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.last, len(b.subs), b.dropped
}
