package domainconfig

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/zkwatch"
)

// DefaultResync is how often WatchRedis reads the document unprompted.
const DefaultResync = 10 * time.Second

// WatchOption tunes WatchRedis.
type WatchOption func(*watchOptions)

type watchOptions struct {
	log    *logfactory.Logger
	resync time.Duration
}

// WithLogger logs read failures and malformed documents to log (default:
// not logged).
func WithLogger(log *logfactory.Logger) WatchOption {
	return func(o *watchOptions) { o.log = log }
}

// WithResync sets how often the document is read without an announcement,
// a safety net for a lost one (default DefaultResync).
func WithResync(d time.Duration) WatchOption {
	return func(o *watchOptions) {
		if d > 0 {
			o.resync = d
		}
	}
}

// WatchRedis follows the document a RedisStore keeps for path and calls
// onChange with it: once as soon as it has been read (the empty document if
// there is none yet), then after each change. It blocks until ctx ends and
// then returns nil; it fails at once only for an invalid path.
//
// Changes are noticed through the store's announcements and, in case one is
// missed, by reading the document again every resync interval and whenever
// the subscription is re-established after a lost connection. Each wake-up
// reads the key itself rather than trusting the message, so onChange never
// sees an older version after a newer one. A document that does not parse
// is logged and skipped: the last good one stays in force. Documents that
// differ only in formatting count as unchanged. onChange is called from
// WatchRedis's goroutine, one call at a time.
func WatchRedis(ctx context.Context, rdb *redis.Client, path string, onChange func(Document), opts ...WatchOption) error {
	if err := zkwatch.ValidatePath(path); err != nil {
		return err
	}
	o := watchOptions{resync: DefaultResync}
	for _, opt := range opts {
		opt(&o)
	}
	w := &redisWatch{store: NewRedisStore(rdb, path), log: o.log, onChange: onChange}

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
	store    *RedisStore
	log      *logfactory.Logger
	onChange func(Document)

	delivered bool
	last      []byte // the delivered document, marshaled
	failing   bool   // the last read failed
	lastBad   []byte // the malformed document last logged
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
			w.logError("Could not read the domain configuration from Redis; keeping the current one", err)
		}
		return
	}
	if w.failing {
		w.failing = false
		if w.log != nil {
			w.log.Info("Reading the domain configuration from Redis again", logfactory.Extra{"key": w.store.key})
		}
	}
	doc, err := Parse(data)
	if err != nil {
		if !bytes.Equal(data, w.lastBad) {
			w.lastBad = slices.Clone(data)
			w.logError("Malformed domain configuration in Redis; keeping the last good one", err)
		}
		return
	}
	w.lastBad = nil
	canonical := doc.Marshal()
	if w.delivered && bytes.Equal(canonical, w.last) {
		return
	}
	w.delivered, w.last = true, canonical
	w.onChange(doc)
}

func (w *redisWatch) logError(msg string, err error) {
	if w.log != nil {
		w.log.Error(msg, logfactory.Extra{"key": w.store.key, "error": err.Error()})
	}
}
