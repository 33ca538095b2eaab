package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/throttle"
)

// The states of a crawl.
const (
	StateRunning  = "running"
	StateComplete = "complete"
)

// Progress is a crawl's ledger as the info answer, crawl-complete and the
// REST service show it.
type Progress struct {
	// State is "complete" once the crawl has had nothing queued or in flight
	// and its crawl-complete was published; "running" before, and again when
	// new seeds arrive.
	State    string `json:"state"`
	Seeds    int64  `json:"seeds"`
	Enqueued int64  `json:"enqueued"`
	// Queued and InFlight are what is left: in the queues, and leased by
	// crawlers. Queued + InFlight = Seeds + Enqueued - Done.
	Queued   int64 `json:"queued"`
	InFlight int64 `json:"in_flight"`
	// Fetched counts responses, StatusCodes by code ("200": n).
	Fetched     int64            `json:"fetched"`
	StatusCodes map[string]int64 `json:"status_codes"`
	Published   int64            `json:"published"`
	// PublishedTruncated counts published results cut to fit Kafka.
	PublishedTruncated int64            `json:"published_truncated"`
	Retried            int64            `json:"retried"`
	Dropped            map[string]int64 `json:"dropped"`
	Refused            map[string]int64 `json:"refused"`
	Purged             map[string]int64 `json:"purged"`
	// Unchanged counts the pages of a re-run of a scheduled crawl found
	// unchanged (a 304, or the same body); Withheld those of them not
	// published (emit "changed"); SkippedFresh the pages an adaptive re-run
	// did not fetch. (scutils/recrawl; 0 for other crawls.)
	Unchanged    int64 `json:"unchanged,omitempty"`
	Withheld     int64 `json:"withheld,omitempty"`
	SkippedFresh int64 `json:"skipped_fresh,omitempty"`
	// Done counts requests that left the crawl: published, dropped, refused
	// after their pop, purged, withheld, skipped_fresh.
	Done int64 `json:"done"`
	// EndedBy is "stop" or "expire" once one of them ended the crawl.
	EndedBy string `json:"ended_by,omitempty"`
	// Started and LastActivity are epoch seconds.
	Started      float64 `json:"started"`
	LastActivity float64 `json:"last_activity"`

	completed bool
	// run is the run of a scheduled crawl the counts are of (0: not
	// scheduled); completedAt when its crawl-complete went out.
	run         int64
	completedAt float64
}

// Run is the run of a scheduled crawl these counts are of: 1, 2, ...; 0
// for a crawl without a schedule (see scutils/recrawl).
func (p *Progress) Run() int64 { return p.run }

// Outstanding is what the ledger says is left: seeds + enqueued - done.
func (p *Progress) Outstanding() int64 { return p.Seeds + p.Enqueued - p.Done }

// Reason is the crawl-complete reason: "stopped", "expired" or "finished".
func (p *Progress) Reason() string {
	switch Purge(p.EndedBy) {
	case PurgedStop:
		return "stopped"
	case PurgedExpire:
		return "expired"
	}
	return "finished"
}

// parseProgress reads a ledger hash (HGETALL); nil when it is empty.
func parseProgress(h map[string]string) *Progress {
	if len(h) == 0 {
		return nil
	}
	p := &Progress{StatusCodes: map[string]int64{}, Dropped: map[string]int64{}, Refused: map[string]int64{}, Purged: map[string]int64{}}
	// Where each field goes: the counts, the times (epoch seconds), the
	// counts by code or reason.
	counts := map[string]*int64{
		FieldSeeds: &p.Seeds, FieldEnqueued: &p.Enqueued, FieldDone: &p.Done, FieldRetried: &p.Retried,
		FieldPublished: &p.Published, FieldPublishedTruncated: &p.PublishedTruncated, FieldRun: &p.run,
		FieldUnchanged: &p.Unchanged, FieldWithheld: &p.Withheld, FieldSkippedFresh: &p.SkippedFresh,
	}
	times := map[string]*float64{FieldStarted: &p.Started, FieldLastActivity: &p.LastActivity, FieldCompleted: &p.completedAt}
	byPrefix := map[string]map[string]int64{
		PrefixFetched: p.StatusCodes, PrefixRefused: p.Refused, PrefixDropped: p.Dropped, PrefixPurged: p.Purged,
	}
	for f, v := range h {
		if c := counts[f]; c != nil {
			*c, _ = strconv.ParseInt(v, 10, 64)
			continue
		}
		if t := times[f]; t != nil {
			*t, _ = strconv.ParseFloat(v, 64)
		}
		switch f {
		case FieldEndedBy:
			p.EndedBy = v
		case FieldCompleted:
			p.completed = true
		}
		if prefix, code, ok := strings.Cut(f, ":"); ok && byPrefix[prefix+":"] != nil {
			byPrefix[prefix+":"][code], _ = strconv.ParseInt(v, 10, 64)
		}
	}
	for _, n := range p.StatusCodes {
		p.Fetched += n
	}
	p.State = StateRunning
	if p.completed && p.Outstanding() == 0 {
		p.State = StateComplete
	}
	p.Queued = max(0, p.Outstanding())
	return p
}

// Read returns the progress of crawls (nil for one without a ledger), each
// read with its spider's leases in one atomic step, so that Queued and
// InFlight add up to what the counts leave outstanding.
func Read(ctx context.Context, rdb redis.Cmdable, crawls ...Crawl) ([]*Progress, error) {
	if len(crawls) == 0 {
		return nil, nil
	}
	pipe := rdb.TxPipeline()
	hashes := make([]*redis.MapStringStringCmd, len(crawls))
	for i, c := range crawls {
		hashes[i] = pipe.HGetAll(ctx, c.Key())
	}
	leases := map[string]*redis.StringSliceCmd{}
	for _, c := range crawls {
		if leases[c.SpiderID] == nil {
			leases[c.SpiderID] = pipe.HVals(ctx, rediskeys.LeaseKey(c.SpiderID)+":items")
		}
	}
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return nil, fmt.Errorf("read crawl ledgers: %w", err)
	}
	inFlight := map[Crawl]int64{}
	for spider, cmd := range leases {
		for _, v := range cmd.Val() {
			if appID, crawlID, ok := leasedCrawl(v); ok {
				inFlight[Crawl{SpiderID: spider, AppID: appID, CrawlID: crawlID}]++
			}
		}
	}
	out := make([]*Progress, len(crawls))
	for i, c := range crawls {
		p := parseProgress(hashes[i].Val())
		if p == nil {
			continue
		}
		p.InFlight = min(inFlight[c], p.Queued)
		p.Queued -= p.InFlight
		out[i] = p
	}
	return out, nil
}

// leasedCrawl reads the appid and crawlid of a lease record
// (throttle.Record), the member in the flat form or with the crawl fields
// under "meta".
func leasedCrawl(record string) (appID, crawlID string, ok bool) {
	lease, ok := throttle.ParseRecord(record)
	if !ok {
		return "", "", false
	}
	var m struct {
		AppID   string `json:"appid"`
		CrawlID string `json:"crawlid"`
		Meta    *struct {
			AppID   string `json:"appid"`
			CrawlID string `json:"crawlid"`
		} `json:"meta"`
	}
	if json.Unmarshal([]byte(lease.Member), &m) != nil {
		return "", "", false
	}
	if m.Meta != nil && m.AppID == "" && m.CrawlID == "" {
		return m.Meta.AppID, m.Meta.CrawlID, true
	}
	return m.AppID, m.CrawlID, true
}
