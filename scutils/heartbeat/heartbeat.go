// Package heartbeat is the self-report every long-running component keeps
// in Redis so that the Redis Monitor's stats requests can count running
// processes: a key (e.g. stats:kafka-monitor:self:<host>:<id>) holding the
// time of the last report in epoch seconds, which expires after
// HEARTBEAT_TIMEOUT unless it is refreshed.
package heartbeat

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
)

// NewID returns a 12-hex-digit process id, like the last group of the
// uuid4 the original components use.
func NewID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Report writes key once: the current time in epoch seconds, expiring after timeout.
func Report(ctx context.Context, rdb redis.Cmdable, key string, timeout time.Duration) error {
	now := float64(time.Now().UnixNano()) / 1e9
	return rdb.Set(ctx, key, strconv.FormatFloat(now, 'f', 6, 64), timeout).Err()
}

// Interval is how often Run refreshes a key that lives timeout: a quarter
// of it, so three reports may fail before the key expires.
func Interval(timeout time.Duration) time.Duration { return max(timeout/4, 100*time.Millisecond) }

// Run reports at once and then every Interval(timeout) until ctx is done.
// Failures (Redis away) are logged at debug level and retried at the next
// interval; they never stop the loop. When ctx ends the key is deleted, so a
// process that stops cleanly is not counted until its key expires.
func Run(ctx context.Context, rdb redis.Cmdable, key string, timeout time.Duration, log *logfactory.Logger) {
	t := time.NewTicker(Interval(timeout))
	defer t.Stop()
	for {
		if err := Report(ctx, rdb, key, timeout); err != nil && ctx.Err() == nil && log != nil {
			log.Debug("Failed to report self", logfactory.Extra{"key": key, "error": err.Error()})
		}
		select {
		case <-ctx.Done():
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			rdb.Del(dctx, key)
			cancel()
			return
		case <-t.C:
		}
	}
}
