package redisscripts_test

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisscripts"
)

var (
	stamp  = "1700000000.000"
	crawl1 = redisscripts.Ledger{Hash: "ledger:link:app:c1:counts", Active: "ledger:active", Crawls: "ledger:crawls",
		AppCrawls: "ledger:app:app:crawls", Member: `["link","app","c1"]`}
	crawl2 = redisscripts.Ledger{Hash: "ledger:link:app:c2:counts", Active: "ledger:active", Crawls: "ledger:crawls",
		AppCrawls: "ledger:app:app:crawls", Member: `["link","app","c2"]`}
)

var (
	crawl3 = redisscripts.Ledger{Hash: "ledger:link:app:c3:counts", Active: "ledger:active", Crawls: "ledger:crawls",
		AppCrawls: "ledger:app:app:crawls", Member: `["link","app","c3"]`}
	schedule3 = redisscripts.Schedule{Hash: "recrawl:link:app:c3:schedule", Due: "recrawl:due"}
)

func recrawlFeed(member string) redisscripts.RecrawlFeed {
	return redisscripts.RecrawlFeed{Schedule: schedule3, Ledger: crawl3, Every: 10 * time.Second, Runs: 3, Emit: "all",
		SeedField: "seed:http://r.com/", SeedKept: "link:r.com:queue\n" + member, Queue: "link:r.com:queue", Score: -1,
		Member: member, Stamp: stamp, TTL: time.Hour}
}

func recrawlStart(n int, now string) redisscripts.RecrawlStart {
	return redisscripts.RecrawlStart{Schedule: schedule3, Ledger: crawl3, Runs: "ledger:link:app:c3:runs", Kept: 10,
		Drop: []string{"link:dupefilter:c3"}, Channel: "link:queue-announce", N: n,
		Seeds: []redisscripts.RunSeed{{Queue: "link:r.com:queue", Score: -1, Member: fmt.Sprintf("r1 run %d", n)}},
		Stamp: now, TTL: time.Hour}
}

// step is a run of one script (or plain commands, setup) and the answer
// it must give.
type step struct {
	name  string
	setup func(rdb *redis.Client)
	args  redisscripts.Args
	want  string
}

// answer is a reply as text; a hash (HGETALL) as sorted pairs.
func answer(cmd *redis.Cmd, hash bool) string {
	v, err := cmd.Result()
	if err != nil {
		return "error " + err.Error()
	}
	if l, ok := v.([]any); ok && hash {
		var pairs []string
		for i := 0; i+1 < len(l); i += 2 {
			pairs = append(pairs, fmt.Sprint(l[i], "=", l[i+1]))
		}
		slices.Sort(pairs)
		return strings.Join(pairs, " ")
	}
	return fmt.Sprint(v)
}

// The same steps on a real redis-server and on miniredis (the local
// cluster's Redis, whose Lua is gopher-lua) give the same answers and
// leave the same data.
func TestEveryScriptDoesTheSameOnRedisAndMiniredis(t *testing.T) {
	owners, records := "leases:link:owners", "leases:link:items"
	steps := []step{
		{name: "a seed is queued and counted",
			args: redisscripts.Seed{Request: redisscripts.SeedRequest{Queue: "link:a.com:queue", Score: -5, Member: "a1", Ledger: crawl1},
				Stamp: stamp, TTL: time.Hour}, want: "1"},
		{name: "a seed fed twice is queued once",
			args: redisscripts.Seed{Request: redisscripts.SeedRequest{Queue: "link:a.com:queue", Score: -5, Member: "a1", Ledger: crawl1},
				Stamp: stamp, TTL: time.Hour}, want: "0"},
		{name: "seeds are queued in groups, the ones queued already left out",
			args: redisscripts.Seeds{Requests: []redisscripts.SeedRequest{
				{Queue: "link:a.com:queue", Score: -5, Member: "a2", Ledger: crawl1},
				{Queue: "link:b.com:queue", Score: -3, Member: "b1", Ledger: crawl1},
				{Queue: "link:a.com:queue", Score: -5, Member: "a1", Ledger: crawl1},
				{Queue: "link:b.com:queue", Score: -3, Member: "b2", Ledger: crawl2},
			}, Stamp: stamp, TTL: time.Hour}, want: "3"},
		{name: "a purge removes and counts what its queue holds",
			args: redisscripts.Purge{Queue: "link:a.com:queue", Ledger: crawl1, Field: "purged:stop", Stamp: stamp,
				Members: []string{"a2", "absent"}}, want: "1"},
		{name: "a stop ends the crawl and holds completers off",
			args: redisscripts.End{Ledger: crawl1, By: "stop", Holder: "h1", Now: stamp, Until: "1700000030.000"}, want: "1"},
		{name: "another holder is held off", args: redisscripts.End{Ledger: crawl1, By: "stop", Holder: "h2", Now: stamp, Until: stamp}, want: "0"},
		{name: "the holder releases it", args: redisscripts.Release{Ledger: crawl1, Holder: "h1"}, want: "1"},
		{name: "a crawl with work left is not claimed",
			args: redisscripts.Claim{Ledger: crawl1, Now: stamp, Claim: "m1|1700000030.000"}, want: "error redis: nil"},
		{name: "a finished crawl is claimed",
			setup: func(rdb *redis.Client) { rdb.HIncrBy(ctx, crawl1.Hash, "done", 2) },
			args:  redisscripts.Claim{Ledger: crawl1, Now: stamp, Claim: "m1|1700000030.000"},
			want: "completing=m1|1700000030.000 done=3 ended_by=stop last_activity=1700000000.000 purged:stop=1 " +
				"seeds=3 started=1700000000.000"},
		{name: "a claimed crawl completes",
			args: redisscripts.Complete{Ledger: crawl1, Claim: "m1|1700000030.000", Stamp: stamp, TTL: time.Hour}, want: "1"},
		{name: "a cluster crawl's completion is claimed",
			args: redisscripts.Mark{Marker: "cluster:{ledger}:completed:link:app:c1", Claim: "m1|1700000030.000", Now: stamp, TTL: time.Hour},
			want: "1"},
		{name: "another completer is held off by a live claim",
			args: redisscripts.Mark{Marker: "cluster:{ledger}:completed:link:app:c1", Claim: "m2|1700000030.000", Now: stamp, TTL: time.Hour},
			want: "0"},
		{name: "a claim past its deadline is taken over",
			args: redisscripts.Mark{Marker: "cluster:{ledger}:completed:link:app:c1", Claim: "m2|1700000090.000", Now: "1700000060.000", TTL: time.Hour},
			want: "1"},
		{name: "the old claimer cannot mark it done",
			args: redisscripts.Mark{Marker: "cluster:{ledger}:completed:link:app:c1", Done: true, Claim: "m1|1700000030.000", Now: stamp, TTL: time.Hour},
			want: "0"},
		{name: "the holder marks it done",
			args: redisscripts.Mark{Marker: "cluster:{ledger}:completed:link:app:c1", Done: true, Claim: "m2|1700000090.000", Now: stamp, TTL: time.Hour},
			want: "1"},
		{name: "a done crawl is not claimed again",
			args: redisscripts.Mark{Marker: "cluster:{ledger}:completed:link:app:c1", Claim: "m3|1700009999.000", Now: "1700009000.000", TTL: time.Hour},
			want: "2"},
		{name: "a stop on a cluster crawl already complete holds nothing",
			args: redisscripts.Hold{Marker: "cluster:{ledger}:completed:link:app:c1", Holder: "h1", Now: stamp, Until: "1700000030.000", TTL: time.Hour},
			want: "0"},
		{name: "a stop holds a cluster crawl's completion",
			args: redisscripts.Hold{Marker: "cluster:{ledger}:completed:link:app:c2", Holder: "h1", Now: stamp, Until: "1700000030.000", TTL: time.Hour},
			want: "1"},
		{name: "a completer cannot claim a held crawl",
			args: redisscripts.Mark{Marker: "cluster:{ledger}:completed:link:app:c2", Claim: "m1|1700000030.000", Now: stamp, TTL: time.Hour},
			want: "0"},
		{name: "another holder is held off the cluster crawl",
			args: redisscripts.Hold{Marker: "cluster:{ledger}:completed:link:app:c2", Holder: "h2", Now: stamp, Until: "1700000030.000", TTL: time.Hour},
			want: "0"},
		{name: "the holder's retry holds it again",
			args: redisscripts.Hold{Marker: "cluster:{ledger}:completed:link:app:c2", Holder: "h1", Now: stamp, Until: "1700000040.000", TTL: time.Hour},
			want: "1"},
		{name: "another holder cannot release it",
			args: redisscripts.Hold{Marker: "cluster:{ledger}:completed:link:app:c2", Release: true, Holder: "h2"}, want: "0"},
		{name: "the holder releases the cluster crawl",
			args: redisscripts.Hold{Marker: "cluster:{ledger}:completed:link:app:c2", Release: true, Holder: "h1"}, want: "1"},
		{name: "a released cluster crawl is claimed",
			args: redisscripts.Mark{Marker: "cluster:{ledger}:completed:link:app:c2", Claim: "m1|1700000030.000", Now: stamp, TTL: time.Hour},
			want: "1"},

		{name: "a lease owner registers", args: redisscripts.LeaseOwner{Owners: owners, TTL: "30", Owner: "o1"}, want: "1"},
		{name: "an owner without a deadline was reaped", args: redisscripts.LeaseOwner{Owners: owners, TTL: "30", Owner: "o2", Renew: true}, want: "0"},
		{name: "a throttled pop takes two items and leases them",
			setup: func(rdb *redis.Client) {
				rdb.ZAdd(ctx, "link:c.com:queue", redis.Z{Score: -9, Member: "c1"}, redis.Z{Score: -8, Member: "c2"})
			},
			args: redisscripts.Pop{Queue: "link:c.com:queue", Command: "ZPOPMIN", Window: "link:c.com:queue:throttle_window",
				Moderation: "link:c.com:queue:throttle_time", WindowSeconds: "60", ModerationSeconds: "0", Expiry: "120", Limit: 10,
				HitID: "hit:1", LeaseID: "o1:1", Owner: "o1", Owners: owners, Records: records, Max: 2},
			want: "[3 c1 0 -9 c2 -8]"},
		{name: "a pop without a lease",
			setup: func(rdb *redis.Client) { rdb.RPush(ctx, "link:e.com:queue", "e1") },
			args: redisscripts.Pop{Queue: "link:e.com:queue", Command: "RPOP", Window: "link:e.com:queue:throttle_window",
				Moderation: "link:e.com:queue:throttle_time", WindowSeconds: "60", ModerationSeconds: "6", Expiry: "120", Limit: 10,
				HitID: "hit:2", Max: 1},
			want: "[3 e1 0 0]"},
		{name: "a held lease is swapped for its retry",
			args: redisscripts.LeaseRequeue{Records: records, Queue: "link:c.com:queue", LeaseID: "o1:1", Score: -7.5, Member: "c1 retry"},
			want: "1"},
		{name: "a released lease goes back to its queue",
			args: redisscripts.LeaseRestore{Legacy: "leases:link", Records: records, IDs: []string{"o1:1:2", "o1:9"}}, want: "1"},
		{name: "an owner past its deadline is reaped",
			setup: func(rdb *redis.Client) {
				rdb.ZAdd(ctx, owners, redis.Z{Score: 1, Member: "o3"})
				rdb.HSet(ctx, records, "o3:1", "16:link:d.com:queue-4\nd1")
			},
			args: redisscripts.LeaseReap{Owners: owners, Records: records, Max: 10}, want: "1"},
		{name: "an expired lease of the earlier form goes back to its queue",
			setup: func(rdb *redis.Client) {
				rdb.ZAdd(ctx, "leases:link", redis.Z{Score: 1, Member: "old:1"})
				rdb.HSet(ctx, records, "old:1", `{"q": "link:d.com:queue", "s": "-2", "m": "d2"}`)
			},
			args: redisscripts.LeaseRestore{Legacy: "leases:link", Records: records, Max: 10}, want: "1"},

		{name: "a lock is renewed by its holder",
			setup: func(rdb *redis.Client) { rdb.Set(ctx, "lock:info:link:app", "token1", 0) },
			args:  redisscripts.LockRenew{Lock: "lock:info:link:app", Token: "token1", TTL: 5 * time.Second}, want: "1"},
		{name: "a lock is not renewed by another", args: redisscripts.LockRenew{Lock: "lock:info:link:app", Token: "token2", TTL: time.Second}, want: "0"},
		{name: "a lock is not released by another", args: redisscripts.LockRelease{Lock: "lock:info:link:app", Token: "token2"}, want: "0"},
		{name: "a lock is released by its holder", args: redisscripts.LockRelease{Lock: "lock:info:link:app", Token: "token1"}, want: "1"},
		{name: "a request changed meanwhile stays, its failures go",
			setup: func(rdb *redis.Client) {
				rdb.Set(ctx, "info:link:app", "uuid2", 0)
				rdb.Set(ctx, "lock:info:link:app:failures", "2", 0)
			},
			args: redisscripts.RequestDelete{Key: "info:link:app", Failures: "lock:info:link:app:failures", Value: "uuid1"}, want: "1"},
		{name: "a scheduled crawl's first seed makes its schedule and is queued in run 1",
			args: recrawlFeed("r1"), want: "1"},
		{name: "the same seed fed again is queued once", args: recrawlFeed("r1"), want: "1"},
		{name: "run 2 does not start before it is due", args: recrawlStart(2, stamp), want: "early"},
		{name: "run 2 waits for run 1 to complete", args: recrawlStart(2, "1700000011.000"), want: "busy"},
		{name: "run 2 starts once run 1 has completed",
			setup: func(rdb *redis.Client) {
				rdb.HSet(ctx, crawl3.Hash, "completed", stamp, "done", 1)
				rdb.SAdd(ctx, "link:dupefilter:c3", "fp1")
			},
			args: recrawlStart(2, "1700000012.000"), want: "started"},
		{name: "run 2 starts only once", args: recrawlStart(2, "1700000012.000"), want: "moved"},
		{name: "a seed fed during run 2 waits for run 3", args: recrawlFeed("r1 again"), want: "0"},
		{name: "a stop ends the schedule", args: redisscripts.RecrawlCancel{Schedule: schedule3, Member: crawl3.Member, By: "stop", TTL: time.Hour},
			want: "1"},
		{name: "an ended schedule ends once", args: redisscripts.RecrawlCancel{Schedule: schedule3, Member: crawl3.Member, By: "stop", TTL: time.Hour},
			want: "0"},
		{name: "no run starts after the schedule ended", args: recrawlStart(3, "1700000030.000"), want: "ended"},
	}
	var dumps []map[string]string
	for _, c := range servers(t) {
		for _, s := range steps {
			if s.setup != nil {
				s.setup(c.rdb)
			}
			_, isClaim := s.args.(redisscripts.Claim)
			if got := answer(redisscripts.Run(ctx, c.rdb, s.args), isClaim); got != s.want {
				t.Errorf("%s: %s: got %s, want %s", c.name, s.name, got, s.want)
			}
		}
		dumps = append(dumps, dump(t, c.rdb))
	}
	if !reflect.DeepEqual(dumps[0], dumps[1]) {
		for _, k := range slices.Sorted(maps.Keys(dumps[0])) {
			if dumps[0][k] != dumps[1][k] {
				t.Errorf("%s: redis-server %q, miniredis %q", k, dumps[0][k], dumps[1][k])
			}
		}
		for k, v := range dumps[1] {
			if _, ok := dumps[0][k]; !ok {
				t.Errorf("%s: only miniredis has it: %q", k, v)
			}
		}
	}
}

// finishBatch ends three leases, one of an owner reaped meanwhile and one
// sent again, and follows two pages: one through the duplicate filter and
// a page limit, one of a crawl that was stopped.
func finishBatch() *redisscripts.Finish {
	fetched := []redisscripts.LedgerCount{{Ledger: crawl1, Field: "published", N: 1}, {Ledger: crawl1, Field: "done", N: 1},
		{Ledger: crawl1, Field: "fetched:200", N: 1}}
	group := func(queue string, l redisscripts.Ledger, reqs ...string) redisscripts.FinishGroup {
		g := redisscripts.FinishGroup{Queue: queue, Channel: "link:queue-announce", Ledger: l, Score: -10}
		for i := 0; i < len(reqs); i += 2 {
			g.Requests = append(g.Requests, redisscripts.FinishRequest{Fingerprint: reqs[i], Member: reqs[i+1]})
		}
		return g
	}
	limited := group("link:y.com:queue", crawl1, "fp3", "y3", "fp4", "y4", "fp5", "y5")
	limited.DomainMaxPages, limited.DomainMaxPageKey, limited.GlobalPageKey = 2, "link:y.com:c1:domain_max", "link:y.com:c1:global"
	return &redisscripts.Finish{LeaseOwners: "leases:link:owners", LeaseRecords: "leases:link:items", Stamp: stamp,
		LedgerTTL: time.Hour, DupeFilterTTL: time.Hour, DomainMaxPageTTL: time.Hour, GlobalPageTTL: time.Hour,
		Acks: []redisscripts.FinishAck{
			{LeaseID: "o1:1", Owner: "o1", Counts: fetched, Page: &redisscripts.FinishPage{
				Blacklist: "link:blacklist", Crawl: "app||c1", DupeFilter: "link:dupefilter:c1", Fingerprint: "fpA",
				Refused: []redisscripts.FinishRefusal{{Ledger: crawl1, Reason: "regex", N: 2}},
				Groups: []redisscripts.FinishGroup{
					group("link:x.com:queue", crawl1, "fpA", "x0", "fp1", "x1", "fp2", `{"url": "x2", "q": "\"quoted\" \\ é"}`, "fp1", "x1 again"),
					limited,
				}}},
			{LeaseID: "o2:1", Owner: "o2", Counts: fetched, Page: &redisscripts.FinishPage{
				Blacklist: "link:blacklist", Crawl: "app||c1", DupeFilter: "link:dupefilter:c1",
				Groups: []redisscripts.FinishGroup{group("link:z.com:queue", crawl1, "fp9", "z9")}}},
			{LeaseID: "o1:2", Owner: "o1", Again: true, Counts: []redisscripts.LedgerCount{
				{Ledger: crawl1, Field: "dropped:timeout", N: 1}, {Ledger: crawl1, Field: "done", N: 1}}},
		},
		Pages: []redisscripts.FinishPage{{Blacklist: "link:blacklist", Crawl: "app||c2", DupeFilter: "link:dupefilter:c2",
			Refused: []redisscripts.FinishRefusal{{Ledger: crawl2, Reason: "off_domain", N: 1}},
			Groups:  []redisscripts.FinishGroup{group("link:x.com:queue", crawl2, "fp6", "x6", "fp7", "x7")}}},
	}
}

func TestFinishEndsLeasesAndQueuesFollowUpsAlikeOnRedisAndMiniredis(t *testing.T) {
	want := redisscripts.FinishResult{
		Acks: []redisscripts.AckResult{
			{State: redisscripts.AckFinished, Page: redisscripts.PageResult{Status: redisscripts.PageQueued,
				Groups: []redisscripts.GroupResult{{Queued: 2, Duplicates: 2}, {Queued: 1, Limited: 2}}}},
			{State: redisscripts.AckLost, Page: redisscripts.PageResult{Status: redisscripts.PageNotFollowed}},
			{State: redisscripts.AckFinished},
		},
		Pages: []redisscripts.PageResult{{Status: redisscripts.PageBlacklisted}},
	}
	// Sent again (its answer lost), the batch does nothing twice.
	again := redisscripts.FinishResult{
		Acks: []redisscripts.AckResult{
			{State: redisscripts.AckFinishedBefore, Page: redisscripts.PageResult{Status: redisscripts.PageNotFollowed}},
			{State: redisscripts.AckLost, Page: redisscripts.PageResult{Status: redisscripts.PageNotFollowed}},
			{State: redisscripts.AckFinishedBefore},
		},
		Pages: []redisscripts.PageResult{{Status: redisscripts.PageBlacklisted}},
	}
	var dumps []map[string]string
	for _, c := range servers(t) {
		c.rdb.ZAdd(ctx, "leases:link:owners", redis.Z{Score: 4e9, Member: "o1"})
		// o2 was reaped: its entry and its leases are gone.
		c.rdb.HSet(ctx, "leases:link:items", "o1:1", "r", "o1:2", "r")
		c.rdb.SAdd(ctx, "link:blacklist", "app||c2")
		sub := c.rdb.Subscribe(ctx, "link:queue-announce")
		if _, err := sub.Receive(ctx); err != nil {
			t.Fatal(err)
		}
		f := finishBatch()
		got, err := f.Run(ctx, c.rdb)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %+v, %v, want %+v", c.name, got, err, want)
		}
		var announced []string
		for range 2 {
			select {
			case m := <-sub.Channel():
				announced = append(announced, m.Payload)
			case <-time.After(5 * time.Second):
			}
		}
		sub.Close()
		if slices.Sort(announced); !slices.Equal(announced, []string{"link:x.com:queue", "link:y.com:queue"}) {
			t.Errorf("%s: new queues announced %v", c.name, announced)
		}
		for i := range f.Acks {
			f.Acks[i].Again = true
		}
		if got, err := f.Run(ctx, c.rdb); err != nil || !reflect.DeepEqual(got, again) {
			t.Errorf("%s: sent again: got %+v, %v, want %+v", c.name, got, err, again)
		}
		ledger := c.rdb.HGetAll(ctx, crawl1.Hash).Val()
		wantLedger := map[string]string{"enqueued": "3", "refused:duplicate": "2", "refused:page_limit": "2", "refused:regex": "2",
			"published": "1", "fetched:200": "1", "dropped:timeout": "1", "done": "2", "started": stamp, "last_activity": stamp}
		if !maps.Equal(ledger, wantLedger) {
			t.Errorf("%s: ledger %v, want %v", c.name, ledger, wantLedger)
		}
		if q := c.rdb.ZRange(ctx, "link:x.com:queue", 0, -1).Val(); !slices.Equal(q, []string{"x1", `{"url": "x2", "q": "\"quoted\" \\ é"}`}) {
			t.Errorf("%s: queued %q", c.name, q)
		}
		dumps = append(dumps, dump(t, c.rdb))
	}
	if !reflect.DeepEqual(dumps[0], dumps[1]) {
		t.Errorf("redis-server left %v\nminiredis left %v", dumps[0], dumps[1])
	}
}

// RunAll runs batches in one pipeline, sending the script whole to a
// Redis that does not know it (a fresh server, or one that lost its script
// cache), and answers each batch as Run does; a page without a blacklist
// key is not checked against one (on a Redis Cluster the caller reads it).
func TestRunAllAnswersAsRunAndFallsBackOnNoScript(t *testing.T) {
	c := servers(t)[0].rdb
	c.ZAdd(ctx, "leases:link:owners", redis.Z{Score: 4e9, Member: "o1"})
	c.HSet(ctx, "leases:link:items", "o1:1", "r", "o1:2", "r")
	c.SAdd(ctx, "link:blacklist", "app||c2")
	if err := c.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	unchecked := finishBatch()
	unchecked.Acks = nil
	unchecked.Pages[0].Blacklist = "" // c2 is blacklisted, but not looked at
	res, errs := redisscripts.RunAll(ctx, c, []*redisscripts.Finish{finishBatch(), unchecked})
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("RunAll: %v", errs)
	}
	if res[0].Acks[0].State != redisscripts.AckFinished || res[0].Pages[0].Status != redisscripts.PageBlacklisted {
		t.Errorf("first batch: %+v, want its first lease ended and its page blacklisted", res[0])
	}
	// The second batch's page, of the stopped crawl c2, goes through: no
	// blacklist is looked at.
	want := redisscripts.PageResult{Status: redisscripts.PageQueued, Groups: []redisscripts.GroupResult{{Queued: 2}}}
	if len(res[1].Pages) != 1 || !reflect.DeepEqual(res[1].Pages[0], want) {
		t.Errorf("unchecked page: %+v, want %+v", res[1].Pages, want)
	}
	if n := c.ZCard(ctx, "link:x.com:queue").Val(); n != 4 {
		t.Errorf("link:x.com:queue holds %d, want the first page's 2 and the unchecked page's 2", n)
	}
}

// RunPipelined runs scripts of several types in one pipeline, sending
// whole those Redis does not know (it lost its script cache), each answer
// in its place: two lease owners registered, one renewed, one found
// missing (reaped), and an expired owner's lease reaped.
func TestRunPipelinedAnswersEachRunAndFallsBackOnNoScript(t *testing.T) {
	c := servers(t)[0].rdb
	c.ZAdd(ctx, "leases:link:owners", redis.Z{Score: 1, Member: "dead"})
	c.HSet(ctx, "leases:link:items", "dead:1", "16:link:x.com:queue5\nm1")
	if err := c.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	cmds := redisscripts.RunPipelined(ctx, c, []redisscripts.Args{
		redisscripts.LeaseOwner{Owners: "leases:link:owners", TTL: "20", Owner: "o1"},
		redisscripts.LeaseOwner{Owners: "leases:link:owners", TTL: "20", Owner: "o1", Renew: true},
		redisscripts.LeaseOwner{Owners: "leases:link:owners", TTL: "20", Owner: "gone", Renew: true},
		redisscripts.LeaseReap{Owners: "leases:link:owners", Records: "leases:link:items", Max: 10},
	})
	var got []int
	for i, cmd := range cmds {
		n, err := cmd.Int()
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		got = append(got, n)
	}
	if got[1] != 1 || got[2] != 0 || got[3] != 1 {
		t.Errorf("answers %v: want o1 renewed (1), gone missing (0), one lease reaped (1)", got)
	}
	if owners := c.ZRange(ctx, "leases:link:owners", 0, -1).Val(); !slices.Equal(owners, []string{"o1"}) {
		t.Errorf("owners %v, want o1 alone", owners)
	}
	if q := c.ZRangeWithScores(ctx, "link:x.com:queue", 0, -1).Val(); !reflect.DeepEqual(q, []redis.Z{{Score: 5, Member: "m1"}}) {
		t.Errorf("queue %v, want the reaped lease's m1 at 5", q)
	}
}
