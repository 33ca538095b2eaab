package stats

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/redis-monitor/plugin"
	"github.com/scrapycluster/scrapy-cluster-go/redis-monitor/plugin/plugintest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

var server harness.SharedRedis

func TestMain(m *testing.M) { server.Main(m) }

// host is the machine of the spec's examples.
const host = "Madisons-MacBook-Pro-2.local"

// statsTimes are the windows the components write by default (STATS_TIMES).
var statsTimes = []int{900, 3600, 21600, 43200, 86400, 604800}

// setup empties Redis and returns the plugin set up as the monitor does.
func setup(t testing.TB) (*plugintest.Fixture, *redis.Client) {
	t.Helper()
	rdb := server.EmptyClient(t)
	return plugintest.Setup(t, &Monitor{}, rdb, nil, nil), rdb
}

// hits are event ages and how many events happened at each.
type hits map[time.Duration]int

// record writes what a component's stats writer leaves in Redis for one
// counter whose writer never trimmed (a dead process): every hit in every
// window key <base>:<seconds>, and lifetime unique events in the
// HyperLogLog <base>:lifetime.
func record(t testing.TB, rdb *redis.Client, now time.Time, base string, h hits, lifetime int) {
	t.Helper()
	ctx := context.Background()
	var members []redis.Z
	for age, n := range h {
		for i := range n {
			members = append(members, redis.Z{
				Score:  float64(now.Add(-age).UnixNano()) / 1e9,
				Member: fmt.Sprintf("%d-%d", age, i),
			})
		}
	}
	pipe := rdb.Pipeline()
	if len(members) > 0 {
		for _, w := range statsTimes {
			pipe.ZAdd(ctx, base+":"+strconv.Itoa(w), members...)
		}
	}
	if lifetime > 0 {
		events := make([]any, lifetime)
		for i := range events {
			events[i] = fmt.Sprintf("event-%d", i)
		}
		pipe.PFAdd(ctx, base+":lifetime", events...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
}

func set(t testing.TB, rdb *redis.Client, key string, value any) {
	t.Helper()
	if err := rdb.Set(context.Background(), key, value, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
}

// fillQueue puts n requests in a domain queue.
func fillQueue(t testing.TB, rdb *redis.Client, spider, domain string, n int) {
	t.Helper()
	ctx := context.Background()
	pipe := rdb.Pipeline()
	key := rediskeys.QueueKey(spider, domain)
	for i := range n {
		req := fmt.Sprintf(`{"url":"http://%s/%d","appid":"testapp","crawlid":"abc","spiderid":%q,"priority":1}`, domain, i, spider)
		pipe.ZAdd(ctx, key, redis.Z{Score: -1, Member: req})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
}

const (
	seconds10 = 10 * time.Second
	minutes30 = 30 * time.Minute
	hours5    = 5 * time.Hour
	hours20   = 20 * time.Hour
	days8     = 8 * 24 * time.Hour // older than every window
)

// writeSpecState writes the Redis state behind the spec's Stats API
// examples: the hits are spread over ages so that counting each window
// gives the examples' numbers, with some a week old that no window counts.
func writeSpecState(t testing.TB, rdb *redis.Client, now time.Time) {
	t.Helper()
	km := func(name string) string { return rediskeys.StatsKey("kafka-monitor", name) }
	set(t, rdb, rediskeys.HeartbeatKey("kafka-monitor", host, "e2be29329410"), now.Unix())
	set(t, rdb, rediskeys.HeartbeatKey("kafka-monitor", host, "60295fece216"), now.Unix())
	record(t, rdb, now, km("total"), hits{seconds10: 2, hours5: 21, hours20: 5, days8: 3}, 51)
	record(t, rdb, now, km("fail"), hits{hours5: 4, days8: 3}, 7)
	record(t, rdb, now, km("ActionHandler"), hits{hours5: 11}, 17)
	record(t, rdb, now, km("ScraperHandler"), hits{hours5: 5, hours20: 5, days8: 3}, 18)
	record(t, rdb, now, km("StatsHandler"), hits{seconds10: 2, hours5: 1}, 10)

	rm := func(name string) string { return rediskeys.StatsKey("redis-monitor", name) }
	set(t, rdb, rediskeys.HeartbeatKey("redis-monitor", host, "918145625a1e"), now.Unix())
	record(t, rdb, now, rm("total"), hits{seconds10: 4, minutes30: 4, hours5: 14}, 35)
	record(t, rdb, now, rm("ExpireMonitor"), hits{hours5: 2}, 2)
	record(t, rdb, now, rm("StopMonitor"), hits{hours5: 5}, 6)
	record(t, rdb, now, rm("StatsMonitor"), hits{seconds10: 4, minutes30: 4, hours5: 1}, 16)
	record(t, rdb, now, rm("InfoMonitor"), hits{hours5: 6}, 11)

	set(t, rdb, rediskeys.HeartbeatKey("rest", host, "c4ec35bf9c1a"), now.Unix())

	// Two link spiders; the 504s are so old only their lifetime remains.
	set(t, rdb, rediskeys.CrawlerHeartbeatKey(host, "link", "3f1a9c0e7b21"), now.Unix())
	set(t, rdb, rediskeys.CrawlerHeartbeatKey(host, "link", "8d42e5b6a90c"), now.Unix())
	record(t, rdb, now, rediskeys.CrawlerStatusKey(host, "link", "200"), hits{hours5: 39, hours20: 5, days8: 2}, 61)
	record(t, rdb, now, rediskeys.CrawlerStatusKey(host, "link", "504"), hits{days8: 4}, 4)

	fillQueue(t, rdb, "link", "istresearch.com", 229)
}

// writeNoise adds keys that look like stats or queues but are not, or have
// a type the plugin does not expect; none may change or break an answer.
func writeNoise(t testing.TB, rdb *redis.Client) {
	t.Helper()
	ctx := context.Background()
	set(t, rdb, rediskeys.QueueKey("link", "string.org"), "not a sorted set")
	if err := rdb.ZAdd(ctx, "link:foo:bar:queue", redis.Z{Score: 1, Member: "x"}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.LPush(ctx, rediskeys.QueueKey("wandering", "list.org"), "x").Err(); err != nil {
		t.Fatal(err)
	}
	set(t, rdb, rediskeys.StatsKey("kafka-monitor", "ActionHandler")+":900", "a string")
	set(t, rdb, rediskeys.StatsKey("kafka-monitor", "Bogus")+":lifetime", "not a hyperloglog")
	set(t, rdb, rediskeys.StatsKey("kafka-monitor", "total")+":900:extra", "wrong shape")
	set(t, rdb, "stats:redis-monitor:self:"+host, "no id")
	if err := rdb.HSet(ctx, rediskeys.CrawlerStatusKey(host, "link", "500")+":900", "a", "b").Err(); err != nil {
		t.Fatal(err)
	}
	set(t, rdb, rediskeys.CrawlerStatusKey(host, "link", "200")+":900:extra", "seven parts")
	set(t, rdb, "stats:crawler:"+host, "too short")
	set(t, rdb, "stats:other-component:total:900", "not ours")
}

// expected reads the spec example's stats fields from testdata.
func expected(t testing.TB, name string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// expectedAnswer is the spec's answer to a request for stats.
func expectedAnswer(t testing.TB, stats string) map[string]any {
	t.Helper()
	switch stats {
	case "crawler":
		return map[string]any{
			"spiders":  expected(t, "spider")["spiders"],
			"machines": expected(t, "machine")["machines"],
			"queue":    expected(t, "queue")["queues"],
		}
	case "all":
		return map[string]any{
			"kafka-monitor": expected(t, "kafka-monitor"),
			"redis-monitor": expected(t, "redis-monitor"),
			"rest":          expected(t, "rest"),
			"crawler":       expectedAnswer(t, "crawler"),
		}
	}
	return expected(t, stats)
}

// request puts a stats request in Redis, runs it through the plugin as the
// monitor does and returns the one answer published.
func request(t testing.TB, f *plugintest.Fixture, stats, appid, uuid string) map[string]any {
	t.Helper()
	ctx := context.Background()
	key := rediskeys.StatsRequestKey(stats, appid)
	if err := f.Env.Redis.Set(ctx, key, uuid, 0).Err(); err != nil {
		t.Fatal(err)
	}
	handled, err := f.Process(ctx, key)
	if err != nil || !handled {
		t.Fatalf("Process(%s) = %v, %v; want handled", key, handled, err)
	}
	published := f.Published()
	if len(published) != 1 {
		t.Fatalf("published %d answers, want 1: %v", len(published), published)
	}
	return published[0]
}

// compare reports every field where got differs from want, by path.
func compare(t testing.TB, path string, got, want any) {
	t.Helper()
	gm, gok := got.(map[string]any)
	wm, wok := want.(map[string]any)
	if !gok || !wok {
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %v, want %v", path, got, want)
		}
		return
	}
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range gm {
			if !yield(k) {
				return
			}
		}
		for k := range wm {
			if _, dup := gm[k]; !dup && !yield(k) {
				return
			}
		}
	})
	for _, k := range keys {
		g, inGot := gm[k]
		w, inWant := wm[k]
		switch {
		case !inWant:
			t.Errorf("%s.%s = %v, want no such field", path, k, g)
		case !inGot:
			t.Errorf("%s.%s missing, want %v", path, k, w)
		default:
			compare(t, path+"."+k, g, w)
		}
	}
}

// checkAnswer compares an answer with the spec's for stats, field by field.
func checkAnswer(t testing.TB, f *plugintest.Fixture, got map[string]any, stats, appid, uuid string) {
	t.Helper()
	want := expectedAnswer(t, stats)
	want["stats"] = stats
	want["appid"] = appid
	want["uuid"] = uuid
	want["server_time"] = float64(f.Clock.Unix())
	compare(t, "answer", got, want)
}

func TestAnswersHaveTheSpecExamplesShapes(t *testing.T) {
	for _, tc := range []struct{ stats, appid, uuid string }{
		{"kafka-monitor", "testapp", "cdefghi"},
		{"redis-monitor", "testapp", "2hij1"},
		{"rest", "testapp", "2hij1"},
		{"spider", "testapp", "hij1"},
		{"machine", "testapp", "hij12"},
		{"queue", "test", "1234567890"},
		{"crawler", "testapp", "hij1"},
		{"all", "testapp", "hij3"},
	} {
		t.Run(tc.stats, func(t *testing.T) {
			f, rdb := setup(t)
			writeSpecState(t, rdb, f.Clock)
			got := request(t, f, tc.stats, tc.appid, tc.uuid)
			checkAnswer(t, f, got, tc.stats, tc.appid, tc.uuid)
		})
	}
}

func TestKeysOfTheWrongTypeOrShapeAreLeftOut(t *testing.T) {
	for _, stats := range []string{"kafka-monitor", "redis-monitor", "rest", "spider", "machine", "queue", "crawler", "all"} {
		t.Run(stats, func(t *testing.T) {
			f, rdb := setup(t)
			writeSpecState(t, rdb, f.Clock)
			writeNoise(t, rdb)
			got := request(t, f, stats, "testapp", "u1")
			checkAnswer(t, f, got, stats, "testapp", "u1")
		})
	}
}

func TestAComponentWithoutKeysAnswersEmptySections(t *testing.T) {
	f, _ := setup(t)
	got := request(t, f, "all", "testapp", "u1")
	compare(t, "answer", got, map[string]any{
		"stats": "all", "appid": "testapp", "uuid": "u1", "server_time": float64(f.Clock.Unix()),
		"kafka-monitor": map[string]any{},
		"redis-monitor": map[string]any{},
		"rest":          map[string]any{},
		"crawler": map[string]any{
			"spiders":  map[string]any{"unique_spider_count": 0.0, "total_spider_count": 0.0},
			"machines": map[string]any{"count": 0.0},
			"queue":    map[string]any{"total_backlog": 0.0},
		},
	})
}

func TestWindowsCountOnlyTheHitsInsideThem(t *testing.T) {
	f, rdb := setup(t)
	ctx := context.Background()
	now := float64(f.Clock.UnixNano()) / 1e9
	zadd := func(key string, scores ...float64) {
		t.Helper()
		for i, s := range scores {
			if err := rdb.ZAdd(ctx, key, redis.Z{Score: s, Member: strconv.Itoa(i)}).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Untrimmed: three hits inside the 900 s window, two before it, one
	// exactly at its start (the writers trim score <= now-window).
	zadd("stats:redis-monitor:total:900", now-1, now-450, now-899.5, now-900, now-901, now-5000)
	// Only hits older than the window: as if trimmed away.
	zadd("stats:redis-monitor:fail:900", now-1000, now-2000)
	// A window that is not a number is counted whole, as the original.
	zadd("stats:redis-monitor:InfoMonitor:hourly", now-1, now-1e6)
	// Hits from the future (a writer's clock ahead) are inside the window.
	zadd("stats:redis-monitor:StopMonitor:60", now+2, now-30, now-61)

	got := request(t, f, "redis-monitor", "testapp", "u1")
	compare(t, "answer", got, map[string]any{
		"stats": "redis-monitor", "appid": "testapp", "uuid": "u1", "server_time": float64(f.Clock.Unix()),
		"total": map[string]any{"900": 3.0},
		"plugins": map[string]any{
			"InfoMonitor": map[string]any{"hourly": 2.0},
			"StopMonitor": map[string]any{"60": 2.0},
		},
	})
}

func TestMachinesSumTheirSpidersAndSpidersTheirHosts(t *testing.T) {
	f, rdb := setup(t)
	now := f.Clock
	record(t, rdb, now, rediskeys.CrawlerStatusKey("host1", "link", "200"), hits{seconds10: 3, hours5: 1}, 4)
	record(t, rdb, now, rediskeys.CrawlerStatusKey("host1", "wandering", "200"), hits{seconds10: 2}, 2)
	record(t, rdb, now, rediskeys.CrawlerStatusKey("host1", "wandering", "404"), hits{seconds10: 1}, 1)
	record(t, rdb, now, rediskeys.CrawlerStatusKey("host2", "link", "200"), hits{hours20: 7}, 7)
	set(t, rdb, rediskeys.CrawlerHeartbeatKey("host1", "link", "a"), now.Unix())
	set(t, rdb, rediskeys.CrawlerHeartbeatKey("host1", "wandering", "b"), now.Unix())
	set(t, rdb, rediskeys.CrawlerHeartbeatKey("host2", "link", "c"), now.Unix())
	set(t, rdb, rediskeys.CrawlerHeartbeatKey("host3", "link", "d"), now.Unix())

	// every is n hits in every window.
	every := func(n float64) map[string]any {
		return map[string]any{"900": n, "3600": n, "21600": n, "43200": n, "86400": n, "604800": n}
	}
	got := request(t, f, "crawler", "testapp", "u1")
	compare(t, "answer.machines", got["machines"], map[string]any{
		"count": 2.0,
		"host1": map[string]any{
			"200": map[string]any{"900": 5.0, "3600": 5.0, "21600": 6.0, "43200": 6.0, "86400": 6.0, "604800": 6.0, "lifetime": 6.0},
			"404": withLifetime(every(1), 1),
		},
		"host2": map[string]any{
			"200": map[string]any{"86400": 7.0, "604800": 7.0, "lifetime": 7.0},
		},
	})
	link200 := map[string]any{"900": 3.0, "3600": 3.0, "21600": 4.0, "43200": 4.0, "86400": 11.0, "604800": 11.0, "lifetime": 11.0}
	compare(t, "answer.spiders", got["spiders"], map[string]any{
		"unique_spider_count": 2.0,
		"total_spider_count":  4.0,
		// link's 200 counters of host1 and host2 add up.
		"link":      map[string]any{"count": 3.0, "200": link200},
		"wandering": map[string]any{"count": 1.0, "200": withLifetime(every(2), 2), "404": withLifetime(every(1), 1)},
	})
}

func withLifetime(w map[string]any, n float64) map[string]any {
	w["lifetime"] = n
	return w
}

func TestQueuesListEveryDomainSorted(t *testing.T) {
	f, rdb := setup(t)
	fillQueue(t, rdb, "link", "istresearch.com", 229)
	fillQueue(t, rdb, "link", "dmoz.org", 3)
	fillQueue(t, rdb, "link", "127.0.0.1.", 2)
	fillQueue(t, rdb, "link", "::1.", 4)
	fillQueue(t, rdb, "wandering", "example.com", 1)
	writeNoise(t, rdb)

	got := request(t, f, "queue", "testapp", "u1")
	compare(t, "answer.queues", got["queues"], map[string]any{
		"queue_link": map[string]any{
			"domains": []any{
				map[string]any{"domain": "127.0.0.1.", "backlog": 2.0},
				map[string]any{"domain": "::1.", "backlog": 4.0},
				map[string]any{"domain": "dmoz.org", "backlog": 3.0},
				map[string]any{"domain": "istresearch.com", "backlog": 229.0},
			},
			"spider_backlog": 238.0,
			"num_domains":    4.0,
		},
		"queue_wandering": map[string]any{
			"domains":        []any{map[string]any{"domain": "example.com", "backlog": 1.0}},
			"spider_backlog": 1.0,
			"num_domains":    1.0,
		},
		"total_backlog": 239.0,
	})
}

// roundTrip is v as a consumer decodes it from JSON.
func roundTrip(t testing.TB, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestManyScanPagesAreReadWhole(t *testing.T) {
	f, rdb := setup(t)
	const domains = 2500 // several SCAN pages, with other keys between them
	for i := range domains {
		fillQueue(t, rdb, "link", fmt.Sprintf("d%04d.com", i), 1+i%3)
	}
	for i := range 3000 {
		set(t, rdb, fmt.Sprintf("unrelated:%d", i), i)
	}
	got := request(t, f, "queue", "testapp", "u1")
	queues := got["queues"].(map[string]any)
	link := queues["queue_link"].(map[string]any)
	wantBacklog := 0.0
	for i := range domains {
		wantBacklog += float64(1 + i%3)
	}
	if link["num_domains"] != float64(domains) || link["spider_backlog"] != wantBacklog || queues["total_backlog"] != wantBacklog {
		t.Fatalf("num_domains %v spider_backlog %v total_backlog %v; want %d, %v, %v",
			link["num_domains"], link["spider_backlog"], queues["total_backlog"], domains, wantBacklog, wantBacklog)
	}
	list := link["domains"].([]any)
	for i, d := range list {
		if want := fmt.Sprintf("d%04d.com", i); d.(map[string]any)["domain"] != want {
			t.Fatalf("domains[%d] = %v, want %s", i, d, want)
		}
	}
}

func TestAnUnknownStatsTypePublishesNothing(t *testing.T) {
	f, rdb := setup(t)
	log := captureLog(t, f)
	ctx := context.Background()
	key := rediskeys.StatsRequestKey("bogus", "testapp")
	set(t, rdb, key, "u1")
	handled, err := f.Process(ctx, key)
	if err != nil || !handled {
		t.Fatalf("Process = %v, %v; want handled without error", handled, err)
	}
	if p := f.Published(); len(p) != 0 {
		t.Fatalf("published %v, want nothing", p)
	}
	if n := rdb.Exists(ctx, key).Val(); n != 0 {
		t.Fatal("request key left in Redis")
	}
	want := []logLine{
		{"INFO", "Received bogus stats request", map[string]any{"action": "stats", "appid": "testapp", "uuid": "u1"}},
		{"WARNING", "Received invalid stats request: bogus", map[string]any{"action": "stats", "appid": "testapp", "uuid": "u1"}},
	}
	if !reflect.DeepEqual(*log, want) {
		t.Fatalf("log lines %v, want %v", *log, want)
	}
}

type logLine struct {
	level, message string
	extra          map[string]any
}

// captureLog sets the plugin up again with a logger at DEBUG whose INFO and
// WARNING lines are recorded.
func captureLog(t testing.TB, f *plugintest.Fixture) *[]logLine {
	t.Helper()
	cfg := logfactory.DefaultConfig()
	cfg.Level = "DEBUG"
	cfg.Output = discard{}
	log, err := logfactory.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var lines []logLine
	for _, level := range []string{"INFO", "WARNING", "ERROR"} {
		err := log.RegisterCallback(level, func(msg string, extra map[string]any) {
			lines = append(lines, logLine{level, msg, extra})
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
	}
	env := f.Env
	env.Logger = log
	if err := f.Plugin.Setup(context.Background(), env); err != nil {
		t.Fatal(err)
	}
	return &lines
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func TestLogsTheRequestAndTheAnswerAsTheOriginal(t *testing.T) {
	f, rdb := setup(t)
	log := captureLog(t, f)
	fillQueue(t, rdb, "link", "istresearch.com", 229)
	got := request(t, f, "queue", "test", "1234567890")

	if len(*log) != 2 {
		t.Fatalf("log lines %v, want 2", *log)
	}
	received := (*log)[0]
	if received.level != "INFO" || received.message != "Received queue stats request" ||
		!reflect.DeepEqual(received.extra, map[string]any{"action": "stats", "appid": "test", "uuid": "1234567890"}) {
		t.Errorf("first line %v", received)
	}
	sent := (*log)[1]
	if sent.level != "INFO" || sent.message != "Sent stats to kafka" || sent.extra["success"] != true {
		t.Errorf("second line %v", sent)
	}
	// The answer's fields are in the line, for the ELK dashboards.
	delete(sent.extra, "success")
	compare(t, "log extra", roundTrip(t, sent.extra), got)
}

func TestAPublishFailureIsReturnedAndLogged(t *testing.T) {
	f, rdb := setup(t)
	log := captureLog(t, f)
	// Keep the capturing logger, swap Publish for one that fails.
	p := f.Plugin.(*Monitor)
	env := p.Env
	env.Publish = func(context.Context, map[string]any) error { return context.DeadlineExceeded }
	if err := p.Setup(context.Background(), env); err != nil {
		t.Fatal(err)
	}
	key := rediskeys.StatsRequestKey("rest", "testapp")
	set(t, rdb, key, "u1")
	err := p.Handle(context.Background(), key, "u1")
	if err == nil || !strings.Contains(err.Error(), "publish rest stats") {
		t.Fatalf("Handle = %v, want the publish error", err)
	}
	last := (*log)[len(*log)-1]
	if last.level != "ERROR" || last.message != "Failed to send stats to kafka" || last.extra["success"] != false {
		t.Fatalf("last log line %v", last)
	}
}

func TestARedisFailureFailsTheRequest(t *testing.T) {
	f, rdb := setup(t)
	writeSpecState(t, rdb, f.Clock)
	broken := server.Client()
	if err := broken.Close(); err != nil {
		t.Fatal(err)
	}
	env := f.Env
	env.Redis = broken
	p := &Monitor{}
	if err := p.Setup(context.Background(), env); err != nil {
		t.Fatal(err)
	}
	for _, stats := range []string{"kafka-monitor", "queue", "all"} {
		if err := p.Handle(context.Background(), rediskeys.StatsRequestKey(stats, "testapp"), "u1"); err == nil {
			t.Errorf("%s: Handle succeeded without Redis", stats)
		}
	}
	if got := f.Published(); len(got) != 0 {
		t.Fatalf("published %v without Redis", got)
	}
}

func TestRegisteredUnderTheOriginalsName(t *testing.T) {
	loaded, err := plugin.Load(map[string]any{"plugins.stats_monitor.StatsMonitor": 500})
	if err != nil {
		t.Fatal(err)
	}
	if len(loaded) != 1 {
		t.Fatalf("loaded %v", loaded)
	}
	p := loaded[0].Plugin
	if p.Name() != "StatsMonitor" || p.Pattern() != "statsrequest:*:*" {
		t.Fatalf("Name %q Pattern %q", p.Name(), p.Pattern())
	}
	if _, ok := p.(*Monitor); !ok {
		t.Fatalf("loaded %T", p)
	}
}
