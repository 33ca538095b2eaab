// Package console is the operator console the REST service serves under
// /ui/: server-rendered pages (html/template) with a little JavaScript,
// every asset embedded in the binary, nothing fetched from elsewhere.
//
//	/ui/          Overview: components alive, responses per minute, backlog, failures
//	/ui/crawls    Crawls: active and recent crawls from the crawl ledger
//	/ui/crawl     one crawl: its ledger, domain queues, latest results; Stop and Expire
//	/ui/submit    Submit: a form for every Crawl API field
//	/ui/domains   Domains: backlog per domain queue, throttles and blacklist, edited
//	/ui/live      Live: crawl results as they arrive (Server-Sent Events from /ui/live/events)
//	/ui/api       API console: any JSON request to /feed, then /poll
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
	Redis *redis.Client
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
	rdb      *redis.Client
	api      http.Handler
	state    func() State
	refresh  time.Duration
	appID    string
	pages    map[string]*template.Template
	static   http.Handler
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
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, fmt.Errorf("console assets: %w", err)
	}
	c := &Console{
		settings: d.Settings, log: d.Log, rdb: d.Redis, api: d.API, state: d.State,
		refresh: Refresh.From(d.Settings), appID: AppID.From(d.Settings),
		pages: pages, static: http.StripPrefix(Prefix+"static/", http.FileServerFS(static)),
		results:  newResults(ResultsBuffer.From(d.Settings)),
		domains:  &domainStore{settings: d.Settings, rdb: d.Redis, log: d.Log},
		shutdown: make(chan struct{}),
	}
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
	if r.URL.Path == "/ui" {
		http.Redirect(w, r, Prefix, http.StatusMovedPermanently)
		return
	}
	if strings.HasPrefix(r.URL.Path, Prefix+"static/") {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			methodNotAllowed(w, http.MethodGet, http.MethodHead)
			return
		}
		h.Set("Cache-Control", "no-cache")
		c.static.ServeHTTP(w, r)
		return
	}
	c.firehose.start()
	route, ok := routes[strings.TrimPrefix(r.URL.Path, Prefix)]
	if !ok {
		c.render(w, r, http.StatusNotFound, "notfound", "Not found", nil)
		return
	}
	switch {
	case r.Method == http.MethodGet || r.Method == http.MethodHead:
		if route.get == nil {
			methodNotAllowed(w, route.methods()...)
			return
		}
		route.get(c, w, r)
	case r.Method == http.MethodPost && route.post != nil:
		if err := access.SameOrigin(r); err != nil {
			c.log.Warning("Console: refused a cross-origin request", logfactory.Extra{"path": r.URL.Path, "error": err.Error()})
			http.Error(w, "The console takes changes only from its own pages ("+err.Error()+").", http.StatusForbidden)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxForm)
		route.post(c, w, r)
	default:
		methodNotAllowed(w, route.methods()...)
	}
}

// maxForm bounds the body of the console's forms and API console requests.
const maxForm = 1 << 20

type handler func(c *Console, w http.ResponseWriter, r *http.Request)

type route struct{ get, post handler }

func (rt route) methods() []string {
	var m []string
	if rt.get != nil {
		m = append(m, http.MethodGet, http.MethodHead)
	}
	if rt.post != nil {
		m = append(m, http.MethodPost)
	}
	return m
}

// routes are the console's pages by path under /ui/.
var routes = map[string]route{
	"":            {get: (*Console).overviewPage},
	"crawls":      {get: (*Console).crawlsPage},
	"crawl":       {get: (*Console).crawlPage, post: (*Console).crawlAction},
	"submit":      {get: (*Console).submitPage, post: (*Console).submitCrawl},
	"domains":     {get: (*Console).domainsPage, post: (*Console).domainAction},
	"live":        {get: (*Console).livePage},
	"live/events": {get: (*Console).liveEvents},
	"api":         {get: (*Console).apiPage, post: (*Console).apiSend},
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
	rdb      *redis.Client
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
