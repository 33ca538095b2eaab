// Package redisconn builds the Redis client every component uses from the
// shared REDIS_* settings (Settings), so they all connect the same way.
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

// The Redis settings every component shares.
var (
	Host          = settings.String("REDIS_HOST", "localhost", "Redis host")
	Port          = settings.Int("REDIS_PORT", 6379, "Redis port")
	DB            = settings.Int("REDIS_DB", 0, "Redis database")
	Password      = settings.String("REDIS_PASSWORD", "", "Redis password (empty: none)")
	SocketTimeout = settings.Seconds("REDIS_SOCKET_TIMEOUT", 10, "seconds connecting to Redis, or a call to it, may take")
)

// Settings are the Redis settings, for a component's settings.Group.
func Settings() settings.Group { return settings.Declare(Host, Port, DB, Password, SocketTimeout) }

// Options returns go-redis options for the REDIS_* settings.
func Options(s *settings.Settings) *redis.Options {
	timeout := SocketTimeout.From(s)
	return &redis.Options{
		Addr:         net.JoinHostPort(Host.From(s), strconv.Itoa(Port.From(s))),
		DB:           DB.From(s),
		Password:     Password.From(s),
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
