package redisconn

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// Waiting for replicas (docs/redis-cluster.md#waiting-for-replicas): a
// write made with a Waiter's context (Waiter.Context) is followed, on the
// same connection, by Redis's WAIT <REDIS_WAIT_REPLICAS>
// <REDIS_WAIT_TIMEOUT_MS>: a command alone becomes a pipeline of the
// command and WAIT, a pipeline gets WAIT at its end, and a cluster
// client's pipeline, split by master, gets a WAIT at the end of each
// master's part. WAIT waits until that many replicas hold every write the
// connection made, or the timeout passes; when fewer replicas answer (a
// shard without replicas, just after a failover; a replica far behind)
// the write carries on all the same, counted and logged (Waiter.Short):
// never a stalled cluster.
var (
	WaitReplicas = settings.Int("REDIS_WAIT_REPLICAS", 0, "replicas the writes that record accepted work wait for (Redis `WAIT`), so a failover loses none of them; 0: no waiting (asynchronous replication), see docs/redis-cluster.md#waiting-for-replicas").Ours()
	WaitTimeout  = settings.Millis("REDIS_WAIT_TIMEOUT_MS", 500, "milliseconds a write waits for `REDIS_WAIT_REPLICAS` replicas before it carries on with a warning (must be positive and under `REDIS_SOCKET_TIMEOUT`)").Ours()
)

// waitWarnEvery spaces the warnings of writes fewer replicas acknowledged:
// after a failover every write to the shard without replicas comes short.
const waitWarnEvery = 10 * time.Second

// A Waiter makes the writes done with its context wait for replicas
// (REDIS_WAIT_REPLICAS), and counts those fewer replicas acknowledged.
// A nil *Waiter waits for nothing.
type Waiter struct {
	replicas  int
	timeoutMS int64
	log       *logfactory.Logger
	short     prometheus.Counter

	mu       sync.Mutex
	warned   time.Time
	unwarned int // short writes since the last warning
}

// NewWaiter returns the Waiter of s's REDIS_WAIT_REPLICAS and
// REDIS_WAIT_TIMEOUT_MS, logging to log, or nil when REDIS_WAIT_REPLICAS
// is 0. The clients the waited writes use must come from New (or have had
// EnableWait).
func NewWaiter(s *settings.Settings, log *logfactory.Logger) (*Waiter, error) {
	n, timeout := WaitReplicas.From(s), WaitTimeout.From(s)
	switch {
	case n < 0:
		return nil, fmt.Errorf("%s=%d: must be 0 or more", WaitReplicas.Name(), n)
	case n == 0:
		return nil, nil
	case timeout < time.Millisecond: // WAIT n 0 would block for ever
		return nil, fmt.Errorf("%s=%s: must be at least 1 ms", WaitTimeout.Name(), timeout)
	case timeout >= SocketTimeout.From(s):
		return nil, fmt.Errorf("%s=%s: must be under %s (%s), or the connection times out while WAIT waits",
			WaitTimeout.Name(), timeout, SocketTimeout.Name(), SocketTimeout.From(s))
	}
	return &Waiter{replicas: n, timeoutMS: timeout.Milliseconds(), log: log, short: prometheus.NewCounter(prometheus.CounterOpts{
		Name: "scrapy_redis_wait_short_total",
		Help: "Writes that waited for REDIS_WAIT_REPLICAS replicas (Redis WAIT) and carried on with fewer after REDIS_WAIT_TIMEOUT_MS.",
	})}, nil
}

// waitKey is the context key of the Waiter of a context's writes.
type waitKey struct{}

// Context is ctx whose writes wait for replicas; ctx itself when w is nil.
func (w *Waiter) Context(ctx context.Context) context.Context {
	if w == nil {
		return ctx
	}
	return context.WithValue(ctx, waitKey{}, w)
}

// Replicas is REDIS_WAIT_REPLICAS (0 for a nil Waiter).
func (w *Waiter) Replicas() int {
	if w == nil {
		return 0
	}
	return w.replicas
}

// Collector is the Waiter's metric, scrapy_redis_wait_short_total (nil
// for a nil Waiter).
func (w *Waiter) Collector() prometheus.Collector {
	if w == nil {
		return nil
	}
	return w.short
}

// came is what WAIT on addr answered: acked replicas, or err.
func (w *Waiter) came(addr string, acked int64, err error) {
	if err == nil && acked >= int64(w.replicas) {
		return
	}
	w.short.Inc()
	w.mu.Lock()
	w.unwarned++
	now := time.Now()
	if now.Sub(w.warned) < waitWarnEvery {
		w.mu.Unlock()
		return
	}
	n := w.unwarned
	w.warned, w.unwarned = now, 0
	w.mu.Unlock()
	extra := logfactory.Extra{"node": addr, "acknowledged": acked, "wanted": w.replicas, "timeout_ms": w.timeoutMS,
		"short_writes": n, "setting": WaitReplicas.Name()}
	if err != nil {
		extra["error"] = err.Error()
	}
	w.log.Warning("Fewer replicas than asked acknowledged a write in time; carrying on (a failover now may lose it)", extra)
}

// EnableWait makes c's writes wait for replicas when their context is a
// Waiter's: on every node of a cluster client (those it makes later; call
// it before c's first command), on c itself otherwise. New calls it.
func EnableWait(c redis.UniversalClient) {
	switch c := c.(type) {
	case *redis.ClusterClient:
		c.OnNewNode(func(n *redis.Client) { n.AddHook(waitHook{n}) })
	case *redis.Client:
		c.AddHook(waitHook{c})
	}
}

// waitHook ends each pipeline of a Waiter's context on its node with
// WAIT, and sends a command alone of such a context as a pipeline of it
// and WAIT (pipelines run no command hooks, so this does not recurse).
type waitHook struct{ node *redis.Client }

// connSetup are the commands a client sends on its own with the context
// of the call it serves, which the hook passes on as they are: those a new
// connection sends to set itself up, on itself, and a cluster client's
// reads of the cluster's shape (on any node, replicas included).
var connSetup = map[string]bool{"hello": true, "auth": true, "select": true, "client": true, "readonly": true, "readwrite": true,
	"ping": true, "cluster": true, "command": true, "info": true}

func (waitHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h waitHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if _, ok := ctx.Value(waitKey{}).(*Waiter); !ok || connSetup[cmd.Name()] {
			return next(ctx, cmd)
		}
		_, _ = h.node.Pipelined(ctx, func(p redis.Pipeliner) error { return p.Process(ctx, cmd) })
		return cmd.Err()
	}
}

func (h waitHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		w, ok := ctx.Value(waitKey{}).(*Waiter)
		if !ok || setupOnly(cmds) {
			return next(ctx, cmds)
		}
		wait := redis.NewIntCmd(ctx, "wait", w.replicas, w.timeoutMS)
		err := next(ctx, append(cmds[:len(cmds):len(cmds)], wait))
		if !cmdsOK(cmds) {
			return err // the writes' own error: nothing was waited for
		}
		// WAIT's answer, or its failure, is the Waiter's to report: the
		// writes succeeded.
		w.came(h.node.Options().Addr, wait.Val(), wait.Err())
		return nil
	}
}

// cmdsOK reports whether no command of cmds failed (a nil reply is no
// failure).
func cmdsOK(cmds []redis.Cmder) bool {
	for _, c := range cmds {
		if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) {
			return false
		}
	}
	return true
}

// setupOnly reports whether cmds are nothing but a connection's set-up.
func setupOnly(cmds []redis.Cmder) bool {
	for _, c := range cmds {
		if !connSetup[c.Name()] {
			return false
		}
	}
	return true
}
