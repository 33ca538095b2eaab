package redisscripts_test

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisscripts"
)

const (
	bloomBits = "bloom:link:c1"
	bloomMeta = "bloom-meta:link:c1"
)

// fps are n distinct request fingerprints (SHA1 hex) of set.
func fps(set string, n int) []string {
	out := make([]string, n)
	for i := range out {
		s := sha1.Sum([]byte(set + strconv.Itoa(i)))
		out[i] = hex.EncodeToString(s[:])
	}
	return out
}

// patient is a client of rdb's server that waits a minute for an answer
// and never sends a script again: a machine shared with other work can
// take seconds over a batch of a few hundred requests, and a script sent
// again while Redis runs the first gets BUSY.
func patient(t *testing.T, rdb *redis.Client) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: rdb.Options().Addr, ReadTimeout: time.Minute, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	return c
}

// filterKeys are the keys a run of finish.lua through a compact filter
// writes: the lease set's, the queue, the filter's bits and meta, and
// the ledger counting it all (blacklist "": not read, as on a cluster).
type filterKeys struct {
	owners, records, queue, blacklist, bits, meta string
	ledger                                        redisscripts.Ledger
}

// crawl1Filter is crawl1's compact filter on one Redis.
var crawl1Filter = filterKeys{owners: "leases:link:owners", records: "leases:link:items", queue: "link:b.com:queue",
	blacklist: "link:blacklist", bits: bloomBits, meta: bloomMeta, ledger: crawl1}

// bloomFinish follows one page per 200 fingerprints through the compact
// filter of crawl1 (rate, capacity), a page a run, and says how many were
// queued and how many dropped as seen.
func bloomFinish(t *testing.T, rdb *redis.Client, fingerprints []string, rate float64, capacity int) (queued, seen int) {
	t.Helper()
	return bloomFinishIn(t, rdb, crawl1Filter, fingerprints, rate, capacity)
}

// bloomFinishIn is bloomFinish through the filter of k.
func bloomFinishIn(t testing.TB, rdb redis.Scripter, k filterKeys, fingerprints []string, rate float64, capacity int) (queued, seen int) {
	t.Helper()
	f := &redisscripts.Finish{LeaseOwners: k.owners, LeaseRecords: k.records, Stamp: stamp,
		LedgerTTL: time.Hour, DupeFilterTTL: time.Hour, DomainMaxPageTTL: time.Hour, GlobalPageTTL: time.Hour,
		BloomRate: rate, BloomCapacity: capacity}
	for len(fingerprints) > 0 {
		chunk := fingerprints[:min(200, len(fingerprints))]
		fingerprints = fingerprints[len(chunk):]
		g := redisscripts.FinishGroup{Queue: k.queue, Channel: "link:queue-announce", Ledger: k.ledger, Score: -1}
		for _, fp := range chunk {
			g.Requests = append(g.Requests, redisscripts.FinishRequest{Fingerprint: fp, Member: fp})
		}
		f.Pages = append(f.Pages, redisscripts.FinishPage{Blacklist: k.blacklist, Crawl: "app||c1", DupeFilter: k.bits,
			DupeFilterMeta: k.meta, Groups: []redisscripts.FinishGroup{g}})
	}
	for batch := range slices.Chunk(f.Pages, 1) { // Redis runs nothing else meanwhile
		f.Pages = batch
		res, err := f.Run(ctx, rdb)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range res.Pages {
			queued += p.Groups[0].Queued
			seen += p.Groups[0].Duplicates
		}
	}
	return queued, seen
}

func estimate(t *testing.T, rdb *redis.Client) float64 {
	t.Helper()
	v, err := rdb.HGet(ctx, crawl1.Hash, "dupefilter_false_drops_estimate").Float64()
	if err != nil && err != redis.Nil {
		t.Fatal(err)
	}
	return v
}

// 50,000 distinct fingerprints go into a compact filter that starts with
// room for 10,000 (it grows to four layers), then 50,000 others are asked:
// the share of them dropped as seen stays within the configured rate
// (0.002, with room for chance: four standard deviations); every
// fingerprint added is seen again; and the ledger's estimate of false
// drops is near the real count (all 100,000 were new, so every drop was
// false).
func TestTheCompactFilterKeepsItsRateAndTheLedgerEstimatesItsFalseDrops(t *testing.T) {
	rdb := patient(t, harness.StartRedis(t).TestClient(t))
	const rate, n = 0.002, 50000
	known, others := fps("known", n), fps("other", n)
	q1, falseDrops1 := bloomFinish(t, rdb, known, rate, 10000)
	if q1+falseDrops1 != n {
		t.Fatalf("%d queued + %d dropped of %d", q1, falseDrops1, n)
	}
	_, falseDrops2 := bloomFinish(t, rdb, others, rate, 10000)
	bound := rate*n + 4*math.Sqrt(rate*n)
	if float64(falseDrops2) > bound {
		t.Errorf("%d of %d new fingerprints were dropped as seen (rate %.5f), more than %v at rate %v", falseDrops2, n,
			float64(falseDrops2)/n, bound, rate)
	}
	if falseDrops2 == 0 {
		t.Errorf("no false drop among %d: the filter is not the size the rate asks for", n)
	}
	t.Logf("false drops: %d while adding, %d of %d asked after (rate %.5f)", falseDrops1, falseDrops2, n, float64(falseDrops2)/n)

	actual := float64(falseDrops1 + falseDrops2)
	est := estimate(t, rdb)
	if d := math.Abs(est - actual); d > 4*math.Sqrt(actual)+5 {
		t.Errorf("the ledger estimates %.1f false drops, the real count is %v", est, actual)
	}
	t.Logf("ledger estimate %.1f, real %v", est, actual)

	_, seen := bloomFinish(t, rdb, known[:10000], rate, 10000)
	if seen != 10000 {
		t.Errorf("%d of 10000 fingerprints added were not seen again", 10000-seen)
	}
	refused, _ := rdb.HGet(ctx, crawl1.Hash, "refused:duplicate").Int()
	if want := falseDrops1 + falseDrops2 + seen; refused != want {
		t.Errorf("the ledger counts %d duplicates, the script answered %d", refused, want)
	}
	meta := rdb.HGetAll(ctx, bloomMeta).Val()
	if meta["rate"] != "0.002" || meta["capacity"] != "10000" || meta["layers"] != "4" {
		t.Errorf("the filter's meta: %v", meta)
	}
	for _, k := range []string{bloomBits, bloomMeta} {
		if ttl := rdb.TTL(ctx, k).Val(); ttl <= 0 || ttl > time.Hour {
			t.Errorf("%s expires in %v, want DUPEFILTER_TIMEOUT", k, ttl)
		}
	}
}

// The compact filter leaves the same bits and counts on a real
// redis-server (BITFIELD) and on miniredis (GETBIT and SETBIT), and its
// parameters are the ones it was made with, whatever a later batch says.
func TestTheCompactFilterIsTheSameOnRedisAndMiniredis(t *testing.T) {
	var dumps []map[string]string
	for _, c := range servers(t) {
		c.rdb = patient(t, c.rdb)
		q, seen := bloomFinish(t, c.rdb, fps("a", 1500), 0.01, 1000)
		if q != 1500-seen || seen > 30 {
			t.Errorf("%s: %d queued, %d seen of 1500 distinct", c.name, q, seen)
		}
		if _, seen := bloomFinish(t, c.rdb, fps("a", 1500), 0.2, 5); seen != 1500 {
			t.Errorf("%s: %d of 1500 added were seen again", c.name, seen)
		}
		meta := c.rdb.HGetAll(ctx, bloomMeta).Val()
		if meta["rate"] != "0.01" || meta["capacity"] != "1000" || meta["layers"] != "2" || meta["1:n"] != "1000" {
			t.Errorf("%s: the filter's meta %v", c.name, meta)
		}
		d := dump(t, c.rdb)
		est, _ := strconv.ParseFloat(c.rdb.HGet(ctx, crawl1.Hash, "dupefilter_false_drops_estimate").Val(), 64)
		d[crawl1.Hash+" estimate"] = fmt.Sprintf("%.9f", est)
		delete(d, crawl1.Hash) // HINCRBYFLOAT writes its sum in each server's own format
		dumps = append(dumps, d)
	}
	if !reflect.DeepEqual(dumps[0], dumps[1]) {
		for _, k := range slices.Sorted(maps.Keys(dumps[0])) {
			if dumps[0][k] != dumps[1][k] {
				t.Errorf("%s: redis-server and miniredis differ", k)
			}
		}
	}
}
