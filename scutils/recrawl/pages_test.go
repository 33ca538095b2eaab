package recrawl

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

func TestARememberedPageReadsBackWithItsValidatorsAndLinks(t *testing.T) {
	rdb := harness.StartRedis(t).TestClient(t)
	m := NewMemory(rdb, time.Hour)
	ctx := context.Background()
	lm := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	in := &Page{ETag: `"abc-1"`, LastModified: lm, Body: BodyPrint([]byte("hello"))}
	in.Schedule(nil, 1, true, true, 16)
	links := []string{"http://a.com/1\tone", "http://a.com/2\t"}
	if err := m.Put(ctx, "link", "http://a.com/", in, links); err != nil {
		t.Fatal(err)
	}
	got, err := m.Get(ctx, "link", "http://a.com/")
	if err != nil || got == nil || *got != *in {
		t.Fatalf("Get = %+v, %v; want %+v", got, err, in)
	}
	h := got.Validators()
	if h.Get("If-None-Match") != `"abc-1"` || h.Get("If-Modified-Since") != lm.Format(http.TimeFormat) {
		t.Errorf("validators %v", h)
	}
	back, ok, err := m.Links(ctx, "link", "http://a.com/")
	if err != nil || !ok || !slices.Equal(back, links) {
		t.Errorf("Links = %q %v %v, want %q", back, ok, err, links)
	}
	if p, _ := m.Get(ctx, "link", "http://a.com/other"); p != nil {
		t.Errorf("an unknown page reads %+v", p)
	}
	if ttl := rdb.TTL(ctx, PagesKey("link", "http://a.com/")).Val(); ttl <= 0 || ttl > time.Hour {
		t.Errorf("bucket ttl %v, want RECRAWL_PAGES_TTL", ttl)
	}
	long := &Page{ETag: strings.Repeat("x", MaxETag+1)}
	if err := m.Put(ctx, "link", "http://a.com/long", long, nil); err != nil {
		t.Fatal(err)
	}
	if p, _ := m.Get(ctx, "link", "http://a.com/long"); p == nil || p.ETag != "" {
		t.Errorf("an overlong ETag was kept: %+v", p)
	}
}

func TestAdaptiveIntervalsGrowWhileUnchangedAndResetOnAChange(t *testing.T) {
	var prev *Page
	var checked []int
	for run := 1; run <= 40; run++ {
		if !prev.Due(run) {
			continue
		}
		checked = append(checked, run)
		p := &Page{}
		p.Schedule(prev, run, run == 1 || run == 16, true, 8)
		prev = p
	}
	want := []int{1, 2, 4, 8, 16, 17, 19, 23, 31, 39}
	if !slices.Equal(checked, want) {
		t.Errorf("an adaptive page found changed in runs 1 and 16 only was checked in runs %v, want %v", checked, want)
	}
	p := &Page{}
	p.Schedule(&Page{Interval: 8}, 5, false, false, 8)
	if p.Interval != 1 || p.NextRun != 6 {
		t.Errorf("without adaptive a page is checked every run: %+v", p)
	}
}

// BenchmarkRedisBytesPerRememberedURL remembers 100,000 pages (a 20-byte
// ETag, a Last-Modified, a body fingerprint) of one spider and reports
// Redis's used_memory growth per page (target: at most 200 bytes).
func BenchmarkRedisBytesPerRememberedURL(b *testing.B) {
	rdb := harness.StartRedis(b).TestClient(b)
	ctx := context.Background()
	const pages = 100000
	for range b.N {
		rdb.FlushAll(ctx)
		before := usedMemory(b, rdb)
		lm := time.Now().UTC()
		pipe := rdb.Pipeline()
		for i := range pages {
			url := fmt.Sprintf("https://www.example.com/section/%d/article-%d.html", i%97, i)
			p := &Page{ETag: fmt.Sprintf(`"%018x"`, i), LastModified: lm, Body: uint64(i) * 0x9e3779b97f4a7c15}
			key, field, _ := urlKey("link", url)
			pipe.HSet(ctx, key, field, p.encode())
			if i%1000 == 999 {
				if _, err := pipe.Exec(ctx); err != nil {
					b.Fatal(err)
				}
			}
		}
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatal(err)
		}
		for k := range Buckets {
			rdb.Expire(ctx, fmt.Sprintf("recrawl:link:pages:%03x", k), time.Hour)
		}
		b.ReportMetric(float64(usedMemory(b, rdb)-before)/pages, "redis-bytes/url")
	}
}

// usedMemory is Redis's used_memory (INFO memory).
func usedMemory(tb testing.TB, rdb *redis.Client) int64 {
	tb.Helper()
	info, err := rdb.Info(context.Background(), "memory").Result()
	if err != nil {
		tb.Fatal(err)
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	tb.Fatal("no used_memory in INFO memory")
	return 0
}

// BenchmarkAdaptiveVersusFixed simulates a site of 1,000 leaf pages of
// which a known 10% (chosen at random, seed 1) change before each of 50
// runs, and checks them with the fixed schedule (every page every run) and
// the adaptive one (Page.Schedule, RECRAWL_ADAPTIVE_MAX 16): fetches per
// change detected, the share of changes detected, and the mean delay to
// detection in runs. A page that changes again before its change was
// detected has one change to detect.
func BenchmarkAdaptiveVersusFixed(b *testing.B) {
	for _, adaptive := range []bool{false, true} {
		b.Run("adaptive="+strconv.FormatBool(adaptive), func(b *testing.B) {
			for range b.N {
				s := simulate(adaptive, 1000, 50, 0.10, 16)
				b.ReportMetric(float64(s.fetches)/float64(max(s.detected, 1)), "fetches/change")
				b.ReportMetric(100*float64(s.detected)/float64(s.changes), "detected-%")
				b.ReportMetric(s.delay/float64(max(s.detected, 1)), "delay-runs")
				b.ReportMetric(float64(s.fetches)/50, "fetches/run")
			}
		})
	}
}

type simulation struct {
	fetches, changes, detected int
	delay                      float64 // runs from a change to its detection, summed
}

// simulate runs the policy over a site whose pages each change with
// probability rate before each run (after run 1); a change is detected
// when the page is next fetched (changes between two fetches count once
// detected, from the first of them).
func simulate(adaptive bool, pages, runs int, rate float64, most int) simulation {
	rng := rand.New(rand.NewPCG(1, 2))
	var s simulation
	mem := make([]*Page, pages)
	since := make([]int, pages) // run of the first undetected change, 0 none
	for run := 1; run <= runs; run++ {
		for i := range pages {
			if run > 1 && rng.Float64() < rate && since[i] == 0 {
				s.changes++ // a change not yet detected: one to detect
				since[i] = run
			}
			if adaptive && !mem[i].Due(run) {
				continue
			}
			s.fetches++
			changed := run == 1 || since[i] != 0
			if since[i] != 0 {
				s.detected++
				s.delay += float64(run - since[i])
				since[i] = 0
			}
			p := &Page{}
			p.Schedule(mem[i], run, changed, adaptive, most)
			mem[i] = p
		}
	}
	return s
}
