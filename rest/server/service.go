// Package server is the REST service: an HTTP gateway into the cluster for
// applications that do not speak Kafka, compatible with Scrapy Cluster 1.3's
// rest_service.py.
//
//	GET|POST /   the service's state: kafka_connected, redis_connected, my_id, node_health, uptime_sec
//	POST /feed   validate a request against the Kafka Monitor's schemas and send it to the
//	             incoming topic; for a request with a uuid, wait for its answer
//	POST /poll   an answer /feed stopped waiting for, by {"poll_id": <uuid>}
//	GET /crawls  (Go) crawls with their progress, newest first, from the crawl ledger
//	GET /crawls/<crawlid>  (Go) one crawl's progress and what each domain queue holds of it
//	GET  /ui/    the operator console (package console; UI_ENABLED), which
//	             sends its changes through /feed in process
//
// Every answer but the index's is wrapped as {"data", "error", "status"}.
// One consumer of the outbound topic per service feeds the waiting /feed
// requests and keeps the answers nobody waits for at rest:poll:<uuid>, so a
// /poll on any instance finds them. Kafka and Redis may come and go: their
// state is checked in the background (with back-off while down), and the
// service heartbeats stats:rest:self:<host>:<id> for the Redis Monitor's
// rest stats.
package server

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/time/rate"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/trial"
	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin"
	"github.com/scrapycluster/scrapy-cluster-go/rest/access"
	"github.com/scrapycluster/scrapy-cluster-go/rest/answers"
	"github.com/scrapycluster/scrapy-cluster-go/rest/console"
	"github.com/scrapycluster/scrapy-cluster-go/rest/frontier"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/admin"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/heartbeat"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/kafkaclient"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/lifecycle"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisconn"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

//go:embed poll_schema.json
var pollSchemaJSON []byte

//go:embed recrawl_cancel_schema.json
var cancelSchemaJSON []byte

// Service is one REST service instance.
type Service struct {
	settings *settings.Settings
	log      *logfactory.Logger
	rdb      redis.UniversalClient
	// front reads the crawls and queues in the settings' key layout
	// (every master of a Redis Cluster).
	front   frontier.Reader
	id      string
	started time.Time

	api        *http.ServeMux // routes
	plugins    []plugin.Loaded
	pollSchema *plugin.Schema
	// cancelSchema checks POST /recrawl/cancel's body.
	cancelSchema *plugin.Schema
	waiters      *answers.Waiters
	store        *answers.Store
	kafka        *kafkaSide
	kafkaLink    *link
	redisLink    *link

	waitFor   time.Duration
	feedLimit time.Duration
	maxBody   int64
	accessLog io.Writer // nil: no access log
	metrics   *metrics
	admin     *admin.Server // nil: no admin endpoints (see ServeAdmin)

	readTimeout, writeTimeout time.Duration // HTTP_READ_TIMEOUT, HTTP_WRITE_TIMEOUT
	joinTimeout               time.Duration // DAEMON_THREAD_JOIN_TIMEOUT
	addr                      string        // FLASK_HOST:FLASK_PORT

	access  access.Policy
	console *console.Console // nil: UI_ENABLED is false

	trier    *trial.Trier  // POST /try's fetcher
	tryLimit *rate.Limiter // TRY_RATE, TRY_BURST

	bgCancel  context.CancelFunc
	bg        sync.WaitGroup
	closeOnce sync.Once
}

// Option changes how New builds a Service.
type Option func(*options)

type options struct {
	accessLog io.Writer
}

// WithAccessLog sends the access log (when FLASK_LOGGING_ENABLED) to w
// instead of standard error.
func WithAccessLog(w io.Writer) Option { return func(o *options) { o.accessLog = w } }

// New checks the settings, compiles the schemas and starts the background
// work: the Redis and Kafka connection checks, the answers consumer (once
// Kafka is reached), the poll store writer and the heartbeat. rdb is the
// Redis client to use; the caller closes it after Close.
func New(ctx context.Context, s *settings.Settings, log *logfactory.Logger, rdb redis.UniversalClient, opts ...Option) (*Service, error) {
	cfg, err := configFromSettings(s)
	if err != nil {
		return nil, err
	}
	kcfg, err := kafkaclient.ConfigFromSettings(s)
	if err != nil {
		return nil, err
	}
	plugins, err := plugin.LoadPlugins(s)
	if err != nil {
		return nil, err
	}
	pollSchema, err := plugin.CompileSchema("poll", pollSchemaJSON)
	if err != nil {
		return nil, err
	}
	cancelSchema, err := plugin.CompileSchema("recrawl cancel", cancelSchemaJSON)
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	svc := &Service{
		settings: s, log: log, rdb: rdb, front: frontier.New(s, rdb), id: heartbeat.NewID(), started: time.Now(),
		plugins: plugins, pollSchema: pollSchema, cancelSchema: cancelSchema, waiters: answers.NewWaiters(),
		waitFor: cfg.waitFor, feedLimit: cfg.feedLimit, maxBody: cfg.maxBody,
		readTimeout: cfg.readTimeout, writeTimeout: cfg.writeTimeout, joinTimeout: cfg.joinTimeout, addr: APIAddr(s),
	}
	o := options{accessLog: os.Stderr}
	for _, opt := range opts {
		opt(&o)
	}
	if cfg.accessLog {
		svc.accessLog = o.accessLog
	}
	if svc.trier, svc.tryLimit, err = newTrier(s); err != nil {
		return nil, err
	}
	svc.metrics = newMetrics(svc)
	svc.api = svc.routes()

	pingTimeout := redisconn.SocketTimeout.From(s)
	svc.redisLink = newLink("Redis", cfg.redisEvery, log, func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, pingTimeout)
		defer cancel()
		return redisconn.Ping(ctx, rdb)
	})
	svc.store = answers.NewStore(rdb, cfg.pollTTL, log)
	svc.store.OnError = svc.redisLost

	client := newKafkaClient(kcfg, cfg.kafkaEvery)
	outbound := kcfg.Topic("outbound_firehose")
	svc.kafka = &kafkaSide{
		cfg: kcfg, client: client,
		incoming: cfg.incoming, incomingPartitions: cfg.incomingPartitions,
		outbound: outbound, sendTimeout: svc.feedLimit,
		consumer: answers.NewConsumer(kcfg, client, outbound, svc.waiters, svc.store, log),
	}
	svc.kafkaLink = newLink("Kafka", cfg.kafkaEvery, log, svc.kafka.check)
	if err := svc.setUpConsole(rdb, cfg.kafkaEvery); err != nil {
		return nil, err
	}

	svc.store.Start(context.WithoutCancel(ctx)) // stopped by Close, after the consumer
	bg, cancel := context.WithCancel(context.WithoutCancel(ctx))
	svc.bgCancel = cancel
	svc.goBackground(func() { svc.redisLink.run(bg) })
	svc.goBackground(func() { svc.kafkaLink.run(bg) })
	svc.goBackground(func() {
		heartbeat.Run(bg, rdb, rediskeys.HeartbeatKey("rest", host, svc.id), cfg.heartbeat, log)
	})
	log.Debug("Rest service set up", logfactory.Extra{"id": svc.id, "incoming": svc.kafka.incoming, "outbound": outbound})
	return svc, nil
}

func (svc *Service) goBackground(f func()) {
	svc.bg.Add(1)
	go func() {
		defer svc.bg.Done()
		f()
	}()
}

// redisLost is told of failed Redis calls made for requests and answers.
func (svc *Service) redisLost(err error) {
	if errors.Is(err, context.Canceled) {
		return // the caller went away, Redis did not
	}
	svc.redisLink.lost(err)
}

// ID is this instance's id (my_id; the last part of its heartbeat key).
func (svc *Service) ID() string { return svc.id }

// KafkaConnected reports whether Kafka is reachable and answers are being read.
func (svc *Service) KafkaConnected() bool { return svc.kafkaLink.connected() }

// RedisConnected reports whether Redis is reachable.
func (svc *Service) RedisConnected() bool { return svc.redisLink.connected() }

// Waiting returns how many /feed requests are waiting for answers.
func (svc *Service) Waiting() int { return svc.waiters.Len() }

// Handler returns the service's HTTP handler (/, /feed, /poll, /crawls, and
// the console under /ui/).
func (svc *Service) Handler() http.Handler {
	h := svc.withConsole(http.HandlerFunc(svc.route))
	if svc.accessLog != nil {
		h = accessLogged(h, svc.accessLog)
	}
	return svc.instrumented(h)
}

// ListenAndServe listens on FLASK_HOST:FLASK_PORT and serves until ctx is
// done (see Serve).
func (svc *Service) ListenAndServe(ctx context.Context) error {
	addr := svc.addr
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("listen on %s: the port is taken by another program; choose another with --port (setting FLASK_PORT), "+
				"or --host (FLASK_HOST) for another address: %w", addr, err)
		}
		return fmt.Errorf("listen on %s (--host/--port, settings FLASK_HOST/FLASK_PORT): %w", addr, err)
	}
	return svc.Serve(ctx, ln)
}

// Serve answers HTTP requests on ln until ctx is done, then shuts down
// gracefully: it stops accepting connections and lets the requests in
// flight finish (within HTTP_WRITE_TIMEOUT, which bounds every request
// anyway). The background work keeps running until Close, so requests
// waiting for answers still get them.
func (svc *Service) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           svc.Handler(),
		ReadHeaderTimeout: svc.readTimeout,
		ReadTimeout:       svc.readTimeout,
		WriteTimeout:      svc.writeTimeout,
		ErrorLog:          log.New(serverErrors{svc.log}, "", 0),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	srv.RegisterOnShutdown(svc.shutDownConsole)
	svc.log.Info("Running main flask method on port "+portOf(ln.Addr()), logfactory.Extra{"address": ln.Addr().String(), "id": svc.id})
	err := lifecycle.ServeHTTP(ctx, srv, ln, svc.writeTimeout)
	svc.log.Info("Closing Rest Service")
	return err
}

func portOf(a net.Addr) string {
	if tcp, ok := a.(*net.TCPAddr); ok {
		return strconv.Itoa(tcp.Port)
	}
	return a.String()
}

// serverErrors sends net/http's own error lines (bad TLS, accept errors) to the log.
type serverErrors struct{ log *logfactory.Logger }

func (e serverErrors) Write(p []byte) (int, error) {
	e.log.Warning("HTTP server: " + strings.TrimSpace(string(p)))
	return len(p), nil
}

// Close stops the background work: the connection checks and the
// heartbeat (whose key it deletes), then the answers consumer, the producer
// (after sending what it accepted) and the poll store (after one attempt at
// each answer it holds). It waits up to DAEMON_THREAD_JOIN_TIMEOUT for them.
// Call it after Serve returned.
func (svc *Service) Close() {
	svc.closeOnce.Do(func() {
		done := make(chan struct{})
		go func() {
			defer close(done)
			svc.bgCancel()
			svc.bg.Wait()
			svc.closeConsole()
			svc.kafka.close()
			svc.store.Close()
			svc.trier.Close()
		}()
		select {
		case <-done:
		case <-time.After(svc.joinTimeout):
			svc.bgCancel()
			svc.log.Warning("Background work did not stop within DAEMON_THREAD_JOIN_TIMEOUT")
		}
	})
}
