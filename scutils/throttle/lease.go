package throttle

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Leases track items popped from priority queues but not yet finished, so
// that none is lost when the process holding it dies (the original drops
// whatever a crashed crawler had popped).
//
// A lease is recorded atomically with the pop (Queue.Attempt with a Lease):
// its id in the sorted set <name> scored by its deadline (Redis server time),
// and its Record (queue key, score, member) under its id in the hash
// <name>:items. The holder renews its leases well before their deadline
// (Renew) and acknowledges each when done (Ack), or swaps it for a new
// queued item in one step (Requeue, for retries). Any process may Reap:
// leases past their deadline are put back in their queues with their old
// score, atomically, so a lease is either still leased or queued again,
// never both and never neither. A holder that dies therefore loses its items
// for at most the lease TTL plus the reapers' interval.
//
// Leases work with priority queues (sorted sets) only.
type Leases struct {
	rdb        redis.Cmdable
	zset, hash string
	ttl        time.Duration
	owner      string
	seq        atomic.Uint64
}

// NewLeases returns the leases kept at key name (e.g. "leases:link") with
// the given TTL. Every process sharing name must use the same TTL.
func NewLeases(rdb redis.Cmdable, name string, ttl time.Duration) (*Leases, error) {
	if ttl < time.Second {
		return nil, fmt.Errorf("leases %s: ttl must be at least a second, got %s", name, ttl)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	return &Leases{rdb: rdb, zset: name, hash: name + ":items", ttl: ttl, owner: hex.EncodeToString(b[:])}, nil
}

// Lease names one lease for Queue.Attempt.
type Lease struct {
	leases *Leases
	ID     string
}

// New returns a fresh lease id, unique across processes.
func (l *Leases) New() *Lease {
	return &Lease{leases: l, ID: l.owner + ":" + strconv.FormatUint(l.seq.Add(1), 10)}
}

// TTL is the leases' time to live without renewal.
func (l *Leases) TTL() time.Duration { return l.ttl }

// Keys returns the sorted set and the hash the leases are kept in.
func (l *Leases) Keys() (zset, hash string) { return l.zset, l.hash }

var renewScript = redis.NewScript(`
local t = redis.call('TIME')
local deadline = string.format('%.6f', tonumber(t[1]) + tonumber(t[2]) / 1000000 + tonumber(ARGV[1]))
local missing = {}
for i = 2, #ARGV do
  if redis.call('ZADD', KEYS[1], 'XX', 'CH', deadline, ARGV[i]) == 0 and not redis.call('ZSCORE', KEYS[1], ARGV[i]) then
    missing[#missing + 1] = ARGV[i]
  end
end
return missing`)

// Renew pushes the deadline of the given leases to now + TTL. It returns
// the ids that were no longer leased: acknowledged meanwhile, or reaped
// (their items are queued again and may be crawled twice).
func (l *Leases) Renew(ctx context.Context, ids ...string) (missing []string, err error) {
	return l.RenewOn(ctx, l.rdb, ids...)
}

// RenewOn is Renew through rdb instead of the leases' own client: a holder
// that keeps connections for its renewals alone never has a renewal wait for
// a connection behind its other commands (pops, acknowledgements), which
// under load can take longer than the TTL.
func (l *Leases) RenewOn(ctx context.Context, rdb redis.Scripter, ids ...string) (missing []string, err error) {
	if len(ids) == 0 {
		return nil, nil
	}
	args := make([]any, 0, len(ids)+1)
	args = append(args, strconv.FormatFloat(l.ttl.Seconds(), 'f', -1, 64))
	for _, id := range ids {
		args = append(args, id)
	}
	missing, err = renewScript.Run(ctx, rdb, []string{l.zset}, args...).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("renew leases: %w", err)
	}
	return missing, nil
}

// LoadRenewScript puts the renewal script in Redis's script cache through
// rdb, so that a renewal takes one round trip even the first time.
func (l *Leases) LoadRenewScript(ctx context.Context, rdb redis.Scripter) error {
	if err := renewScript.Load(ctx, rdb).Err(); err != nil {
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
// their deadline passed and a reaper put their items back in their queues
// (they may be crawled again), so whatever also recorded for them is the
// caller's to take back.
func (l *Leases) AckWith(ctx context.Context, also func(redis.Pipeliner), ids ...string) (lost []string, err error) {
	if len(ids) == 0 && also == nil {
		return nil, nil
	}
	pipe := l.rdb.TxPipeline()
	var held *redis.FloatSliceCmd
	if len(ids) > 0 {
		held = pipe.ZMScore(ctx, l.zset, ids...)
		l.ack(ctx, pipe, ids)
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
	// ZMSCORE answers 0 for a missing member (go-redis reads nil as 0); a
	// lease's score is its deadline, never 0.
	for i, score := range held.Val() {
		if score == 0 {
			lost = append(lost, ids[i])
		}
	}
	return lost, nil
}

func (l *Leases) ack(ctx context.Context, pipe redis.Pipeliner, ids []string) {
	members := make([]any, len(ids))
	fields := make([]string, len(ids))
	for i, id := range ids {
		members[i], fields[i] = id, id
	}
	pipe.ZRem(ctx, l.zset, members...)
	pipe.HDel(ctx, l.hash, fields...)
}

// requeueScript swaps a lease for a new queued item, only while the lease
// is held: a lease already reaped had its item put back in its queue, and
// queueing the retry as well would crawl it twice.
//
// KEYS[1] lease sorted set, KEYS[2] lease hash, KEYS[3] queue
// ARGV[1] lease id, ARGV[2] score, ARGV[3] member
var requeueScript = redis.NewScript(`
local held = redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
if held == 1 then
  redis.call('ZADD', KEYS[3], ARGV[2], ARGV[3])
end
return held`)

// Requeue ends a lease and queues member in queue with score in one
// transaction: a retry replaces the leased item, nothing in between is lost.
func (l *Leases) Requeue(ctx context.Context, id, queue, member string, score float64) error {
	_, err := l.RequeueWith(ctx, nil, id, queue, member, score)
	return err
}

// RequeueWith is Requeue with also run in the same MULTI (as for AckWith).
// It reports whether the lease was still held; when it was not (reaped
// after its deadline, its item queued again by the reaper), member is not
// queued.
func (l *Leases) RequeueWith(ctx context.Context, also func(redis.Pipeliner), id, queue, member string, score float64) (held bool, err error) {
	pipe := l.rdb.TxPipeline()
	// The script's source, not its hash: a MULTI cannot fall back to it
	// when Redis lost its script cache.
	res := requeueScript.Eval(ctx, pipe, []string{l.zset, l.hash, queue}, id, strconv.FormatFloat(score, 'f', -1, 64), member)
	if also != nil {
		also(pipe)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return false, fmt.Errorf("requeue lease %s: %w", id, err)
	}
	n, _ := res.Int()
	return n == 1, nil
}

// restoreLua puts leased items back in their queues. Mode "expired" takes
// up to ARGV[2] leases past their deadline; mode "ids" the leases ARGV[2..].
var restoreScript = redis.NewScript(LuaParseRecord + `
local ids
if ARGV[1] == 'expired' then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
  ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', string.format('%.6f', now), 'LIMIT', 0, tonumber(ARGV[2]))
else
  ids = {}
  for i = 2, #ARGV do ids[#ids + 1] = ARGV[i] end
end
local n = 0
for _, id in ipairs(ids) do
  local v = redis.call('HGET', KEYS[2], id)
  if v then
    local q, s, m = lease_record(v)
    redis.call('ZADD', q, s, m)
    n = n + 1
  end
  redis.call('ZREM', KEYS[1], id)
  redis.call('HDEL', KEYS[2], id)
end
return n`)

// Reap puts up to max expired leases back in their queues and returns how
// many items it restored. Run it periodically from every process.
func (l *Leases) Reap(ctx context.Context, max int) (int, error) {
	n, err := restoreScript.Run(ctx, l.rdb, []string{l.zset, l.hash}, "expired", max).Int()
	if err != nil {
		return 0, fmt.Errorf("reap leases: %w", err)
	}
	return n, nil
}

// Release puts the given leases' items back in their queues now (a holder
// that stops without finishing them) and returns how many it restored.
func (l *Leases) Release(ctx context.Context, ids ...string) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	args := make([]any, 0, len(ids)+1)
	args = append(args, "ids")
	for _, id := range ids {
		args = append(args, id)
	}
	n, err := restoreScript.Run(ctx, l.rdb, []string{l.zset, l.hash}, args...).Int()
	if err != nil {
		return 0, fmt.Errorf("release leases: %w", err)
	}
	return n, nil
}

// Count returns how many leases are held across all processes.
func (l *Leases) Count(ctx context.Context) (int64, error) { return l.rdb.ZCard(ctx, l.zset).Result() }
