package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"
)

// RedisContents is every key in rdb's database with its content, for a
// test to compare two states or pin one: strings by value, sorted sets as
// "member @ score" in rank order, hashes as maps, sets sorted, lists in
// order; a key of another type by its type's name.
func RedisContents(tb testing.TB, rdb *redis.Client) map[string]any {
	tb.Helper()
	ctx := context.Background()
	keys, err := rdb.Keys(ctx, "*").Result()
	if err != nil {
		tb.Fatalf("list the keys in Redis: %v", err)
	}
	out := make(map[string]any, len(keys))
	for _, k := range keys {
		switch typ := rdb.Type(ctx, k).Val(); typ {
		case "string":
			out[k] = rdb.Get(ctx, k).Val()
		case "zset":
			var zs []string
			for _, z := range rdb.ZRangeWithScores(ctx, k, 0, -1).Val() {
				zs = append(zs, fmt.Sprintf("%v @ %v", z.Member, z.Score))
			}
			out[k] = zs
		case "hash":
			out[k] = rdb.HGetAll(ctx, k).Val()
		case "set":
			members := rdb.SMembers(ctx, k).Val()
			slices.Sort(members)
			out[k] = members
		case "list":
			out[k] = rdb.LRange(ctx, k, 0, -1).Val()
		default:
			out[k] = typ
		}
	}
	return out
}

// JSONText is v as encoding/json writes it (compact, map keys sorted), for
// a test to compare values as text; it fails tb when v has no JSON form.
func JSONText(tb testing.TB, v any) string {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatalf("JSON of %#v: %v", v, err)
	}
	return string(b)
}
