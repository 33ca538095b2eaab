package domainconfig

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// RedisStore keeps the document in Redis, for clusters without ZooKeeper:
// the string rediskeys.DomainConfigKey(path), with each new version
// published on rediskeys.DomainConfigChannel(path) in the same transaction
// (so announcements come in the order of the writes). Writes use
// WATCH/MULTI/EXEC, so concurrent writers never overwrite each other's
// changes.
type RedisStore struct {
	rdb          redis.UniversalClient
	path         string
	key, channel string
}

// NewRedisStore uses rdb (which the caller keeps and closes) for the
// document of path, e.g. "/scrapy-cluster/crawler/all".
func NewRedisStore(rdb redis.UniversalClient, path string) *RedisStore {
	return &RedisStore{rdb: rdb, path: path,
		key: rediskeys.DomainConfigKey(path), channel: rediskeys.DomainConfigChannel(path)}
}

// Path is the document's path.
func (s *RedisStore) Path() string { return s.path }

// Connected says true: the Redis client connects per call; see Store.
func (s *RedisStore) Connected() bool { return true }

// Close does nothing: the Redis client belongs to the caller.
func (s *RedisStore) Close() error { return nil }

// Get reads the document; a missing or empty key is the empty document.
func (s *RedisStore) Get(ctx context.Context) (Document, error) {
	data, err := s.rdb.Get(ctx, s.key).Bytes()
	if err != nil && !errors.Is(err, redis.Nil) {
		return Document{}, s.failure(ErrRead, err)
	}
	doc, err := Parse(data)
	if err != nil {
		return Document{}, fmt.Errorf("%w at %s: %w", ErrRead, s.key, err)
	}
	return doc, nil
}

// Update edits the document in a WATCH/MULTI/EXEC transaction, starting over
// when another writer changed the key meanwhile; see Store.
func (s *RedisStore) Update(ctx context.Context, edit func(*Document) error) error {
	for {
		err := s.rdb.Watch(ctx, func(tx *redis.Tx) error {
			data, err := tx.Get(ctx, s.key).Bytes()
			exists := err == nil
			if err != nil && !errors.Is(err, redis.Nil) {
				return s.failure(ErrRead, err)
			}
			out, err := applyEdit(data, exists, s.key, edit)
			if out == nil {
				return err
			}
			_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, s.key, out, 0)
				p.Publish(ctx, s.channel, out)
				return nil
			})
			if err != nil && !errors.Is(err, redis.TxFailedErr) {
				return s.failure(ErrWrite, err)
			}
			return err
		}, s.key)
		var e editError
		switch {
		case errors.Is(err, redis.TxFailedErr):
			continue // another writer came first: start over from its version
		case errors.As(err, &e):
			return e.err
		case err != nil && !errors.Is(err, ErrRead) && !errors.Is(err, ErrWrite):
			return s.failure(ErrRead, err) // WATCH itself failed
		}
		return err
	}
}

// failure wraps err, Redis's failure to read (what is ErrRead) or write
// (ErrWrite) the key, and marks it ErrUnavailable unless Redis answered
// with an error: no connection or no answer in time is an outage.
func (s *RedisStore) failure(what, err error) error {
	var reply redis.Error
	if errors.As(err, &reply) {
		return fmt.Errorf("%w at %s: %w", what, s.key, err)
	}
	return fmt.Errorf("%w: %w at %s: %w", ErrUnavailable, what, s.key, err)
}
