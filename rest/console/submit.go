package console

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
)

// formField is one Crawl API field on the Submit form.
type formField struct {
	Name string
	// Kind is how the form's text becomes JSON: text, int, list (one item
	// a line) or object (JSON text).
	Kind  string
	Label string
	Help  string
	// Required fields must be filled in (the schema says so too).
	Required bool
}

// crawlFields are the Crawl API's fields, in the form's order (scraper_schema.json).
var crawlFields = []formField{
	{crawlrequest.FieldURL, "text", "URL", "The seed URL, absolute http or https.", true},
	{crawlrequest.FieldAppID, "text", "App id", "The application that submits the crawl (3 to 40 characters).", true},
	{crawlrequest.FieldCrawlID, "text", "Crawl id", "A unique id to track this crawl (1 to 40 characters).", true},
	{crawlrequest.FieldSpiderID, "text", "Spider", "The spider type that crawls it (default link).", false},
	{crawlrequest.FieldPriority, "int", "Priority", "1 to 100, higher first (default 1).", false},
	{crawlrequest.FieldMaxDepth, "int", "Max depth", "How many links deep to follow, 0 to 3 (default 0).", false},
	{crawlrequest.FieldDomainMaxPages, "int", "Domain max pages", "The most pages per domain, 0 to 2000.", false},
	{crawlrequest.FieldAllowedDomains, "list", "Allowed domains", "Only follow links to these domains, one a line.", false},
	{crawlrequest.FieldAllowRegex, "list", "Allow regex", "Only follow links matching one of these, one a line.", false},
	{crawlrequest.FieldDenyRegex, "list", "Deny regex", "Never follow links matching one of these, one a line.", false},
	{crawlrequest.FieldDenyExtensions, "list", "Deny extensions", "File extensions never to follow, one a line.", false},
	{crawlrequest.FieldExpires, "int", "Expires", "Epoch seconds after which the crawl stops; 0 or empty never.", false},
	{crawlrequest.FieldUserAgent, "text", "User agent", "The User-Agent header to send (3 to 1000 characters).", false},
	{crawlrequest.FieldCookie, "text", "Cookie", "A Cookie header to send (3 to 1000 characters).", false},
	{crawlrequest.FieldAttrs, "object", "Attrs", `Any JSON object, passed through to the results, e.g. {"team": "news"}.`, false},
}

// crawlPlugin is the Kafka Monitor plugin whose schema takes crawl
// requests: its objections are the ones the form shows.
const crawlPlugin = "ScraperHandler"

type submitData struct {
	Fields []formField
	Values map[string]string
	Errors map[string][]string
	// Message is /feed's message when it refused the request.
	Message string
	// Sent is the crawl sent, with links to follow it.
	Sent *sentCrawl
	// Request is the JSON the form sent (or would send).
	Request string
}

type sentCrawl struct {
	Crawl ledger.Crawl
	Link  string
	Live  string
}

func (c *Console) submitPage(w http.ResponseWriter, r *http.Request) {
	values := map[string]string{}
	for _, f := range crawlFields {
		values[f.Name] = r.URL.Query().Get(f.Name)
	}
	c.render(w, r, http.StatusOK, "submit", "Submit a crawl", &submitData{Fields: crawlFields, Values: values})
}

// submitCrawl sends the form as a crawl request through /feed; what /feed
// refuses comes back beside the fields concerned.
func (c *Console) submitCrawl(w http.ResponseWriter, r *http.Request) {
	d := &submitData{Fields: crawlFields, Values: map[string]string{}}
	if err := r.ParseForm(); err != nil {
		d.Errors = map[string][]string{"": {"The form could not be read: " + err.Error()}}
		c.render(w, r, http.StatusBadRequest, "submit", "Submit a crawl", d)
		return
	}
	for _, f := range crawlFields {
		d.Values[f.Name] = r.PostForm.Get(f.Name)
	}
	req := crawlRequest(d.Values)
	body, _ := json.Marshal(req)
	d.Request = string(body)
	a := c.callAPI(r, "/feed", body)
	if !a.OK {
		d.Message = a.Message
		if a.Cause != "" {
			d.Errors = fieldErrors(a.Cause, crawlPlugin, fieldNames())
		} else if a.Message == "" {
			d.Message = "The service answered " + http.StatusText(a.Code) + "."
		}
		// 200, not 400: the page is the form again, with its errors (a
		// browser reports a page that loads with 400 as an error).
		c.render(w, r, http.StatusOK, "submit", "Submit a crawl", d)
		return
	}
	spider, _ := req[crawlrequest.FieldSpiderID].(string)
	if _, given := req[crawlrequest.FieldSpiderID]; !given {
		spider = crawlrequest.DefaultSpiderID
	}
	cr := ledger.Crawl{SpiderID: spider, AppID: d.Values[crawlrequest.FieldAppID], CrawlID: d.Values[crawlrequest.FieldCrawlID]}
	d.Sent = &sentCrawl{Crawl: cr, Link: crawlLink(cr), Live: Prefix + "live?" + url.Values{"appid": {cr.AppID}, "crawlid": {cr.CrawlID}}.Encode()}
	c.render(w, r, http.StatusOK, "submit", "Submit a crawl", d)
}

func fieldNames() []string {
	names := make([]string, len(crawlFields))
	for i, f := range crawlFields {
		names[i] = f.Name
	}
	return names
}

// crawlRequest turns the form's text into the request's JSON fields. An
// empty field is left out (the schema's default applies). What does not
// read as its kind goes as the text it is, so /feed's validation, the one
// verdict on a request, says what is wrong with it.
func crawlRequest(values map[string]string) map[string]any {
	req := map[string]any{}
	for _, f := range crawlFields {
		raw := values[f.Name]
		text := strings.TrimSpace(raw)
		if text == "" {
			continue
		}
		switch f.Kind {
		case "int":
			if n, err := strconv.ParseInt(text, 10, 64); err == nil {
				req[f.Name] = n
			} else {
				req[f.Name] = text
			}
		case "list":
			var items []string
			for _, line := range strings.Split(raw, "\n") {
				if line = strings.TrimSpace(line); line != "" {
					items = append(items, line)
				}
			}
			req[f.Name] = items
		case "object":
			var v any
			if json.Unmarshal([]byte(text), &v) == nil {
				req[f.Name] = json.RawMessage(text)
			} else {
				req[f.Name] = text
			}
		default:
			req[f.Name] = text
		}
	}
	return req
}
