// Package throttle is the cluster-wide throttled queue (the original's
// RedisThrottledQueue): a wrapper around a redisqueue.Queue that lets pops
// through only as fast as a rolling window allows, shared by every process
// that uses the same keys. It is how crawlers on many machines together crawl a
// domain no faster than its configured hits per window.
//
// Semantics, as the original:
//   - Window and Limit: at most Limit pops in any Window (a sorted set of hit
//     times at <WindowName or queue key>:throttle_window).
//   - Moderate: pops are spread evenly, at least Window/Limit apart (the last
//     pop time is kept at <ModName or queue key>:throttle_time). Moderation is
//     off when Limit is 1, where it would change nothing.
//   - Elastic (with Moderate): once this client has popped Limit items, it may
//     break moderation to catch up while the window holds more than
//     ElasticBuffer fewer hits than Limit.
//
// Unlike the original, a pop is one Redis round trip: a Lua script checks the
// window and moderation, pops, and records the hit only when an item was
// actually popped (the original counted a hit even for an empty queue, and
// needed several round trips with WATCH retries under contention). The
// script reads the Redis server's clock, so machines with skewed clocks still
// share one window. The keys it writes (window members scored by epoch
// seconds, the moderation key holding epoch seconds as text) are the ones the
// Python original reads, so both can throttle the same queue.
package throttle

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisqueue"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisscripts"
)

// Key suffixes, as the original.
const (
	WindowSuffix   = ":throttle_window"
	ModerateSuffix = ":throttle_time"
)

// Config is a throttle's rate. Every process throttling the same queue must
// use the same Config, or they impose different limits on each other.
type Config struct {
	// Window is the rolling time window. Required.
	Window time.Duration
	// Limit is the number of pops allowed in Window. Required, at least 1.
	Limit int
	// Moderate spreads pops at least Window/Limit apart. Default false.
	Moderate bool
	// WindowName replaces the queue key as the window key's prefix
	// (the key is WindowName + ":throttle_window"). Default: the queue key.
	WindowName string
	// ModName replaces the queue key as the moderation key's prefix
	// (the key is ModName + ":throttle_time"). Default: the queue key.
	ModName string
	// Elastic lets a moderated throttle that falls behind break moderation
	// to catch up to Limit. Default false.
	Elastic bool
	// ElasticBuffer is how close to Limit the elastic catch-up goes. Default 0.
	ElasticBuffer int
}

// Status says what a pop attempt found.
type Status int

// The outcomes of TryPop.
const (
	// DeniedByWindow: Limit pops already happened within Window.
	DeniedByWindow Status = iota
	// DeniedByModeration: the last pop was less than Window/Limit ago.
	DeniedByModeration
	// Empty: the throttle allowed a pop but the queue had nothing; no hit was recorded.
	Empty
	// Popped: an item was popped and the hit recorded.
	Popped
)

func (s Status) String() string {
	switch s {
	case DeniedByWindow:
		return "denied by window"
	case DeniedByModeration:
		return "denied by moderation"
	case Empty:
		return "empty"
	case Popped:
		return "popped"
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// Queue is a throttled view of a redisqueue.Queue. It is safe for concurrent use.
type Queue[T any] struct {
	rdb        redis.Cmdable
	queue      *redisqueue.Queue[T]
	cfg        Config
	windowKey  string
	moderKey   string
	moderation time.Duration
	hitPrefix  string
	// pop is the pop script's fixed keys and arguments, formatted once.
	pop    redisscripts.Pop
	hitSeq atomic.Uint64
	// kickIn counts this client's pops up to Limit; elastic catch-up starts
	// only after it reaches Limit, as the original.
	kickIn atomic.Int64
}

// New wraps q in a throttle. rdb is the client the pops go through (it may be
// the one q uses).
func New[T any](rdb redis.Cmdable, q *redisqueue.Queue[T], cfg Config) (*Queue[T], error) {
	if cfg.Window <= 0 {
		return nil, fmt.Errorf("throttle %s: window must be positive, got %s", q.Key(), cfg.Window)
	}
	if cfg.Limit < 1 {
		return nil, fmt.Errorf("throttle %s: limit must be at least 1, got %d", q.Key(), cfg.Limit)
	}
	if cfg.ElasticBuffer < 0 {
		return nil, fmt.Errorf("throttle %s: elastic buffer must not be negative, got %d", q.Key(), cfg.ElasticBuffer)
	}
	t := &Queue[T]{rdb: rdb, queue: q, cfg: cfg}
	prefix := cfg.WindowName
	if prefix == "" {
		prefix = q.Key()
	}
	t.windowKey = prefix + WindowSuffix
	modPrefix := cfg.ModName
	if modPrefix == "" {
		modPrefix = q.Key()
	}
	t.moderKey = modPrefix + ModerateSuffix
	if cfg.Moderate && cfg.Limit != 1 {
		t.moderation = cfg.Window / time.Duration(cfg.Limit)
	}
	t.pop = redisscripts.Pop{Queue: q.Key(), Command: "RPOP", Window: t.windowKey, Moderation: t.moderKey,
		WindowSeconds:     strconv.FormatFloat(cfg.Window.Seconds(), 'f', -1, 64),
		ModerationSeconds: strconv.FormatFloat(t.moderation.Seconds(), 'f', -1, 64),
		// The window key's expiry: two windows, at least 1 s.
		Expiry: strconv.FormatInt(max(1, int64(math.Floor(2*cfg.Window.Seconds()))), 10),
		Limit:  cfg.Limit, ElasticBuffer: cfg.ElasticBuffer}
	switch q.Kind() {
	case redisqueue.Priority:
		t.pop.Command = "ZPOPMIN"
	case redisqueue.Stack:
		t.pop.Command = "LPOP"
	}
	// Window members must be unique per pop across every process.
	var id [8]byte
	_, _ = rand.Read(id[:])
	t.hitPrefix = hex.EncodeToString(id[:]) + ":"
	return t, nil
}

// Queue returns the wrapped queue.
func (t *Queue[T]) Queue() *redisqueue.Queue[T] { return t.queue }

// Config returns the throttle's rate.
func (t *Queue[T]) Config() Config { return t.cfg }

// WindowKey is the Redis key of the rolling window of hits.
func (t *Queue[T]) WindowKey() string { return t.windowKey }

// ModerateKey is the Redis key of the last moderated pop time.
func (t *Queue[T]) ModerateKey() string { return t.moderKey }

// Moderation is the minimum gap between pops, or 0 when not moderated.
func (t *Queue[T]) Moderation() time.Duration { return t.moderation }

// Push adds an item to the queue; pushes are never throttled.
func (t *Queue[T]) Push(ctx context.Context, item T) error { return t.queue.Push(ctx, item) }

// PushPriority adds an item with a priority; pushes are never throttled.
func (t *Queue[T]) PushPriority(ctx context.Context, item T, priority int) error {
	return t.queue.PushPriority(ctx, item, priority)
}

// Len returns the number of queued items.
func (t *Queue[T]) Len(ctx context.Context) (int64, error) { return t.queue.Len(ctx) }

// Clear removes the queue and its throttle keys.
func (t *Queue[T]) Clear(ctx context.Context) error {
	if err := t.rdb.Del(ctx, t.windowKey, t.moderKey).Err(); err != nil {
		return fmt.Errorf("clear throttle keys of %s: %w", t.queue.Key(), err)
	}
	return t.queue.Clear(ctx)
}

// Pop returns the next item if the throttle allows it now; ok is false when
// it does not or the queue is empty. It never waits.
func (t *Queue[T]) Pop(ctx context.Context) (item T, ok bool, err error) {
	item, status, err := t.TryPop(ctx)
	return item, status == Popped && err == nil, err
}

// TryPop is Pop that also says why nothing was popped, so a scheduler can
// tell a throttled domain from an empty one. A decode failure returns Popped
// with a *redisqueue.DecodeError: the item left the queue and the error keeps
// its bytes.
func (t *Queue[T]) TryPop(ctx context.Context) (item T, status Status, err error) {
	res, err := t.Attempt(ctx, nil)
	if err != nil || res.Status != Popped {
		return item, res.Status, err
	}
	item, err = t.queue.Decode([]byte(res.Raw))
	return item, Popped, err
}

// Result is the outcome of one Attempt.
type Result struct {
	Status Status
	// Raw is the popped item as stored (when Popped).
	Raw string
	// Score is the popped item's score in a priority queue (-priority).
	Score float64
	// Wait is how long a denial lasts at least: until the oldest hit leaves
	// the window, or until the moderation gap has passed.
	Wait time.Duration
	// More are the items popped after the first by AttemptN.
	More []Item
}

// Item is one more item of an AttemptN; with a lease, its lease id is
// the first item's plus ":<n>" (n from 2).
type Item struct {
	Raw     string
	Score   float64
	LeaseID string
}

// Attempt is one throttled pop that returns the item undecoded with its
// score, and, for a denial, how long to wait before trying again. With a
// lease (see Leases) the popped item is recorded as leased in the same
// atomic step.
func (t *Queue[T]) Attempt(ctx context.Context, lease *Lease) (Result, error) {
	return t.AttemptN(ctx, lease, 1)
}

// AttemptN is Attempt popping up to n items in the same step, as many as
// the window still allows, from a priority queue with an unmoderated
// throttle (otherwise one). Every item is a hit and, with a lease, leased.
func (t *Queue[T]) AttemptN(ctx context.Context, lease *Lease, n int) (Result, error) {
	out, errs := AttemptAll(ctx, t.rdb, []Pop[T]{{Queue: t, Lease: lease, N: n}})
	return out[0], errs[0]
}

// Pop is one queue's part of AttemptAll: Queue.AttemptN(ctx, Lease, N).
type Pop[T any] struct {
	Queue *Queue[T]
	Lease *Lease // nil: not leased
	N     int
}

// AttemptAll makes the pops, each as AttemptN, through one pipeline of c
// (on a Redis Cluster one round trip per master, the masters at once):
// the throttled pops of several domains for the price of one round trip.
// c must reach the queues' keys (the client the queues were made with).
// out[i] and errs[i] are pops[i]'s; each pop is atomic on its own, and
// an error is its pop's alone. A lone pop goes as a command, not a
// pipeline. The queues of pops must be distinct (one window hit each).
func AttemptAll[T any](ctx context.Context, c redis.Cmdable, pops []Pop[T]) (out []Result, errs []error) {
	out, errs = make([]Result, len(pops)), make([]error, len(pops))
	todo := make([]int, len(pops))
	for i := range pops {
		todo[i] = i
	}
	// A second round only for the pops whose lease owner was found reaped
	// (Redis or this process was away longer than the lease TTL: every
	// lease of the owner was reaped): they go on under a new owner.
	for round := 0; len(todo) > 0; round++ {
		var args []redisscripts.Pop
		var at []int
		for _, i := range todo {
			a, err := pops[i].Queue.prepare(ctx, pops[i].Lease, pops[i].N)
			if err != nil {
				errs[i] = err
				continue
			}
			args, at = append(args, a), append(at, i)
		}
		var cmds []*redis.Cmd
		if len(args) == 1 {
			cmds = []*redis.Cmd{redisscripts.Run(ctx, c, args[0])}
		} else {
			cmds = redisscripts.RunPipelined(ctx, c, args)
		}
		todo = todo[:0]
		for k, i := range at {
			p := pops[i]
			res, err := p.Queue.read(cmds[k], p.Lease)
			if err == errOwnerReaped && round == 0 {
				p.Lease.leases.replaceOwner(OwnerOf(p.Lease.ID))
				p.Lease.ID = p.Lease.leases.New().ID
				todo = append(todo, i)
				continue
			}
			if err == errOwnerReaped {
				err = fmt.Errorf("throttled pop from %s: %w", p.Queue.queue.Key(), err)
			}
			out[i], errs[i] = res, err
		}
	}
	return out, errs
}

// prepare is the pop script's keys and arguments for a pop of up to n
// items, leased with lease when it is not nil (whose owner it registers
// first, once).
func (t *Queue[T]) prepare(ctx context.Context, lease *Lease, n int) (redisscripts.Pop, error) {
	pop := t.pop
	pop.Elastic = t.cfg.Elastic && t.moderation > 0 && t.kickIn.Load() >= int64(t.cfg.Limit)
	pop.HitID = t.hitPrefix + strconv.FormatUint(t.hitSeq.Add(1), 10)
	pop.Max = n
	if lease != nil {
		if err := lease.leases.register(ctx); err != nil {
			return pop, err
		}
		pop.Owners, pop.Records = lease.leases.Keys()
		pop.LeaseID, pop.Owner = lease.ID, OwnerOf(lease.ID)
	}
	return pop, nil
}

// read is a pop's result from the script's answer.
func (t *Queue[T]) read(cmd *redis.Cmd, lease *Lease) (Result, error) {
	res, err := cmd.Slice()
	if err != nil {
		return Result{}, fmt.Errorf("throttled pop from %s: %w", t.queue.Key(), err)
	}
	if len(res) < 3 {
		return Result{}, fmt.Errorf("throttled pop from %s: unexpected reply %v", t.queue.Key(), res)
	}
	code, _ := res[0].(int64)
	if code == ownerReaped {
		return Result{}, errOwnerReaped
	}
	out := Result{Status: Status(code)}
	if out.Status != Popped {
		wait, _ := strconv.ParseFloat(fmt.Sprint(res[2]), 64)
		out.Wait = time.Duration(max(wait, 0) * float64(time.Second))
		return out, nil
	}
	out.Raw, _ = res[1].(string)
	if len(res) > 3 {
		out.Score, _ = strconv.ParseFloat(fmt.Sprint(res[3]), 64)
	}
	for i := 4; i+1 < len(res); i += 2 {
		p := Item{}
		p.Raw, _ = res[i].(string)
		p.Score, _ = strconv.ParseFloat(fmt.Sprint(res[i+1]), 64)
		if lease != nil {
			p.LeaseID = lease.ID + ":" + strconv.Itoa(len(out.More)+2)
		}
		out.More = append(out.More, p)
	}
	if t.kickIn.Load() < int64(t.cfg.Limit) {
		t.kickIn.Add(int64(1 + len(out.More)))
	}
	return out, nil
}

// ownerReaped is the pop script's status for a lease whose owner was
// reaped.
const ownerReaped = 4
