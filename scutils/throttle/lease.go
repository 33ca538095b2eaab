package throttle

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisscripts"
)

// Leases track items popped from priority queues but not yet finished, so
// that none is lost when the process holding it dies (the original drops
// whatever a crashed crawler had popped).
//
// A lease belongs to an owner, one per holder (a crawler process), and is
// recorded atomically with the pop (Queue.Attempt with a Lease): its
// Record (queue key, score, member) under its id "<owner>:<n>" in the hash
// <name>:items. The owner, not each lease, has a deadline: its entry in
// the sorted set <name>:owners, scored by Redis server time in whole epoch
// seconds, rounded up. The holder renews it (Renew) well before it passes,
// which keeps all of its leases, and acknowledges each lease when its item
// is done (Ack), or swaps it for a new queued item in one step (Requeue,
// for retries). Any process may Reap: the leases of an owner past its
// deadline are put back in their queues with their old score, atomically,
// so a lease is either still leased or queued again, never both and never
// neither. A holder that dies therefore loses its items for at most the
// lease TTL (and up to a second) plus the reapers' interval.
//
// Each lease costs Redis one hash field written with the pop and deleted
// with the acknowledgement, and a renewal one sorted-set write whatever
// the number of leases: the per-lease deadlines of earlier versions cost
// Redis a scan of the whole (small, flat-encoded) sorted set on every pop,
// acknowledgement and renewal.
//
// An owner found reaped (a renewal or a pop says so: Redis or the holder
// was away longer than the TTL) has lost every lease it held; the holder
// goes on under a new owner, and the acknowledgements of the old leases
// report them lost.
//
// Leases work with priority queues (sorted sets) only. Leases of earlier
// versions (one entry per lease in the sorted set <name>) are reaped too.
// The scripts that write them are lease_*.lua in package redisscripts.
type Leases struct {
	rdb               redis.Cmdable
	legacy, hash, own string // <name>, <name>:items, <name>:owners
	ttl               time.Duration
	ttlArg            string
	seq               atomic.Uint64

	mu         sync.Mutex
	owner      string // the current owner id
	registered bool   // the owner's entry was written
}

// NewLeases returns the leases kept at key name (e.g. "leases:link") with
// the given TTL. Every process sharing name must use the same TTL.
func NewLeases(rdb redis.Cmdable, name string, ttl time.Duration) (*Leases, error) {
	if ttl < time.Second {
		return nil, fmt.Errorf("leases %s: ttl must be at least a second, got %s", name, ttl)
	}
	return &Leases{rdb: rdb, legacy: name, hash: name + ":items", own: name + ":owners", ttl: ttl,
		ttlArg: strconv.FormatFloat(ttl.Seconds(), 'f', -1, 64), owner: newOwner()}, nil
}

func newOwner() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Lease names one lease for Queue.Attempt.
type Lease struct {
	leases *Leases
	// ID is the lease's id, "<owner>:<n>". Attempt may change it: when
	// the owner it was made for was found reaped, the pop goes to a new
	// owner.
	ID string
}

// New returns a fresh lease id of the current owner, unique across
// processes.
func (l *Leases) New() *Lease {
	l.mu.Lock()
	owner := l.owner
	l.mu.Unlock()
	return &Lease{leases: l, ID: owner + ":" + strconv.FormatUint(l.seq.Add(1), 10)}
}

// TTL is the leases' time to live without renewal.
func (l *Leases) TTL() time.Duration { return l.ttl }

// Keys returns the sorted set of the owners' deadlines and the hash of the
// leases' records.
func (l *Leases) Keys() (owners, hash string) { return l.own, l.hash }

// Owner returns the current owner id, the first part of new lease ids.
func (l *Leases) Owner() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.owner
}

// OwnerOf is the owner part of a lease id: "<owner>:<n>", or
// "<owner>:<n>:<m>" for the items after the first of one pop (an owner is
// hex digits).
func OwnerOf(id string) string {
	if i := strings.IndexByte(id, ':'); i >= 0 {
		return id[:i]
	}
	return id
}

// register writes the current owner's entry unless it was written
// already; Queue.Attempt calls it before a pop with a lease.
func (l *Leases) register(ctx context.Context) error {
	l.mu.Lock()
	owner, done := l.owner, l.registered
	l.mu.Unlock()
	if done {
		return nil
	}
	if err := redisscripts.Run(ctx, l.rdb, redisscripts.LeaseOwner{Owners: l.own, TTL: l.ttlArg, Owner: owner}).Err(); err != nil {
		return fmt.Errorf("register lease owner %s: %w", owner, err)
	}
	l.mu.Lock()
	if l.owner == owner {
		l.registered = true
	}
	l.mu.Unlock()
	return nil
}

// replaceOwner starts a new owner after owner was found reaped (unless
// another call replaced it already); the new one is registered by the
// next pop.
func (l *Leases) replaceOwner(owner string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.owner == owner {
		l.owner, l.registered = newOwner(), false
	}
}

// Renew pushes the deadline of the current owner, and so of all its
// leases, to now + TTL. held is false when the owner had been reaped (its
// leases are queued again, and may be crawled twice); the leases made from
// now on belong to a new owner.
func (l *Leases) Renew(ctx context.Context) (held bool, err error) {
	return l.RenewOn(ctx, l.rdb)
}

// RenewOn is Renew through rdb instead of the leases' own client: a holder
// that keeps connections for its renewals alone never has a renewal wait for
// a connection behind its other commands (pops, acknowledgements), which
// under load can take longer than the TTL.
func (l *Leases) RenewOn(ctx context.Context, rdb redis.Scripter) (held bool, err error) {
	run, ok := l.Renewal()
	if !ok {
		return true, nil // nothing leased under this owner yet
	}
	n, err := redisscripts.Run(ctx, rdb, run).Int()
	if err != nil {
		return false, fmt.Errorf("renew leases: %w", err)
	}
	return l.Renewed(run, n), nil
}

// Renewal is the run of lease_owner.lua that renews the current owner
// (RenewOn's), for a holder that sends the renewals of many sets at once
// (redisscripts.RunPipelined); ok is false when nothing was leased under
// the owner yet (nothing to renew). Give its answer to Renewed.
func (l *Leases) Renewal() (run redisscripts.LeaseOwner, ok bool) {
	l.mu.Lock()
	owner, registered := l.owner, l.registered
	l.mu.Unlock()
	return redisscripts.LeaseOwner{Owners: l.own, TTL: l.ttlArg, Owner: owner, Renew: true}, registered
}

// Renewed takes the answer n of run (Renewal's) and says whether the owner
// was held: false when it had been reaped (its leases are queued again),
// and the leases made from now on belong to a new owner.
func (l *Leases) Renewed(run redisscripts.LeaseOwner, n int) (held bool) {
	if n == 0 {
		l.replaceOwner(run.Owner)
		return false
	}
	return true
}

// LoadRenewScript puts the renewal script in Redis's script cache through
// rdb, so that a renewal takes one round trip even the first time.
func (l *Leases) LoadRenewScript(ctx context.Context, rdb redis.Scripter) error {
	if err := redisscripts.Load(ctx, rdb, redisscripts.LeaseOwner{}); err != nil {
		return fmt.Errorf("load the lease renewal script: %w", err)
	}
	return nil
}

// Ack ends leases whose items are done.
func (l *Leases) Ack(ctx context.Context, ids ...string) error {
	_, err := l.AckWith(ctx, nil, ids...)
	return err
}

// AckWith ends leases whose items are done and, in the same MULTI, runs
// also (when not nil): what the acknowledgement records (a crawl ledger's
// counts of what became of the items) is written in the same step as the
// leases end. It returns the ids that were no longer leased at that step:
// their owner's deadline passed and a reaper put their items back in their
// queues (they may be crawled again), so whatever also recorded for them is
// the caller's to take back.
func (l *Leases) AckWith(ctx context.Context, also func(redis.Pipeliner), ids ...string) (lost []string, err error) {
	if len(ids) == 0 && also == nil {
		return nil, nil
	}
	pipe := l.rdb.TxPipeline()
	var held *redis.FloatSliceCmd
	var owners []string
	if len(ids) > 0 {
		for _, id := range ids {
			if o := OwnerOf(id); !slices.Contains(owners, o) {
				owners = append(owners, o)
			}
		}
		held = pipe.ZMScore(ctx, l.own, owners...)
		pipe.HDel(ctx, l.hash, ids...)
	}
	if also != nil {
		also(pipe)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("ack leases: %w", err)
	}
	if held == nil {
		return nil, nil
	}
	// ZMSCORE answers 0 for a missing member (go-redis reads nil as 0); an
	// owner's score is its deadline, never 0. A reaper takes all of an
	// owner's leases at once, and a reaped owner gets no new ones.
	scores := held.Val()
	for _, id := range ids {
		for i, o := range owners {
			if o == OwnerOf(id) && i < len(scores) && scores[i] == 0 {
				lost = append(lost, id)
			}
		}
	}
	return lost, nil
}

// Requeue ends a lease and queues member in queue with score in one
// transaction: a retry replaces the leased item, nothing in between is lost.
func (l *Leases) Requeue(ctx context.Context, id, queue, member string, score float64) error {
	_, err := l.RequeueWith(ctx, nil, id, queue, member, score)
	return err
}

// RequeueWith is Requeue with also run in the same MULTI (as for AckWith).
// It reports whether the lease was still held; when it was not (reaped
// after its owner's deadline, its item queued again by the reaper), member
// is not queued.
func (l *Leases) RequeueWith(ctx context.Context, also func(redis.Pipeliner), id, queue, member string, score float64) (held bool, err error) {
	pipe := l.rdb.TxPipeline()
	// The script's source, not its hash: a MULTI cannot fall back to it
	// when Redis lost its script cache.
	res := redisscripts.Eval(ctx, pipe, redisscripts.LeaseRequeue{Records: l.hash, Queue: queue, LeaseID: id, Score: score, Member: member})
	if also != nil {
		also(pipe)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return false, fmt.Errorf("requeue lease %s: %w", id, err)
	}
	n, _ := res.Int()
	return n == 1, nil
}

// Reap puts the leases of up to max owners past their deadline (holders
// that died) back in their queues, and up to max leases of the earlier
// form past theirs, and returns how many items it restored. Run it
// periodically from every process.
func (l *Leases) Reap(ctx context.Context, max int) (int, error) {
	n, err := redisscripts.Run(ctx, l.rdb, redisscripts.LeaseReap{Owners: l.own, Records: l.hash, Max: max}).Int()
	if err != nil {
		return 0, fmt.Errorf("reap leases: %w", err)
	}
	old, err := redisscripts.Run(ctx, l.rdb, redisscripts.LeaseRestore{Legacy: l.legacy, Records: l.hash, Max: max}).Int()
	if err != nil {
		return n, fmt.Errorf("reap leases of the earlier form: %w", err)
	}
	return n + old, nil
}

// Release puts the given leases' items back in their queues now (a holder
// that stops without finishing them) and returns how many it restored.
func (l *Leases) Release(ctx context.Context, ids ...string) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	n, err := redisscripts.Run(ctx, l.rdb, redisscripts.LeaseRestore{Legacy: l.legacy, Records: l.hash, IDs: ids}).Int()
	if err != nil {
		return 0, fmt.Errorf("release leases: %w", err)
	}
	return n, nil
}

// Count returns how many leases are held across all processes.
func (l *Leases) Count(ctx context.Context) (int64, error) { return l.rdb.HLen(ctx, l.hash).Result() }

// errOwnerReaped is a pop's answer when the lease's owner was reaped.
var errOwnerReaped = errors.New("lease owner reaped")
