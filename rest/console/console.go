// Package console is the operator console the REST service serves under
// /ui/: server-rendered pages (html/template) with a little JavaScript,
// every asset embedded in the binary, nothing fetched from elsewhere. The
// pages (the overview, crawls and a crawl, submit, domains, live, the API
// console) are the rows of the table pages, from which their routes, their
// templates and the navigation bar come; docs/console.md describes each.
//
// What the console reads it reads where the cluster keeps it: the stats
// and heartbeats through stats.Reader, crawls through package ledger, the
// domain configuration through package domainconfig, the queues with SCAN
// and crawlrequest.Decode. What it changes it changes through the
// service's own /feed, called in process, so every request the console
// sends is validated and handled exactly as an API client's. Crawl results
// come from one reader of the crawled firehose per REST instance, started
// when the console is first used, into a bounded buffer (UI_RESULTS_BUFFER)
// of their small fields.
//
// POST requests must come from the console's own pages (access.SameOrigin).
package console

import (
	"context"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/scrapycluster/scrapy-cluster-go/rest/access"
	"github.com/scrapycluster/scrapy-cluster-go/rest/frontier"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/domainconfig"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/kafkaclient"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Prefix is the path the console is served under.
const Prefix = "/ui/"

// State is the REST instance's own state, as its index reports it.
type State struct {
	ID                             string
	KafkaConnected, RedisConnected bool
}

// Deps is what the console needs from the REST service.
type Deps struct {
	Settings *settings.Settings
	Log      *logfactory.Logger
	// KafkaRetry is how often reading the crawled firehose is retried
	// while Kafka is away (the service's KAFKA_CONSUMER_SLEEP_TIME).
	KafkaRetry time.Duration
	// Redis is the service's client; the console does not close it.
	Redis redis.UniversalClient
	// Kafka and KafkaClient read the crawled firehose.
	Kafka       kafkaclient.Config
	KafkaClient *kafka.Client
	// API is the service's own API handler (/feed, /poll), which the
	// console calls in process.
	API http.Handler
	// State reports the instance's state.
	State func() State
}

// Console is the console of one REST instance.
type Console struct {
	settings *settings.Settings
	log      *logfactory.Logger
	rdb      redis.UniversalClient
	// front reads the crawls, queues and stats in the settings' key layout
	// (every master of a Redis Cluster).
	front    frontier.Reader
	api      http.Handler
	state    func() State
	refresh  time.Duration
	appID    string
	mux      *http.ServeMux                // routes
	tmpl     map[string]*template.Template // by page name
	nav      map[string][]navEntry         // by page name
	results  *results
	firehose *firehose
	domains  *domainStore

	shutdown     chan struct{} // closed when the HTTP server shuts down: streams end
	shutdownOnce sync.Once
	closeOnce    sync.Once
}

// New checks the console's settings and parses its templates. The crawled
// firehose is read from the first request on (or from now, with
// UI_LIVE_AT_START).
func New(d Deps) (*Console, error) {
	if err := checkSettings(d.Settings); err != nil {
		return nil, err
	}
	tmpl, err := parseTemplates()
	if err != nil {
		return nil, err
	}
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, fmt.Errorf("console assets: %w", err)
	}
	c := &Console{
		settings: d.Settings, log: d.Log, rdb: d.Redis, front: frontier.New(d.Settings, d.Redis), api: d.API, state: d.State,
		refresh: Refresh.From(d.Settings), appID: AppID.From(d.Settings),
		tmpl:     tmpl,
		nav:      navBars(),
		results:  newResults(ResultsBuffer.From(d.Settings)),
		domains:  &domainStore{settings: d.Settings, rdb: d.Redis, log: d.Log},
		shutdown: make(chan struct{}),
	}
	c.mux = c.routes(static)
	c.firehose = newFirehose(d.Kafka, d.KafkaClient, d.KafkaRetry, c.results, d.Log)
	if LiveAtStart.From(d.Settings) {
		c.firehose.start()
	}
	return c, nil
}

// Shutdown ends the Live page's streams, so the HTTP server can shut down
// without waiting for them (http.Server.RegisterOnShutdown).
func (c *Console) Shutdown() { c.shutdownOnce.Do(func() { close(c.shutdown) }) }

// Close stops reading the firehose and closes the domain configuration
// store. Call it after the HTTP server stopped.
func (c *Console) Close() {
	c.closeOnce.Do(func() {
		c.Shutdown()
		c.firehose.close()
		c.domains.close()
	})
}

// IsConsolePath reports whether a request path is the console's.
func IsConsolePath(path string) bool { return path == "/ui" || strings.HasPrefix(path, Prefix) }

// ServeHTTP serves the console's pages under /ui/.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			c.log.Error("Console: uncaught panic", logfactory.Extra{"path": r.URL.Path, "cause": fmt.Sprint(p), "ex": string(debug.Stack())})
			http.Error(w, "The console failed to answer this request.", http.StatusInternalServerError)
		}
	}()
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	c.mux.ServeHTTP(w, r)
}

// maxForm bounds the body of the console's forms and API console requests.
const maxForm = 1 << 20

type handler func(c *Console, w http.ResponseWriter, r *http.Request)

// page is one of the console's pages: a row of pages.
type page struct {
	// path is the page's path under /ui/ ("" the overview).
	path string
	// name names its template, templates/<name>.html, which defines
	// "content" inside layout.html; "" for a path that is no page.
	name string
	// nav is the page's entry in the navigation bar ("" none); under names
	// the page whose entry is current while this one is shown.
	nav, under string
	// get serves GET and HEAD, post the changes posted from the page.
	get, post handler
}

// pages are the console's pages. Adding one takes its template, its
// handlers and a row here.
var pages = []page{
	{path: "", name: "overview", nav: "Overview", get: (*Console).overviewPage},
	{path: "crawls", name: "crawls", nav: "Crawls", get: (*Console).crawlsPage},
	{path: "crawl", name: "crawl", under: "crawls", get: (*Console).crawlPage, post: (*Console).crawlAction},
	{path: "submit", name: "submit", nav: "Submit", get: (*Console).submitPage, post: (*Console).submitCrawl},
	{path: "try", name: "try", nav: "Try", get: (*Console).tryPage, post: (*Console).tryRequest},
	{path: "domains", name: "domains", nav: "Domains", get: (*Console).domainsPage, post: (*Console).domainAction},
	{path: "live", name: "live", nav: "Live", get: (*Console).livePage},
	{path: "live/events", get: (*Console).liveEvents}, // the Live page's Server-Sent Events
	{path: "api", name: "api", nav: "API", get: (*Console).apiPage, post: (*Console).apiSend},
}

// notFoundPage is the template of a page that is not there.
const notFoundPage = "notfound"

// routes serves the pages by path and method, the assets under static/,
// and /ui as /ui/. Another method is 405 with the methods the path allows,
// another path the not-found page.
func (c *Console) routes(static fs.FS) *http.ServeMux {
	mux := http.NewServeMux()
	notAllowed := func(pattern string, allow ...string) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, _ *http.Request) { methodNotAllowed(w, allow...) })
	}
	mux.Handle("/ui", http.RedirectHandler(Prefix, http.StatusMovedPermanently))
	assets := http.StripPrefix(Prefix+"static/", http.FileServerFS(static))
	mux.HandleFunc(http.MethodGet+" "+Prefix+"static/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		assets.ServeHTTP(w, r)
	})
	notAllowed(Prefix+"static/", http.MethodGet, http.MethodHead)
	for _, p := range pages {
		pattern := Prefix + p.path
		if p.path == "" {
			pattern += "{$}"
		}
		var allow []string
		if p.get != nil {
			mux.HandleFunc(http.MethodGet+" "+pattern, func(w http.ResponseWriter, r *http.Request) { c.show(p.get, w, r) })
			allow = append(allow, http.MethodGet, http.MethodHead)
		}
		if p.post != nil {
			mux.HandleFunc(http.MethodPost+" "+pattern, func(w http.ResponseWriter, r *http.Request) { c.change(p.post, w, r) })
			allow = append(allow, http.MethodPost)
		}
		notAllowed(pattern, allow...)
	}
	mux.HandleFunc(Prefix, func(w http.ResponseWriter, r *http.Request) {
		c.render(w, r, http.StatusNotFound, notFoundPage, "Not found", nil)
	})
	return mux
}

// show serves a page; the crawled firehose is read from the first one on.
func (c *Console) show(h handler, w http.ResponseWriter, r *http.Request) {
	c.firehose.start()
	h(c, w, r)
}

// change serves a POST to a page: only from the console's own pages, and
// with a bounded body.
func (c *Console) change(h handler, w http.ResponseWriter, r *http.Request) {
	if err := access.SameOrigin(r); err != nil {
		c.log.Warning("Console: refused a cross-origin request", logfactory.Extra{"path": r.URL.Path, "error": err.Error()})
		http.Error(w, "The console takes changes only from its own pages ("+err.Error()+").", http.StatusForbidden)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	c.show(h, w, r)
}

func methodNotAllowed(w http.ResponseWriter, methods ...string) {
	w.Header().Set("Allow", strings.Join(methods, ", "))
	http.Error(w, "The method is not allowed for the requested URL.", http.StatusMethodNotAllowed)
}

// readTimeout bounds the Redis and ZooKeeper reads of one page.
const readTimeout = 10 * time.Second

func pageContext(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), readTimeout)
}

// domainStore opens the domain configuration store on first use, and again
// after a failure.
type domainStore struct {
	settings *settings.Settings
	rdb      redis.UniversalClient
	log      *logfactory.Logger
	mu       sync.Mutex
	store    domainconfig.Store
}

func (d *domainStore) get(ctx context.Context) (domainconfig.Document, error) {
	d.mu.Lock()
	if d.store == nil {
		s, err := domainconfig.FromSettings(d.settings, d.rdb, d.log)
		if err != nil {
			d.mu.Unlock()
			return domainconfig.Document{}, fmt.Errorf("open the domain configuration: %w", err)
		}
		d.store = s
	}
	s := d.store
	d.mu.Unlock()
	return s.Get(ctx)
}

func (d *domainStore) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.store != nil {
		_ = d.store.Close()
		d.store = nil
	}
}
