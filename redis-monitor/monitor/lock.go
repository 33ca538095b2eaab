package monitor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/lifecycle"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisscripts"
)

// lock is a request's lock: "lock:<key>" set with NX to a token unique to
// the holder and an expiry, the protocol python-redis-lock uses, so Go and
// Python monitors exclude each other. While held it is renewed in the
// background, so a long action keeps it; if the holder dies it expires after
// REDIS_LOCK_EXPIRATION and another monitor takes the request over. Only
// the holder renews or deletes it (lock_renew.lua, lock_release.lua).
type lock struct {
	rdb   redis.UniversalClient
	name  string
	token string
	ttl   time.Duration

	stop chan struct{}
	done sync.WaitGroup
}

// tryLock takes the lock name (a request's Layout.RequestLock: in cluster
// mode in the request's slot) without waiting; ok is false when another
// monitor holds it.
func tryLock(ctx context.Context, rdb redis.UniversalClient, name string, ttl time.Duration) (l *lock, ok bool, err error) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	l = &lock{rdb: rdb, name: name, token: hex.EncodeToString(b[:]), ttl: ttl, stop: make(chan struct{})}
	ok, err = rdb.SetNX(ctx, l.name, l.token, ttl).Result()
	if err != nil || !ok {
		return nil, false, err
	}
	l.done.Add(1)
	go l.renew()
	return l, true, nil
}

func (l *lock) renew() {
	defer l.done.Done()
	lifecycle.Every(l.stop, max(l.ttl/3, 10*time.Millisecond), func(time.Time) {
		ctx, cancel := context.WithTimeout(context.Background(), l.ttl/3+time.Second)
		defer cancel()
		_ = redisscripts.Run(ctx, l.rdb, redisscripts.LockRenew{Lock: l.name, Token: l.token, TTL: l.ttl}).Err()
	})
}

// release stops the renewal and deletes the lock if still ours.
func (l *lock) release(ctx context.Context) {
	close(l.stop)
	l.done.Wait()
	_ = redisscripts.Run(ctx, l.rdb, redisscripts.LockRelease{Lock: l.name, Token: l.token}).Err()
}
