// Package memredis starts an in-memory stand-in for Redis (miniredis) for
// the packages' examples, so that they run anywhere without a redis-server.
// Tests use harness.StartRedis (a real server) instead.
package memredis

import (
	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// Start starts an in-memory Redis and returns a client of it and a function
// that closes both. It panics when the server cannot start. In real code
// connect to your server instead:
//
//	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
func Start() (*redis.Client, func()) {
	srv, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	return rdb, func() { rdb.Close(); srv.Close() }
}
