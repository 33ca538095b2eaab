package answers

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// ErrNotFound is returned by Take when no answer is stored for the uuid.
var ErrNotFound = errors.New("no stored answer")

// Store keeps answers for /poll at rest:poll:<uuid>, the key the original
// REST service uses, as the answer's JSON text expiring after TTL (the
// original kept them forever).
//
// Save queues the write and returns at once, so a slow or absent Redis
// never holds up the Consumer delivering answers to waiting requests. One
// writer goroutine writes the queue in order, retrying with back-off while
// Redis is away; an answer older than TTL is dropped (it would have expired),
// and when the queue is full the new answer is dropped with an error log.
type Store struct {
	rdb redis.Cmdable
	ttl time.Duration
	log *logfactory.Logger
	// OnError, when set, is told of every failed Redis call, so the owner
	// can mark Redis unreachable.
	OnError func(error)

	queue   chan saved
	wg      sync.WaitGroup
	stopped chan struct{}
	once    sync.Once
}

type saved struct {
	uuid   string
	answer []byte
	at     time.Time
}

// storeQueue bounds the answers waiting for Redis.
const storeQueue = 4096

// NewStore returns a Store writing through rdb; Start runs its writer.
func NewStore(rdb redis.Cmdable, ttl time.Duration, log *logfactory.Logger) *Store {
	return &Store{rdb: rdb, ttl: ttl, log: log, queue: make(chan saved, storeQueue), stopped: make(chan struct{})}
}

// Start runs the writer until ctx is done or Close is called.
func (s *Store) Start(ctx context.Context) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.writeLoop(ctx)
	}()
}

// Close stops the writer after the answers queued so far had one attempt
// each, and waits for it.
func (s *Store) Close() {
	s.once.Do(func() { close(s.stopped) })
	s.wg.Wait()
}

// Save queues answer for uuid.
func (s *Store) Save(uuid string, answer []byte) {
	select {
	case s.queue <- saved{uuid: uuid, answer: answer, at: time.Now()}:
	default:
		s.log.Error("Too many answers waiting for Redis; dropping one", logfactory.Extra{"uuid": uuid})
	}
}

func (s *Store) writeLoop(ctx context.Context) {
	backoff := 100 * time.Millisecond
	for {
		var a saved
		select {
		case a = <-s.queue:
		case <-ctx.Done():
			return
		case <-s.stopped:
			s.drain(ctx)
			return
		}
		for {
			if time.Since(a.at) >= s.ttl {
				s.log.Warning("Dropping an answer Redis could not store before it would have expired", logfactory.Extra{"uuid": a.uuid})
				break
			}
			err := s.write(ctx, a)
			if err == nil {
				s.log.Debug("Stored answer for a later poll", logfactory.Extra{"uuid": a.uuid})
				backoff = 100 * time.Millisecond
				break
			}
			s.log.Warning("Unable to send result to redis; retrying", logfactory.Extra{"uuid": a.uuid, "error": err.Error(), "retry_in": backoff.String()})
			select {
			case <-ctx.Done():
				return
			case <-s.stopped:
				s.drain(ctx)
				return
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, 5*time.Second)
		}
	}
}

// drain gives each queued answer one attempt, at shutdown.
func (s *Store) drain(ctx context.Context) {
	for {
		select {
		case a := <-s.queue:
			if err := s.write(ctx, a); err != nil {
				s.log.Error("Unable to send result to redis before shutting down", logfactory.Extra{"uuid": a.uuid, "error": err.Error()})
			}
		default:
			return
		}
	}
}

func (s *Store) write(ctx context.Context, a saved) error {
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err := s.rdb.Set(wctx, rediskeys.RestPollKey(a.uuid), a.answer, s.ttl-time.Since(a.at)).Err()
	if err != nil && s.OnError != nil {
		s.OnError(err)
	}
	return err
}

// Take returns and deletes the answer stored for uuid (a poll is answered
// once, as the original does), or ErrNotFound.
func (s *Store) Take(ctx context.Context, uuid string) ([]byte, error) {
	key := rediskeys.RestPollKey(uuid)
	var get *redis.StringCmd
	_, err := s.rdb.TxPipelined(ctx, func(tx redis.Pipeliner) error {
		get = tx.Get(ctx, key)
		tx.Del(ctx, key)
		return nil
	})
	if errors.Is(err, redis.Nil) {
		return nil, ErrNotFound
	}
	if err != nil {
		if s.OnError != nil {
			s.OnError(err)
		}
		return nil, err
	}
	return get.Bytes()
}
