// Package redisconn builds the Redis client every component uses from the
// shared REDIS_* settings (Settings), so they all connect the same way: a
// client of the one Redis at REDIS_HOST:REDIS_PORT, or with
// REDIS_CLUSTER_NODES set a client of that Redis Cluster (cluster mode,
// docs/redis-cluster.md).
//
// go-redis reconnects by itself: a client survives a Redis restart, and calls
// made while Redis is away fail with an error the caller retries.
package redisconn

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// The Redis settings every component shares.
var (
	Host          = settings.String("REDIS_HOST", "localhost", "Redis host")
	Port          = settings.Int("REDIS_PORT", 6379, "Redis port")
	DB            = settings.Int("REDIS_DB", 0, "Redis database")
	Password      = settings.String("REDIS_PASSWORD", "", "Redis password (empty: none)")
	SocketTimeout = settings.Seconds("REDIS_SOCKET_TIMEOUT", 10, "seconds connecting to Redis, or a call to it, may take")
	ClusterNodes  = settings.Strings("REDIS_CLUSTER_NODES", []string{}, "Redis Cluster seed nodes, `host:port` comma-separated: cluster mode, Go components only, see docs/redis-cluster.md; empty: the one Redis at `REDIS_HOST`:`REDIS_PORT`").Ours()
	// ResponseBuckets is read by KeyLayout: every component that counts or
	// reads the crawlers' responses gets it from its layout.
	ResponseBuckets = settings.Bool("STATS_RESPONSE_BUCKETS", false, "on one Redis, the crawlers count their responses in one hash of time buckets per host, spider and code, "+
		"as on a Redis Cluster, instead of the original's sorted sets: memory that does not grow with the crawl rate and less Redis CPU a page, "+
		"but the original's (Python) Redis Monitor does not read them; set it on every component (docs/production.md#response-counts-in-time-buckets); "+
		"a Redis Cluster always has them").Ours()
)

// Settings are the Redis settings, for a component's settings.Group.
func Settings() settings.Group {
	return settings.Declare(Host, Port, DB, Password, SocketTimeout, ClusterNodes, ResponseBuckets, WaitReplicas, WaitTimeout)
}

// Cluster reports whether s puts the components in cluster mode
// (REDIS_CLUSTER_NODES set).
func Cluster(s *settings.Settings) bool { return len(ClusterNodes.From(s)) > 0 }

// KeyLayout is the layout of the keys for s's mode: rediskeys.Cluster in
// cluster mode, rediskeys.Single (the original's keys) otherwise. Build it
// once and pass it to what builds keys.
func KeyLayout(s *settings.Settings) rediskeys.Layout {
	if Cluster(s) {
		return rediskeys.Cluster
	}
	return rediskeys.Single.WithResponseBuckets(ResponseBuckets.From(s))
}

// clusterStateReload is how often a cluster client reloads the map of
// which master serves which slot. go-redis reloads it at once when a node
// answers MOVED, but a master that died answers nothing: without a
// periodic reload (go-redis's default is a minute) the client keeps
// calling the dead address long after its replica took over.
const clusterStateReload = time.Second

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

// ClusterOptions returns go-redis cluster options for the REDIS_* settings:
// the seeds of REDIS_CLUSTER_NODES, REDIS_PASSWORD and the timeouts
// (REDIS_HOST, REDIS_PORT and REDIS_DB do not apply: a cluster has
// database 0 only).
func ClusterOptions(s *settings.Settings) *redis.ClusterOptions {
	timeout := SocketTimeout.From(s)
	return &redis.ClusterOptions{
		Addrs:                      ClusterNodes.From(s),
		Password:                   Password.From(s),
		DialTimeout:                timeout,
		ReadTimeout:                timeout,
		WriteTimeout:               timeout,
		ClusterStateReloadInterval: clusterStateReload,
	}
}

// New returns a client for the REDIS_* settings; it connects lazily. It is
// a *redis.Client of Options, or in cluster mode (Cluster) a
// *redis.ClusterClient of ClusterOptions. Its writes made with a
// Waiter's context wait for replicas (EnableWait).
func New(s *settings.Settings) redis.UniversalClient {
	var c redis.UniversalClient
	if Cluster(s) {
		c = redis.NewClusterClient(ClusterOptions(s))
	} else {
		c = redis.NewClient(Options(s))
	}
	EnableWait(c)
	return c
}

// ScanMasters calls fn with each batch of the keys matching pattern (SCAN
// MATCH, count per call) in c: the one Redis of a *redis.Client, every
// master of a *redis.ClusterClient (ForEachMaster, concurrently, so fn
// must be safe for concurrent use). A cluster's keys are spread over its
// masters, and a SCAN sent through the cluster client reaches one node:
// never take one node's SCAN for the cluster's.
func ScanMasters(ctx context.Context, c redis.UniversalClient, pattern string, count int64, fn func(keys []string)) error {
	scan := func(ctx context.Context, n redis.Cmdable) error {
		var cursor uint64
		for {
			keys, next, err := n.Scan(ctx, cursor, pattern, count).Result()
			if err != nil {
				return err
			}
			if len(keys) > 0 {
				fn(keys)
			}
			if next == 0 {
				return nil
			}
			cursor = next
		}
	}
	if cc, ok := c.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			if err := scan(ctx, m); err != nil {
				return fmt.Errorf("scan master %s: %w", m.Options().Addr, err)
			}
			return nil
		})
	}
	return scan(ctx, c)
}

// MasterKeys are the keys matching pattern in c, found with ScanMasters
// (every master of a cluster), sorted, each once (SCAN may return a key
// twice).
func MasterKeys(ctx context.Context, c redis.UniversalClient, pattern string) ([]string, error) {
	var mu sync.Mutex
	var keys []string
	err := ScanMasters(ctx, c, pattern, 1000, func(batch []string) {
		mu.Lock()
		keys = append(keys, batch...)
		mu.Unlock()
	})
	slices.Sort(keys)
	return slices.Compact(keys), err
}

// Ping reports whether Redis answers, naming the address when it does not:
// for a cluster client, whether every master answers, naming the seeds.
func Ping(ctx context.Context, c redis.UniversalClient) error {
	switch c := c.(type) {
	case *redis.ClusterClient:
		err := c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			if err := m.Ping(ctx).Err(); err != nil {
				return fmt.Errorf("master %s: %w", m.Options().Addr, err)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("reach redis cluster at %s: %w", strings.Join(c.Options().Addrs, ","), err)
		}
	case *redis.Client:
		if err := c.Ping(ctx).Err(); err != nil {
			return fmt.Errorf("reach redis at %s: %w", c.Options().Addr, err)
		}
	default:
		return c.Ping(ctx).Err()
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

// ClusterClient is rdb as a Redis Cluster client, or an error naming what
// it is instead: for the code paths of the cluster key layout, which need
// the cluster's masters.
func ClusterClient(rdb redis.Cmdable) (*redis.ClusterClient, error) {
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		return nil, fmt.Errorf("the cluster key layout needs a Redis Cluster client, got %T", rdb)
	}
	return cc, nil
}
