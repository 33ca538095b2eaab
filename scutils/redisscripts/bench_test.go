package redisscripts_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisscripts"
)

// BenchmarkFinish is Redis's work per page in finish.lua, the crawler's
// hottest script: batches of 20 acknowledgements of one crawl, every
// followEvery-th page with 10 new follow-up requests (members of ~400
// bytes) to one queue, each run's queue deleted after it. It reports
// redis-cpu-µs/page (INFO cpu: the whole server, reading and answering
// included, and the two INFO commandstats per batch that give
// script-µs/page, the script's own time).
// In BenchmarkCrawlCost's crawl about one page in ten has follow-ups:
// followEvery=10.
//
//	go test -run '^$' -bench Finish -benchtime 2000x ./scutils/redisscripts/
//
// The batch as one JSON object (ARGV[1], acknowledgements grouped by owner
// and tally) and the requests as plain arguments cost Redis no more than
// the positional, number-coded arguments they replaced: measured against
// them in one run, alternating blocks of 10 batches, on a loaded 2-core
// machine (three runs each), Redis CPU per page was 17.8, 21.2 and 20.8 µs
// against 18.5, 22.2 and 21.6 (followEvery=10), and 125.9, 139.8 and 132.9
// against 126.5, 142.4 and 136.9 (followEvery=1).
func BenchmarkFinish(b *testing.B) {
	for _, every := range []int{10, 1} {
		b.Run("followEvery="+strconv.Itoa(every), func(b *testing.B) { benchmarkFinish(b, every) })
	}
}

func benchmarkFinish(b *testing.B, followEvery int) {
	rdb := harness.StartRedis(b).TestClient(b)
	rdb.ZAdd(ctx, "leases:link:owners", redis.Z{Score: 4e9, Member: "a1b2c3d4e5f6"})
	member := `{"url": "http://127.0.0.1:8000/page/%d", "appid": "bench", "crawlid": "c1", "spiderid": "link", ` +
		`"priority": 10, "maxdepth": 3, "curdepth": 2, "retry_times": 0, "expires": 0, "allowed_domains": null, ` +
		`"allow_regex": ["/page/"], "deny_regex": null, "deny_extensions": null, "useragent": null, "cookie": null, ` +
		`"attrs": null, "domain_max_pages": null, "meta": {}}`
	tally := []redisscripts.LedgerCount{{Ledger: crawl1, Field: "published", N: 1}, {Ledger: crawl1, Field: "done", N: 1},
		{Ledger: crawl1, Field: "fetched:200", N: 1}}
	const perBatch, perPage = 20, 10
	seq := 0
	var script float64
	cpu0 := harness.RedisCPU(b, rdb)
	for b.Loop() {
		f := &redisscripts.Finish{LeaseOwners: "leases:link:owners", LeaseRecords: "leases:link:items", Stamp: stamp,
			LedgerTTL: time.Hour, DupeFilterTTL: time.Hour, DomainMaxPageTTL: time.Hour, GlobalPageTTL: time.Hour}
		for range perBatch {
			seq++
			a := redisscripts.FinishAck{LeaseID: "a1b2c3d4e5f6:" + strconv.Itoa(seq), Owner: "a1b2c3d4e5f6", Counts: tally}
			if seq%followEvery == 0 {
				g := redisscripts.FinishGroup{Queue: "link:127.0.0.1.:queue", Channel: "link:queue-announce", Ledger: crawl1, Score: -10}
				for i := range perPage {
					n := seq*perPage + i
					g.Requests = append(g.Requests, redisscripts.FinishRequest{Fingerprint: strconv.Itoa(n),
						Member: strings.Replace(member, "%d", strconv.Itoa(n), 1)})
				}
				a.Page = &redisscripts.FinishPage{Blacklist: "link:blacklist", Crawl: "bench||c1", DupeFilter: "link:dupefilter:c1",
					Fingerprint: "page" + strconv.Itoa(seq), Groups: []redisscripts.FinishGroup{g}}
			}
			f.Acks = append(f.Acks, a)
		}
		before := commandUsec(b, rdb, "evalsha")
		if _, err := f.Run(ctx, rdb); err != nil {
			b.Fatal(err)
		}
		script += commandUsec(b, rdb, "evalsha") - before
		rdb.Del(ctx, "link:127.0.0.1.:queue")
	}
	pages := float64(seq)
	b.ReportMetric(float64((harness.RedisCPU(b, rdb)-cpu0).Microseconds())/pages, "redis-cpu-µs/page")
	b.ReportMetric(script/pages, "script-µs/page")
}

// commandUsec is Redis's own time in cmd so far (INFO commandstats).
func commandUsec(b *testing.B, rdb *redis.Client, cmd string) float64 {
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(info) {
		if rest, ok := strings.CutPrefix(line, "cmdstat_"+cmd+":"); ok {
			for f := range strings.SplitSeq(strings.TrimSpace(rest), ",") {
				if v, ok := strings.CutPrefix(f, "usec="); ok {
					n, _ := strconv.ParseFloat(v, 64)
					return n
				}
			}
		}
	}
	return 0
}
