package console

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/domainconfig"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/stats"
)

// domainRows is the most domains the Domains page lists (largest backlog
// first); a filter finds the others.
const domainRows = 500

type domainsData struct {
	Err       string
	ConfigErr string
	Filter    string
	Rows      []domainRow
	Shown     int
	Matching  int
	Blacklist []string
	// Edit prefills the throttle form.
	Edit domainEdit
}

type domainRow struct {
	Domain string
	// Backlog is the requests queued for the domain, by spider.
	Backlog     []kv
	Total       int64
	Throttle    *domainconfig.Domain
	ScaledHits  int
	Blacklisted bool
}

type domainEdit struct {
	Domain, Hits, Window, Scale string
}

func (c *Console) domainsPage(w http.ResponseWriter, r *http.Request) {
	c.showDomains(w, r, nil)
}

func (c *Console) showDomains(w http.ResponseWriter, r *http.Request, f *flash) {
	ctx, cancel := pageContext(r)
	defer cancel()
	q := r.URL.Query()
	d := &domainsData{Filter: strings.TrimSpace(q.Get("q"))}
	queues, err := c.front.Stats(time.Now()).Queues(ctx)
	if err != nil {
		d.Err = err.Error()
		queues = &stats.QueueStats{}
	}
	doc, err := c.domains.get(ctx)
	if err != nil {
		d.ConfigErr = err.Error()
	}
	rows := map[string]*domainRow{}
	row := func(domain string) *domainRow {
		if rows[domain] == nil {
			rows[domain] = &domainRow{Domain: domain, Blacklisted: doc.Blacklisted(domain)}
		}
		return rows[domain]
	}
	for spider, sq := range queues.Spiders {
		for _, b := range sq.Domains {
			dr := row(b.Domain)
			dr.Backlog = append(dr.Backlog, kv{spider, b.Backlog})
			dr.Total += b.Backlog
		}
	}
	for domain, t := range doc.Domains {
		dr := row(domain)
		dr.Throttle = &t
		dr.ScaledHits = t.ScaledHits()
	}
	for _, domain := range doc.Blacklist {
		row(domain)
	}
	all := make([]*domainRow, 0, len(rows))
	for _, dr := range rows {
		if d.Filter == "" || strings.Contains(dr.Domain, d.Filter) {
			slices.SortFunc(dr.Backlog, func(a, b kv) int { return strings.Compare(a.Key, b.Key) })
			all = append(all, dr)
		}
	}
	slices.SortFunc(all, func(a, b *domainRow) int {
		if a.Total != b.Total {
			return cmp.Compare(b.Total, a.Total)
		}
		return strings.Compare(a.Domain, b.Domain)
	})
	d.Matching = len(all)
	for _, dr := range all[:min(len(all), domainRows)] {
		d.Rows = append(d.Rows, *dr)
	}
	d.Shown = len(d.Rows)
	d.Blacklist = doc.Blacklist
	d.Edit = domainEdit{Domain: q.Get("domain"), Hits: q.Get("hits"), Window: q.Get("window"), Scale: q.Get("scale")}
	if t, ok := doc.Domains[d.Edit.Domain]; ok && d.Edit.Hits == "" {
		d.Edit.Hits, d.Edit.Window = strconv.Itoa(t.Hits), strconv.Itoa(t.Window)
		d.Edit.Scale = strconv.FormatFloat(t.Scale, 'f', -1, 64)
	}
	c.render(w, r, http.StatusOK, "domains", "Domains", d, withFlash(f))
}

// zookeeperActions are the Zookeeper API's actions the Domains page sends.
var zookeeperActions = []string{"domain-update", "domain-remove", "blacklist-update", "blacklist-remove"}

// domainAction sends a Zookeeper API request through /feed and shows the
// page again with the answer. The Redis Monitor applies it to the domain
// configuration, where crawlers pick it up.
func (c *Console) domainAction(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		c.showDomains(w, r, &flash{Title: "Not sent", Message: "The form could not be read: " + err.Error()})
		return
	}
	action := r.PostForm.Get("action")
	if !slices.Contains(zookeeperActions, action) {
		c.showDomains(w, r, &flash{Title: "Not sent", Message: fmt.Sprintf("Unknown action %q.", action)})
		return
	}
	req := map[string]any{"action": action, "appid": c.appID, "uuid": newUUID(), "domain": strings.TrimSpace(r.PostForm.Get("domain"))}
	if action == "domain-update" {
		// As on the Submit form, what does not read as a number goes as
		// text, for /feed's validation to name.
		for _, name := range []string{"hits", "window", "scale"} {
			text := strings.TrimSpace(r.PostForm.Get(name))
			if text == "" {
				continue
			}
			var n json.Number
			if json.Unmarshal([]byte(text), &n) == nil {
				req[name] = n
			} else {
				req[name] = text
			}
		}
	}
	body, _ := json.Marshal(req)
	c.showDomains(w, r, flashFrom(action+" "+fmt.Sprint(req["domain"]), c.callAPI(r, "/feed", body)))
}
