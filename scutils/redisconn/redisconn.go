// Package redisconn builds the Redis client every component uses from the
// shared REDIS_* settings, so they all connect the same way:
//
//	REDIS_HOST            "localhost"
//	REDIS_PORT            6379
//	REDIS_DB              0
//	REDIS_PASSWORD        ""     (none)
//	REDIS_SOCKET_TIMEOUT  10     seconds for connecting, reading and writing
//
// go-redis reconnects by itself: a client survives a Redis restart, and calls
// made while Redis is away fail with an error the caller retries.
package redisconn

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// Defaults are the Redis settings every component shares.
func Defaults() settings.Defaults {
	return settings.Defaults{
		"REDIS_HOST":           "localhost",
		"REDIS_PORT":           6379,
		"REDIS_DB":             0,
		"REDIS_PASSWORD":       "",
		"REDIS_SOCKET_TIMEOUT": 10,
	}
}

// Options returns go-redis options for the REDIS_* settings.
func Options(s *settings.Settings) *redis.Options {
	timeout := s.Seconds("REDIS_SOCKET_TIMEOUT")
	return &redis.Options{
		Addr:         net.JoinHostPort(s.String("REDIS_HOST"), strconv.Itoa(s.Int("REDIS_PORT"))),
		DB:           s.Int("REDIS_DB"),
		Password:     s.String("REDIS_PASSWORD"),
		DialTimeout:  timeout,
		ReadTimeout:  timeout,
		WriteTimeout: timeout,
	}
}

// New returns a client for the REDIS_* settings; it connects lazily.
func New(s *settings.Settings) *redis.Client { return redis.NewClient(Options(s)) }

// Ping reports whether Redis answers, naming the address when it does not.
func Ping(ctx context.Context, c *redis.Client) error {
	if err := c.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("reach redis at %s: %w", c.Options().Addr, err)
	}
	return nil
}

// RouteClientLogs sends the go-redis library's own log lines (e.g. "failed
// to dial" while Redis is away) to log at DEBUG level, in the component's
// format, instead of plain text on stderr. The components log their own
// line for each failure that matters. The library's logger is process-wide.
func RouteClientLogs(log *logfactory.Logger) { redis.SetLogger(clientLogger{log}) }

type clientLogger struct{ log *logfactory.Logger }

func (l clientLogger) Printf(_ context.Context, format string, v ...any) {
	l.log.Debug("Redis client: " + strings.TrimSpace(fmt.Sprintf(format, v...)))
}
