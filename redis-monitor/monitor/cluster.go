package monitor

import (
	"context"
	"slices"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/redis-monitor/plugin"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisconn"
)

// scanCluster is scan on a Redis Cluster: the request keys (written by
// the Kafka Monitor in their own slots, spread over the masters) are found
// on every master (redisconn.ScanMasters; never one node's SCAN for the
// cluster's), then read a page at a time, each page in one pipeline (the
// client sends each master its part: a cross-slot MGET is refused), and
// processed as in one-Redis mode.
func (m *Monitor) scanCluster(ctx, work context.Context, cc *redis.ClusterClient, p plugin.Plugin) error {
	keys, err := redisconn.MasterKeys(ctx, cc, p.Pattern())
	if err != nil {
		return err
	}
	for page := range slices.Chunk(keys, 1000) {
		pipe := cc.Pipeline()
		cmds := make([]*redis.StringCmd, len(page))
		for i, k := range page {
			cmds[i] = pipe.Get(ctx, k)
		}
		if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil && !onlyMissingOrWrongType(cmds) {
			return err
		}
		for i, key := range page {
			if ctx.Err() != nil {
				return nil
			}
			value, err := cmds[i].Result()
			if err != nil { // gone, or not a string key
				continue
			}
			if err := m.process(work, p, key, value); err != nil {
				return err
			}
		}
	}
	return nil
}

// onlyMissingOrWrongType reports whether the pipeline's errors are keys gone or of the
// pattern that are not strings (skipped, as MGET skips them in one-Redis
// mode) rather than Redis failing.
func onlyMissingOrWrongType(cmds []*redis.StringCmd) bool {
	for _, c := range cmds {
		if err := c.Err(); err != nil && err != redis.Nil && !redis.HasErrorPrefix(err, "WRONGTYPE") {
			return false
		}
	}
	return true
}
