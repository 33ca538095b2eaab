// Package redisqueue holds the Redis-backed queues every Scrapy Cluster
// component shares: a FIFO queue and a stack on Redis lists, and a priority
// queue on a sorted set (score -priority, so the highest priority pops first).
// That sorted set is exactly the crawl queue `<spiderid>:<domain>:queue` the
// Kafka Monitor fills and crawlers drain, so Go and Python components can share it.
//
// Items are encoded with a Codec, JSON by default (the original's crawl
// queues hold JSON too); any type with Marshal and Unmarshal can replace it.
// Data lives in Redis, so a process that dies loses nothing already queued.
//
// Every operation is one Redis round trip: Pop uses RPOP/LPOP/ZPOPMIN (or their
// blocking forms when given a timeout), and PushAll/PopN move many items at once.
package redisqueue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Codec turns items into the bytes stored in Redis and back.
type Codec interface {
	Marshal(v any) ([]byte, error)
	Unmarshal(data []byte, v any) error
}

// JSONCodec stores items as JSON, the default.
type JSONCodec struct{}

// Marshal encodes v as JSON.
func (JSONCodec) Marshal(v any) ([]byte, error) { return json.Marshal(v) }

// Unmarshal decodes JSON into v.
func (JSONCodec) Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

// Kind is how a queue orders its items.
type Kind int

// The three queue kinds of the original's redis_queue module.
const (
	// FIFO pops the oldest item first (Redis list: LPUSH, RPOP).
	FIFO Kind = iota
	// Stack pops the newest item first (Redis list: LPUSH, LPOP).
	Stack
	// Priority pops the highest priority first (sorted set, score -priority).
	Priority
)

func (k Kind) String() string {
	switch k {
	case FIFO:
		return "fifo"
	case Stack:
		return "stack"
	case Priority:
		return "priority"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// DecodeError is returned by Pop when an item was taken from Redis but could
// not be decoded. The raw bytes are kept so the caller can log or park them:
// nothing is silently dropped.
type DecodeError struct {
	Key string
	Raw []byte
	Err error
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("decode item popped from %s: %v (raw %q)", e.Key, e.Err, truncate(e.Raw, 200))
}

func (e *DecodeError) Unwrap() error { return e.Err }

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

// Option configures a Queue.
type Option func(*options)

type options struct{ codec Codec }

// WithCodec replaces the JSON codec.
func WithCodec(c Codec) Option { return func(o *options) { o.codec = c } }

// Queue is a Redis queue of items of type T. It is safe for concurrent use
// and across processes.
type Queue[T any] struct {
	rdb   redis.Cmdable
	key   string
	kind  Kind
	codec Codec
}

// Entry is an item with its priority, for PushAll.
type Entry[T any] struct {
	Item     T
	Priority int
}

// New returns a queue of the given kind at key.
func New[T any](rdb redis.Cmdable, key string, kind Kind, opts ...Option) *Queue[T] {
	o := options{codec: JSONCodec{}}
	for _, opt := range opts {
		opt(&o)
	}
	return &Queue[T]{rdb: rdb, key: key, kind: kind, codec: o.codec}
}

// NewFIFO returns a first-in first-out queue at key (the original's RedisQueue).
func NewFIFO[T any](rdb redis.Cmdable, key string, opts ...Option) *Queue[T] {
	return New[T](rdb, key, FIFO, opts...)
}

// NewStack returns a last-in first-out queue at key (the original's RedisStack).
func NewStack[T any](rdb redis.Cmdable, key string, opts ...Option) *Queue[T] {
	return New[T](rdb, key, Stack, opts...)
}

// NewPriority returns a priority queue at key (the original's RedisPriorityQueue).
func NewPriority[T any](rdb redis.Cmdable, key string, opts ...Option) *Queue[T] {
	return New[T](rdb, key, Priority, opts...)
}

// Key is the Redis key holding the queue.
func (q *Queue[T]) Key() string { return q.key }

// Kind is the queue's ordering.
func (q *Queue[T]) Kind() Kind { return q.kind }

// Encode turns an item into the bytes this queue stores.
func (q *Queue[T]) Encode(item T) ([]byte, error) {
	b, err := q.codec.Marshal(item)
	if err != nil {
		return nil, fmt.Errorf("encode item for %s: %w", q.key, err)
	}
	return b, nil
}

// Decode turns stored bytes back into an item; failures are *DecodeError.
func (q *Queue[T]) Decode(raw []byte) (T, error) {
	var item T
	if err := q.codec.Unmarshal(raw, &item); err != nil {
		return item, &DecodeError{Key: q.key, Raw: raw, Err: err}
	}
	return item, nil
}

// Push adds an item; a priority queue gives it priority 0.
func (q *Queue[T]) Push(ctx context.Context, item T) error {
	return q.PushPriority(ctx, item, 0)
}

// PushPriority adds an item with a priority; higher pops first. FIFO queues
// and stacks ignore the priority.
func (q *Queue[T]) PushPriority(ctx context.Context, item T, priority int) error {
	return q.PushAll(ctx, Entry[T]{Item: item, Priority: priority})
}

// PushAll adds many items in one round trip.
func (q *Queue[T]) PushAll(ctx context.Context, entries ...Entry[T]) error {
	if len(entries) == 0 {
		return nil
	}
	var err error
	if q.kind == Priority {
		members := make([]redis.Z, len(entries))
		for i, e := range entries {
			b, encErr := q.Encode(e.Item)
			if encErr != nil {
				return encErr
			}
			members[i] = redis.Z{Score: -float64(e.Priority), Member: b}
		}
		err = q.rdb.ZAdd(ctx, q.key, members...).Err()
	} else {
		values := make([]any, len(entries))
		for i, e := range entries {
			if values[i], err = q.Encode(e.Item); err != nil {
				return err
			}
		}
		err = q.rdb.LPush(ctx, q.key, values...).Err()
	}
	if err != nil {
		return fmt.Errorf("push %d item(s) to %s: %w", len(entries), q.key, err)
	}
	return nil
}

// Pop removes and returns the next item. ok is false when the queue is empty.
// With timeout > 0 it waits up to timeout for an item (BRPOP/BLPOP/BZPOPMIN);
// Redis counts blocking timeouts in whole or fractional seconds.
func (q *Queue[T]) Pop(ctx context.Context, timeout time.Duration) (item T, ok bool, err error) {
	var raw string
	if timeout > 0 {
		raw, ok, err = q.popBlocking(ctx, timeout)
	} else {
		raw, ok, err = q.popNow(ctx)
	}
	if err != nil || !ok {
		return item, false, err
	}
	item, err = q.Decode([]byte(raw))
	return item, err == nil, err
}

func (q *Queue[T]) popNow(ctx context.Context) (string, bool, error) {
	var raw string
	var err error
	switch q.kind {
	case Priority:
		var zs []redis.Z
		zs, err = q.rdb.ZPopMin(ctx, q.key, 1).Result()
		if err == nil && len(zs) == 0 {
			return "", false, nil
		}
		if err == nil {
			raw, _ = zs[0].Member.(string)
		}
	case Stack:
		raw, err = q.rdb.LPop(ctx, q.key).Result()
	default:
		raw, err = q.rdb.RPop(ctx, q.key).Result()
	}
	if errors.Is(err, redis.Nil) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("pop from %s: %w", q.key, err)
	}
	return raw, true, nil
}

func (q *Queue[T]) popBlocking(ctx context.Context, timeout time.Duration) (string, bool, error) {
	var raw string
	var err error
	switch q.kind {
	case Priority:
		var z *redis.ZWithKey
		z, err = q.rdb.BZPopMin(ctx, timeout, q.key).Result()
		if err == nil {
			raw, _ = z.Member.(string)
		}
	case Stack:
		var kv []string
		kv, err = q.rdb.BLPop(ctx, timeout, q.key).Result()
		if err == nil {
			raw = kv[1]
		}
	default:
		var kv []string
		kv, err = q.rdb.BRPop(ctx, timeout, q.key).Result()
		if err == nil {
			raw = kv[1]
		}
	}
	if errors.Is(err, redis.Nil) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("blocking pop from %s: %w", q.key, err)
	}
	return raw, true, nil
}

// PopN removes and returns up to n items in one round trip, in pop order.
// Items that fail to decode are skipped and reported in a joined error of
// *DecodeError values after the good ones are returned.
func (q *Queue[T]) PopN(ctx context.Context, n int) ([]T, error) {
	if n <= 0 {
		return nil, nil
	}
	var raws []string
	var err error
	switch q.kind {
	case Priority:
		var zs []redis.Z
		zs, err = q.rdb.ZPopMin(ctx, q.key, int64(n)).Result()
		for _, z := range zs {
			s, _ := z.Member.(string)
			raws = append(raws, s)
		}
	case Stack:
		raws, err = q.rdb.LPopCount(ctx, q.key, n).Result()
	default:
		raws, err = q.rdb.RPopCount(ctx, q.key, n).Result()
	}
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("pop %d from %s: %w", n, q.key, err)
	}
	items := make([]T, 0, len(raws))
	var decodeErrs []error
	for _, raw := range raws {
		item, err := q.Decode([]byte(raw))
		if err != nil {
			decodeErrs = append(decodeErrs, err)
			continue
		}
		items = append(items, item)
	}
	return items, errors.Join(decodeErrs...)
}

// Len returns the number of queued items.
func (q *Queue[T]) Len(ctx context.Context) (int64, error) {
	var n int64
	var err error
	if q.kind == Priority {
		n, err = q.rdb.ZCard(ctx, q.key).Result()
	} else {
		n, err = q.rdb.LLen(ctx, q.key).Result()
	}
	if err != nil {
		return 0, fmt.Errorf("length of %s: %w", q.key, err)
	}
	return n, nil
}

// Clear removes every item.
func (q *Queue[T]) Clear(ctx context.Context) error {
	if err := q.rdb.Del(ctx, q.key).Err(); err != nil {
		return fmt.Errorf("clear %s: %w", q.key, err)
	}
	return nil
}
