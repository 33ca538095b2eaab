package redisscripts_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisscripts"
)

// popKeys are a domain's queue, throttle and lease keys in one layout.
type popKeys struct {
	layout                                   string
	queue, window, moderation, owners, items string
}

var (
	originalPopKeys = popKeys{"original", "link:a.com:queue", "link:a.com:queue:throttle_window", "link:a.com:queue:throttle_time",
		"leases:link:owners", "leases:link:items"}
	leanPopKeys = popKeys{"cluster", "cluster:{a.com}:queue:link", "cluster:{a.com}:throttle:link:throttle_window",
		"cluster:{a.com}:throttle:link:throttle_time", "cluster:{a.com}:leases:link:owners", "cluster:{a.com}:leases:link:items"}
)

// pop is one leased pop of up to max items under lease id of owner o1,
// limit pops a minute; its answer as text, a denial's wait left out.
func (k popKeys) pop(t *testing.T, rdb *redis.Client, command string, limit int, id string, max int) string {
	t.Helper()
	res, err := redisscripts.Run(ctx, rdb, redisscripts.Pop{Queue: k.queue, Command: command, Window: k.window,
		Moderation: k.moderation, WindowSeconds: "60", ModerationSeconds: "0", Expiry: "120", Limit: limit,
		HitID: "hit:" + id, LeaseID: id, Owner: "o1", Owners: k.owners, Records: k.items, Max: max}).Slice()
	if err != nil {
		t.Fatalf("%s: pop %s: %v", k.layout, id, err)
	}
	if len(res) == 3 && res[0] != int64(3) {
		res[2] = "<wait>"
	}
	return fmt.Sprint(res)
}

// The lean pop of the cluster layout's keys decides as the original's
// pop, step by step: a window holding old hits is trimmed when they would
// deny or shorten a pop, a full window denies, and a pop sent again
// (its answer lost) answers its first run's items again whether the
// queue has more, is empty or the window is full, leaving the queue, the
// window and the lease records as they were. It makes fewer commands: no
// HGET of its lease record while it pops, and the window trimmed on some
// pops only.
func TestTheLeanPopDecidesAsTheOriginalPop(t *testing.T) {
	for _, s := range servers(t) {
		answers := map[string][]string{}
		state := map[string][]string{}
		for _, k := range []popKeys{originalPopKeys, leanPopKeys} {
			rdb := s.rdb
			var got []string
			step := func(a string) { got = append(got, a) }
			rdb.ZAdd(ctx, k.owners, redis.Z{Score: 4e9, Member: "o1"})
			for i := 1; i <= 6; i++ {
				rdb.ZAdd(ctx, k.queue, redis.Z{Score: float64(-10 + i), Member: fmt.Sprintf("c%d", i)})
			}
			// Two hits of long ago: a window of 4 a minute has room for 4.
			rdb.ZAdd(ctx, k.window, redis.Z{Score: 1000, Member: "old1"}, redis.Z{Score: 1001, Member: "old2"})
			step(k.pop(t, rdb, "ZPOPMIN", 4, "o1:1", 3))   // the old hits go: c1 c2 c3
			step(k.pop(t, rdb, "ZPOPMIN", 4, "o1:2", 3))   // room for one: c4
			step(k.pop(t, rdb, "ZPOPMIN", 4, "o1:3", 3))   // full: denied
			step(k.pop(t, rdb, "ZPOPMIN", 4, "o1:2", 3))   // sent again, full: c4
			step(k.pop(t, rdb, "ZPOPMIN", 100, "o1:1", 3)) // sent again, c5 c6 queued: c1 c2 c3
			step(k.pop(t, rdb, "ZPOPMIN", 100, "o1:4", 3)) // c5 c6
			step(k.pop(t, rdb, "ZPOPMIN", 100, "o1:4", 3)) // sent again, the queue empty: c5 c6
			step(k.pop(t, rdb, "ZPOPMIN", 100, "o1:5", 3)) // empty
			rdb.RPush(ctx, k.queue+":list", "l1", "l2", "l3")
			lk := k
			lk.queue = k.queue + ":list"
			step(lk.pop(t, rdb, "RPOP", 100, "o1:6", 1)) // l3
			step(lk.pop(t, rdb, "RPOP", 100, "o1:6", 1)) // sent again: l3, l2 back at its end
			step(lk.pop(t, rdb, "LPOP", 100, "o1:7", 1)) // l1
			step(lk.pop(t, rdb, "LPOP", 100, "o1:7", 1)) // sent again: l1, l2 back at its end
			answers[k.layout] = got
			var items []string
			for f, v := range rdb.HGetAll(ctx, k.items).Val() {
				items = append(items, f+"="+strings.ReplaceAll(v, k.queue, "<queue>"))
			}
			state[k.layout] = []string{fmt.Sprint(rdb.ZCard(ctx, k.window).Val()), fmt.Sprint(rdb.ZRange(ctx, k.queue, 0, -1).Val()),
				fmt.Sprint(rdb.LRange(ctx, lk.queue, 0, -1).Val()), fmt.Sprint(len(items))}
			for _, it := range items {
				if !strings.Contains(it, "<queue>") {
					t.Errorf("%s: %s: the record %s names another queue", s.name, k.layout, it)
				}
			}
		}
		want := []string{"[3 c1 0 -9 c2 -8 c3 -7]", "[3 c4 0 -6]", "[0 <nil> <wait>]", "[3 c4 0 -6]", "[3 c1 0 -9 c2 -8 c3 -7]",
			"[3 c5 0 -5 c6 -4]", "[3 c5 0 -5 c6 -4]", "[2 <nil> <wait>]", "[3 l3 0 0]", "[3 l3 0 0]", "[3 l1 0 0]", "[3 l1 0 0]"}
		for _, layout := range []string{"original", "cluster"} {
			if got := answers[layout]; fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s: %s pops answered\n%v\nwant\n%v", s.name, layout, got, want)
			}
		}
		// 8 hits in the window (4 and 4 more at 100 a minute), nothing left
		// in the priority queue, l2 in the list, 8 lease records.
		if o, c := fmt.Sprint(state["original"]), fmt.Sprint(state["cluster"]); o != c || o != "[8 [] [l2] 8]" {
			t.Errorf("%s: after the pops: original %s, cluster %s; want [8 [] [l2] 8] in both", s.name, o, c)
		}
	}
}

// Far from its limit, the lean pop reads no lease record and trims the
// window on some pops only (about one in eight), while the original's pop
// does both every time.
func TestTheLeanPopMakesFewerCommands(t *testing.T) {
	rdb := servers(t)[0].rdb
	count := func(cmd string) int64 {
		t.Helper()
		for _, line := range strings.Split(rdb.Info(ctx, "commandstats").Val(), "\n") {
			if rest, ok := strings.CutPrefix(line, "cmdstat_"+cmd+":calls="); ok {
				var n int64
				fmt.Sscan(strings.SplitN(rest, ",", 2)[0], &n)
				return n
			}
		}
		return 0
	}
	const pops = 40
	for _, k := range []popKeys{originalPopKeys, leanPopKeys} {
		rdb.ConfigResetStat(ctx)
		rdb.ZAdd(ctx, k.owners, redis.Z{Score: 4e9, Member: "o1"})
		for i := 1; i <= pops; i++ {
			rdb.ZAdd(ctx, k.queue, redis.Z{Score: -1, Member: fmt.Sprintf("c%d", i)})
		}
		for i := 1; i <= pops; i++ {
			if got := k.pop(t, rdb, "ZPOPMIN", 1000, fmt.Sprintf("o1:%d", i), 1); !strings.HasPrefix(got, "[3 c") {
				t.Fatalf("%s: pop %d: %s", k.layout, i, got)
			}
		}
		hget, trims := count("hget"), count("zremrangebyscore")
		switch k.layout {
		case "original":
			if hget != pops || trims != pops {
				t.Errorf("original: %d HGETs and %d trims in %d pops, want one each a pop", hget, trims, pops)
			}
		default:
			if hget != 0 || trims >= pops/2 {
				t.Errorf("cluster: %d HGETs and %d trims in %d pops, want none and about one in eight", hget, trims, pops)
			}
		}
		if n := rdb.HLen(ctx, k.items).Val(); n != pops {
			t.Errorf("%s: %d lease records, want %d", k.layout, n, pops)
		}
	}
}
