package console

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/rest/frontier"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
)

// crawlsPerPage is how many crawls the Crawls page lists at once.
const crawlsPerPage = 50

type crawlsData struct {
	Err    string
	AppID  string
	Crawls []crawlRow
	Total  int64
	Active int64
	Offset int
	// Prev and Next are the offsets of the neighbouring pages (-1 none).
	Prev, Next int
}

// crawlRow is one crawl as the lists show it.
type crawlRow struct {
	ledger.Crawl
	P *ledger.Progress
	// Done and Total make the progress bar: done / (seeds + enqueued).
	Done, Total int64
	Refused     int64
	Dropped     int64
	Purged      int64
	Elapsed     float64
	Link        string
}

// Label is the crawl's state as the console shows it: "complete",
// "ending" (a stop or an expiry ended it; its crawl-complete is on the
// way) or "running".
func (r crawlRow) Label() string {
	if r.P.State == ledger.StateRunning && r.P.EndedBy != "" {
		return "ending"
	}
	return r.P.State
}

// Actionable reports whether Stop and Expire fit the crawl: not once it
// is complete (an expiry would queue a URL again and run it anew) or a
// stop or an expiry is ending it.
func (r crawlRow) Actionable() bool { return r.Label() == ledger.StateRunning }

func newCrawlRow(c ledger.Crawl, p *ledger.Progress, now time.Time) crawlRow {
	row := crawlRow{Crawl: c, P: p, Done: p.Done, Total: p.Seeds + p.Enqueued, Link: crawlLink(c)}
	row.Refused, row.Dropped, row.Purged = sum(p.Refused), sum(p.Dropped), sum(p.Purged)
	end := p.LastActivity
	if p.State != ledger.StateComplete {
		end = float64(now.UnixNano()) / 1e9
	}
	if p.Started > 0 {
		row.Elapsed = end - p.Started
	}
	return row
}

func sum(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// crawlLink is the crawl's own page.
func crawlLink(c ledger.Crawl) string {
	q := url.Values{"spiderid": {c.SpiderID}, "appid": {c.AppID}, "crawlid": {c.CrawlID}}
	return Prefix + "crawl?" + q.Encode()
}

func (c *Console) crawlsPage(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := pageContext(r)
	defer cancel()
	q := r.URL.Query()
	offset, _ := strconv.Atoi(q.Get("offset"))
	d := &crawlsData{AppID: strings.TrimSpace(q.Get("appid")), Offset: max(offset, 0), Prev: -1, Next: -1}
	now := time.Now()
	entries, total, err := c.front.List(ctx, d.AppID, d.Offset, crawlsPerPage)
	if err == nil {
		d.Active, err = c.front.Active(ctx)
	}
	if err != nil {
		d.Err = err.Error()
	}
	d.Total = total
	for _, e := range entries {
		d.Crawls = append(d.Crawls, newCrawlRow(ledger.Crawl{SpiderID: e.SpiderID, AppID: e.AppID, CrawlID: e.CrawlID}, e.Progress, now))
	}
	if d.Offset > 0 {
		d.Prev = max(d.Offset-crawlsPerPage, 0)
	}
	if int64(d.Offset+crawlsPerPage) < total {
		d.Next = d.Offset + crawlsPerPage
	}
	c.render(w, r, http.StatusOK, "crawls", "Crawls", d, c.refreshing)
}

type crawlData struct {
	Err   string
	Crawl ledger.Crawl
	Row   *crawlRow // nil: no ledger for the crawl
	// Codes and the refusals, drops and purges by reason, sorted.
	Codes, Refused, Dropped, Purged []kv
	Queues                          crawlQueues
	Results                         []Result
	ResultsKept                     int
	// ExpireURL prefills the Expire form: one of the crawl's queued URLs,
	// else its latest result's.
	ExpireURL string
	// Link is this page, for the forms.
	Link string
	// Schedule is a scheduled crawl's schedule and runs (nil: none).
	Schedule *scheduleData
}

type kv struct {
	Key   string
	Value int64
}

func sorted(m map[string]int64) []kv {
	out := make([]kv, 0, len(m))
	for k, v := range m {
		out = append(out, kv{k, v})
	}
	slices.SortFunc(out, func(a, b kv) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// crawlResults is how many of a crawl's latest results its page shows.
const crawlResults = 50

// crawlFromQuery reads the crawl a request names; ok is false when an id is missing.
func crawlFromQuery(q url.Values) (ledger.Crawl, bool) {
	c := ledger.Crawl{SpiderID: q.Get("spiderid"), AppID: q.Get("appid"), CrawlID: q.Get("crawlid")}
	return c, c.AppID != "" && c.CrawlID != "" && q.Has("spiderid")
}

func (c *Console) crawlPage(w http.ResponseWriter, r *http.Request) {
	c.showCrawl(w, r, nil)
}

func (c *Console) showCrawl(w http.ResponseWriter, r *http.Request, f *flash) {
	cr, ok := crawlFromQuery(r.URL.Query())
	if !ok {
		c.render(w, r, http.StatusBadRequest, "notfound", "No such crawl", "A crawl is named by spiderid, appid and crawlid.")
		return
	}
	ctx, cancel := pageContext(r)
	defer cancel()
	d := &crawlData{Crawl: cr, Link: crawlLink(cr), ResultsKept: len(c.results.ring)}
	p, err := c.front.Progress(ctx, cr)
	if err != nil {
		d.Err = err.Error()
	} else if p != nil {
		row := newCrawlRow(cr, p, time.Now())
		d.Row = &row
		d.Codes, d.Refused, d.Dropped, d.Purged = sorted(p.StatusCodes), sorted(p.Refused), sorted(p.Dropped), sorted(p.Purged)
	}
	if d.Err == "" {
		if d.Schedule, err = readSchedule(ctx, c, cr, p); err != nil {
			d.Err = err.Error()
		}
	}
	d.Queues, err = readCrawlQueues(ctx, c.front, cr, queueScanBudget)
	if err != nil && d.Err == "" {
		d.Err = err.Error()
	}
	d.Results = c.results.since(0, filter{AppID: cr.AppID, CrawlID: cr.CrawlID}, crawlResults)
	newestFirst(d.Results)
	d.ExpireURL = d.Queues.AnyURL
	if d.ExpireURL == "" && len(d.Results) > 0 {
		d.ExpireURL = d.Results[0].URL
	}
	title := "Crawl " + cr.CrawlID
	c.render(w, r, http.StatusOK, "crawl", title, d, c.refreshing, withFlash(f))
}

// crawlAction sends a stop, or the crawl request that sets an expiry,
// through /feed, or cancels the crawl's re-crawl schedule through
// /recrawl/cancel, and shows the crawl again with the answer.
func (c *Console) crawlAction(w http.ResponseWriter, r *http.Request) {
	cr, ok := crawlFromQuery(r.URL.Query())
	if !ok {
		c.render(w, r, http.StatusBadRequest, "notfound", "No such crawl", "A crawl is named by spiderid, appid and crawlid.")
		return
	}
	if err := r.ParseForm(); err != nil {
		c.showCrawl(w, r, &flash{Title: "Not sent", Message: "The form could not be read: " + err.Error()})
		return
	}
	op := r.PostForm.Get("op")
	if op == "cancel-schedule" { // also between two runs, when the crawl is complete
		c.showCrawl(w, r, c.cancelSchedule(r, cr))
		return
	}
	if why := c.notActionable(r, cr); why != "" {
		c.showCrawl(w, r, &flash{Title: "Not sent", Message: why})
		return
	}
	switch op {
	case "stop":
		body, _ := json.Marshal(map[string]string{
			"action": "stop", "appid": cr.AppID, "crawlid": cr.CrawlID, "spiderid": cr.SpiderID, "uuid": newUUID(),
		})
		c.showCrawl(w, r, flashFrom("Stop", c.callAPI(r, "/feed", body)))
	case "expire":
		c.showCrawl(w, r, c.expire(r, cr))
	default:
		c.showCrawl(w, r, &flash{Title: "Not sent", Message: fmt.Sprintf("Unknown action %q.", op)})
	}
}

// notActionable says why Stop and Expire do not fit the crawl ("" when
// they do, or when its ledger cannot be read: the action then goes as
// asked): a form left open on a crawl that has completed since must not
// queue a URL of it again.
func (c *Console) notActionable(r *http.Request, cr ledger.Crawl) string {
	ctx, cancel := pageContext(r)
	defer cancel()
	p, err := c.front.Progress(ctx, cr)
	if err != nil || p == nil {
		return ""
	}
	switch row := newCrawlRow(cr, p, time.Now()); row.Label() {
	case ledger.StateComplete:
		return "The crawl is complete: there is nothing to stop or expire (an expiry would queue a URL again and run it anew)."
	case "ending":
		return "A " + p.EndedBy + " is ending the crawl already."
	}
	return ""
}

// expire sets a crawl's expiry. The Action API has no expire (its actions
// are info and stop): a crawl's expiry is the expires field of its crawl
// requests, which the Kafka Monitor stores at timeout:<spiderid>:<appid>:<crawlid>
// and the Redis Monitor's expire plugin acts on. So the console sends one
// more crawl request of the crawl (one of its URLs, as the operator
// confirms it) with the new expires.
func (c *Console) expire(r *http.Request, cr ledger.Crawl) *flash {
	in := strings.TrimSpace(r.PostForm.Get("expires_in"))
	minutes, err := strconv.ParseFloat(in, 64)
	if err != nil || minutes < 0 || minutes > 60*24*366 {
		return &flash{Title: "Not sent", Message: fmt.Sprintf("Expire in: %q is not a number of minutes from 0 to 527040.", in)}
	}
	seed := strings.TrimSpace(r.PostForm.Get("url"))
	if seed == "" {
		return &flash{Title: "Not sent", Message: "Expire needs one URL of the crawl to send with the new expires."}
	}
	expires := time.Now().Add(time.Duration(minutes * float64(time.Minute))).Unix()
	body, _ := json.Marshal(map[string]any{
		"url": seed, "appid": cr.AppID, "crawlid": cr.CrawlID, "spiderid": cr.SpiderID, "expires": expires,
	})
	f := flashFrom("Expire", c.callAPI(r, "/feed", body))
	if f.OK {
		f.Message = fmt.Sprintf("Sent: the crawl expires at %s; the Redis Monitor then purges its queued requests.",
			time.Unix(expires, 0).UTC().Format("2006-01-02 15:04:05 UTC"))
	}
	return f
}

// queueScanBudget bounds how many queued requests one crawl page decodes.
const queueScanBudget = 100000

// crawlQueues is a crawl's share of its spider's domain queues and render
// queues.
type crawlQueues struct {
	Domains []domainShare
	// Queued is the crawl's requests found in the queues.
	Queued int64
	// Partial is set when the queues hold more than the budget allowed
	// reading: the counts are of the first requests of each queue only.
	Partial bool
	// AnyURL is one of the crawl's queued URLs (for Expire), or "".
	AnyURL string
}

type domainShare struct {
	Domain string
	// Render is set for a render queue's share (requests waiting for a
	// rendering crawler): a domain may have two shares.
	Render bool
	// Mine is the crawl's requests in the queue; Backlog all of them.
	Mine, Backlog int64
}

// readCrawlQueues counts a crawl's requests in its spider's domain queues
// and render queues: SCAN for the queues, then their members in pipelined pages (highest
// priority first), each member checked cheaply for the crawl's id before
// it is decoded. At most budget members are read.
func readCrawlQueues(ctx context.Context, front frontier.Reader, cr ledger.Crawl, budget int) (crawlQueues, error) {
	var out crawlQueues
	keys, err := front.QueueKeys(ctx, cr.SpiderID)
	if err != nil {
		return out, err
	}
	perQueue := int64(budget)
	if len(keys) > 0 {
		perQueue = max(int64(budget/len(keys)), 100)
	}
	pipe := front.Redis.Pipeline()
	cards := make([]*redis.IntCmd, len(keys))
	members := make([]*redis.StringSliceCmd, len(keys))
	for i, k := range keys {
		cards[i] = pipe.ZCard(ctx, k)
		members[i] = pipe.ZRange(ctx, k, 0, perQueue-1)
	}
	if len(keys) > 0 {
		if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
			return out, fmt.Errorf("read the %s queues: %w", cr.SpiderID, err)
		}
	}
	match := newMemberMatch(cr)
	for i, k := range keys {
		_, domain, render, _ := front.Layout.ParseAnyQueue(k)
		share := domainShare{Domain: domain, Render: render, Backlog: cards[i].Val()}
		if share.Backlog > perQueue {
			out.Partial = true
		}
		for _, m := range members[i].Val() {
			if u, ok := match.url(m); ok {
				share.Mine++
				if out.AnyURL == "" {
					out.AnyURL = u
				}
			}
		}
		if share.Mine > 0 {
			out.Domains = append(out.Domains, share)
			out.Queued += share.Mine
		}
	}
	return out, nil
}

// memberMatch tells a crawl's queue members from others.
type memberMatch struct {
	crawl ledger.Crawl
	// needle is the crawl id as JSON writes it, when it cannot be written
	// another way (no escapes): a member without it is not the crawl's,
	// and need not be decoded.
	needle string
}

func newMemberMatch(cr ledger.Crawl) memberMatch {
	m := memberMatch{crawl: cr}
	plain := true
	for _, b := range []byte(cr.CrawlID) {
		if b < 0x20 || b >= 0x7f || b == '"' || b == '\\' || b == '/' || b == '<' || b == '>' || b == '&' {
			plain = false
		}
	}
	if plain {
		m.needle = `"` + cr.CrawlID + `"`
	}
	return m
}

// url returns the member's URL when it is a request of the crawl.
func (m memberMatch) url(member string) (string, bool) {
	if m.needle != "" && !strings.Contains(member, m.needle) {
		return "", false
	}
	req, err := crawlrequest.Decode([]byte(member))
	if err != nil || req.AppID != m.crawl.AppID || req.CrawlID != m.crawl.CrawlID {
		return "", false
	}
	return req.URL, true
}
