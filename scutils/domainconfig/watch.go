package domainconfig

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/zkwatch"
)

// DefaultResync is how often WatchRedis reads the document unprompted.
// WatchZooKeeper relies on ZooKeeper's watches and reads it every
// zkwatch.DefaultResyncInterval.
const DefaultResync = 10 * time.Second

// WatchOption tunes Watch, WatchRedis and WatchZooKeeper.
type WatchOption func(*watchOptions)

type watchOptions struct {
	log    *logfactory.Logger
	resync time.Duration // 0: the store's default
}

// WithLogger logs read failures, malformed documents and connection
// trouble to log (default: not logged).
func WithLogger(log *logfactory.Logger) WatchOption {
	return func(o *watchOptions) { o.log = log }
}

// WithResync sets how often the document is read without an announcement,
// a safety net for a lost one (default DefaultResync in Redis,
// zkwatch.DefaultResyncInterval in ZooKeeper).
func WithResync(d time.Duration) WatchOption {
	return func(o *watchOptions) {
		if d > 0 {
			o.resync = d
		}
	}
}

func watchOptionsOf(opts []WatchOption) watchOptions {
	var o watchOptions
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// Watch follows the document where the settings put it, as FromSettings
// finds it: the ZooKeeper node (WatchZooKeeper) when ZOOKEEPER_HOSTS is
// set, otherwise the Redis key on rdb (WatchRedis). Whichever the store,
// onChange is called once as soon as the document has been read (the empty
// document if there is none yet), then after each change; it is never
// called while the store is unreachable, so the last document delivered
// stays in force. A document that does not parse is logged and skipped.
// Documents that differ only in formatting count as unchanged. onChange is
// called from Watch's goroutine, one call at a time. Watch blocks until ctx
// ends and then returns nil; it fails at once only for invalid settings.
func Watch(ctx context.Context, s *settings.Settings, rdb redis.UniversalClient, onChange func(Document), opts ...WatchOption) error {
	loc, err := locate(s)
	if err != nil {
		return err
	}
	if loc.zkHosts != nil {
		return WatchZooKeeper(ctx, loc.zkHosts, loc.path, onChange, opts...)
	}
	if rdb == nil {
		return errNoRedis
	}
	return WatchRedis(ctx, rdb, loc.path, onChange, opts...)
}

// WatchZooKeeper follows the document a ZooKeeperStore keeps at path on
// hosts, as Watch describes; the node (and its parents) is created empty
// when missing, as kazoo's ensure_path does. It connects in the background
// and rides out outages with back-off (see package zkwatch). It blocks
// until ctx ends and then returns nil; it fails at once only for an
// invalid path or no hosts.
func WatchZooKeeper(ctx context.Context, hosts []string, path string, onChange func(Document), opts ...WatchOption) error {
	o := watchOptionsOf(opts)
	d := &deliverer{store: "ZooKeeper", log: o.log, extra: logfactory.Extra{"path": path}, onChange: onChange}
	// The handlers run one at a time on the watcher's goroutine, so
	// contents needs no lock.
	var contents string
	w, err := zkwatch.New(ctx, zkwatch.Config{
		Hosts: hosts, Path: path, Ensure: true, ResyncInterval: o.resync,
		Logger: zkLogger(o.log, logfactory.LevelDebug),
		OnConfig: func(c string) {
			contents = c
			d.offer([]byte(c))
		},
		// The watcher does not report an empty node at start as a
		// change; it is the empty document all the same.
		OnValid: func(valid bool) {
			if valid {
				d.offer([]byte(contents))
			}
		},
		OnError: func(msg string) {
			if o.log != nil {
				o.log.Warning("Domain config source in trouble; keeping the last good config", logfactory.Extra{"path": path, "message": msg})
			}
		},
	})
	if err != nil {
		return err
	}
	<-ctx.Done()
	w.Close()
	return nil
}

// WatchRedis follows the document a RedisStore keeps for path, as Watch
// describes. It blocks until ctx ends and then returns nil; it fails at
// once only for an invalid path.
//
// Changes are noticed through the store's announcements and, in case one is
// missed, by reading the document again every resync interval and whenever
// the subscription is re-established after a lost connection. Each wake-up
// reads the key itself rather than trusting the message, so onChange never
// sees an older version after a newer one.
func WatchRedis(ctx context.Context, rdb redis.UniversalClient, path string, onChange func(Document), opts ...WatchOption) error {
	if err := zkwatch.ValidatePath(path); err != nil {
		return err
	}
	o := watchOptionsOf(opts)
	if o.resync == 0 {
		o.resync = DefaultResync
	}
	store := NewRedisStore(rdb, path)
	w := &redisWatch{store: store, deliver: &deliverer{
		store: "Redis", log: o.log, extra: logfactory.Extra{"key": store.key}, onChange: onChange,
	}}

	// Subscribe before the first read, so no change falls between them.
	sub := rdb.Subscribe(ctx, w.store.channel)
	defer sub.Close()
	// Subscription confirmations come again after each reconnection.
	events := sub.ChannelWithSubscriptions()
	resync := time.NewTicker(o.resync)
	defer resync.Stop()

	w.check(ctx)
	for {
		select {
		case <-ctx.Done():
			return nil
		case _, ok := <-events:
			if !ok {
				return nil
			}
			// One read covers every announcement already waiting.
			for drained := false; !drained; {
				select {
				case _, ok = <-events:
					drained = !ok
				default:
					drained = true
				}
			}
			w.check(ctx)
		case <-resync.C:
			w.check(ctx)
		}
	}
}

// redisWatch is WatchRedis's state.
type redisWatch struct {
	store   *RedisStore
	deliver *deliverer
	failing bool // the last read failed
}

// check reads the document and delivers it if it changed.
func (w *redisWatch) check(ctx context.Context) {
	data, err := w.store.rdb.Get(ctx, w.store.key).Bytes()
	if errors.Is(err, redis.Nil) {
		data, err = nil, nil
	}
	if err != nil {
		if ctx.Err() == nil && !w.failing {
			w.failing = true
			w.deliver.logError("Could not read the domain configuration from Redis; keeping the current one", err)
		}
		return
	}
	if w.failing {
		w.failing = false
		if log := w.deliver.log; log != nil {
			log.Info("Reading the domain configuration from Redis again", w.deliver.extra)
		}
	}
	w.deliver.offer(data)
}

// deliverer hands the documents read from a store to onChange: each
// different one once, malformed ones logged (once each) and skipped. One
// goroutine uses it.
type deliverer struct {
	store    string // "Redis" or "ZooKeeper", for log lines
	log      *logfactory.Logger
	extra    logfactory.Extra // where the document is
	onChange func(Document)

	delivered bool
	last      []byte // the delivered document, marshaled
	lastBad   []byte // the malformed document last logged
}

// offer delivers the document data if it parses and differs from the last
// one delivered.
func (d *deliverer) offer(data []byte) {
	doc, err := Parse(data)
	if err != nil {
		if !bytes.Equal(data, d.lastBad) {
			d.lastBad = slices.Clone(data)
			d.logError("Malformed domain configuration in "+d.store+"; keeping the last good one", err)
		}
		return
	}
	d.lastBad = nil
	canonical := doc.Marshal()
	if d.delivered && bytes.Equal(canonical, d.last) {
		return
	}
	d.delivered, d.last = true, canonical
	d.onChange(doc)
}

func (d *deliverer) logError(msg string, err error) {
	if d.log != nil {
		extra := logfactory.Extra{"error": err.Error()}
		for k, v := range d.extra {
			extra[k] = v
		}
		d.log.Error(msg, extra)
	}
}
