package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

func TestCrawlRequestIsSentToTheIncomingTopicAsGiven(t *testing.T) {
	c, in := startOne(t)
	body := `{"url": "http://istresearch.com", "appid":"madisonTest", "crawlid":"abc123",  "priority": 5}`
	a := in.post(t, "/feed", body)
	if a.Code != 200 || harness.JSONText(t, a.Body) != `{"data":null,"error":null,"status":"SUCCESS"}` {
		t.Fatalf("%d %s", a.Code, a.Raw)
	}
	// The answer came after Kafka acknowledged the request: it is there now.
	if n := c.count(t, "demo.incoming"); n != 1 {
		t.Fatalf("incoming topic holds %d messages, want 1", n)
	}
	got := c.watchIncoming(t, "demo.incoming", 2, nil)
	harness.WaitFor(t, "the request is read back", 5*time.Second, func() bool { return len(got.all()) == 1 })
	if string(got.all()[0]) != body {
		t.Fatalf("sent %q, want the body as given %q", got.all()[0], body)
	}
	if !strings.Contains(in.logs.String(), `"message": "'feed' endpoint called"`) {
		t.Fatalf("no 'feed' log line:\n%s", in.logs.String())
	}
}

func TestStatsRequestReturnsTheAnswerAsData(t *testing.T) {
	c, in := startOne(t)
	c.fakeRedisMonitor(t, nil)
	a := in.post(t, "/feed", `{"uuid": "abc123", "appid": "stuff", "stats": "rest"}`)
	want := `{"data":{"answered_by":"fake","appid":"stuff","stats":"rest","uuid":"abc123"},"error":null,"status":"SUCCESS"}`
	if a.Code != 200 || harness.JSONText(t, a.Body) != want {
		t.Fatalf("%d %s", a.Code, a.Raw)
	}
	// This instance delivered the answer to its caller: it keeps no copy.
	if n := c.rdb.Exists(context.Background(), rediskeys.RestPollKey("abc123")).Val(); n != 0 {
		t.Fatal("an answer delivered at once was also kept for polling")
	}
}

func TestUnansweredRequestGetsAPollIDAndAnyInstanceCanPollTheLateAnswer(t *testing.T) {
	c := newCluster(t)
	// Both instances read the answer; both keep it (the same key, the same value).
	first := c.start(t, "WAIT_FOR_RESPONSE_TIME=0.3", "POLL_RESULT_TIMEOUT=60")
	second := c.start(t, "POLL_RESULT_TIMEOUT=60")
	gate := make(chan struct{})
	c.fakeRedisMonitor(t, gate)

	start := time.Now()
	a := first.post(t, "/feed", `{"uuid": "late-1", "appid": "stuff", "action": "info", "spiderid": "link"}`)
	if a.Code != 200 || harness.JSONText(t, a.Body) != `{"data":{"poll_id":"late-1"},"error":null,"status":"SUCCESS"}` {
		t.Fatalf("%d %s", a.Code, a.Raw)
	}
	if waited := time.Since(start); waited < 300*time.Millisecond {
		t.Fatalf("answered after %s, before WAIT_FOR_RESPONSE_TIME", waited)
	}
	if a := second.post(t, "/poll", `{"poll_id": "late-1"}`); a.Code != 404 {
		t.Fatalf("poll before the answer came: %d %s", a.Code, a.Raw)
	}

	close(gate) // the answer comes
	key := rediskeys.RestPollKey("late-1")
	harness.WaitFor(t, "both instances stored the late answer", 10*time.Second, func() bool {
		return first.logged("Stored answer for a later poll", `"uuid": "late-1"`) &&
			second.logged("Stored answer for a later poll", `"uuid": "late-1"`)
	})
	if ttl := c.rdb.TTL(context.Background(), key).Val(); ttl <= 0 || ttl > 60*time.Second {
		t.Fatalf("%s expires in %s, want within POLL_RESULT_TIMEOUT (60 s)", key, ttl)
	}
	a = second.post(t, "/poll", `{"poll_id": "late-1"}`)
	want := `{"data":{"answered_by":"fake","appid":"stuff","stats":null,"uuid":"late-1"},"error":null,"status":"SUCCESS"}`
	if a.Code != 200 || harness.JSONText(t, a.Body) != want {
		t.Fatalf("poll: %d %s", a.Code, a.Raw)
	}
	// A poll is answered once, as the original does.
	if a := first.post(t, "/poll", `{"poll_id": "late-1"}`); a.Code != 404 || harness.JSONText(t, a.Body) != failure("Could not find matching poll_id") {
		t.Fatalf("second poll: %d %s", a.Code, a.Raw)
	}
}

func TestConcurrentCallersEachGetTheirOwnAnswer(t *testing.T) {
	c, in := startOne(t, "WAIT_FOR_RESPONSE_TIME=10", "KAFKA_FEED_TIMEOUT=5")
	c.fakeRedisMonitor(t, nil)
	const callers = 40
	results := make([]answer, callers+2)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = in.post(t, "/feed", fmt.Sprintf(`{"uuid": "u-%d", "appid": "app-%d", "stats": "all"}`, i, i))
		}()
	}
	// Two callers asking with the same uuid both get the answer.
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[callers+i] = in.post(t, "/feed", `{"uuid": "shared", "appid": "app-shared", "stats": "all"}`)
		}()
	}
	wg.Wait()
	for i, a := range results {
		uuid, app := fmt.Sprintf("u-%d", i), fmt.Sprintf("app-%d", i)
		if i >= callers {
			uuid, app = "shared", "app-shared"
		}
		data, _ := a.Body["data"].(map[string]any)
		if a.Code != 200 || data["uuid"] != uuid || data["appid"] != app {
			t.Errorf("caller %d (%s): %d %s", i, uuid, a.Code, a.Raw)
		}
	}
	if n := in.svc.Waiting(); n != 0 {
		t.Fatalf("%d registrations left behind", n)
	}
}

func TestBadAnswersOnTheOutboundTopicAreSkipped(t *testing.T) {
	c, in := startOne(t, "WAIT_FOR_RESPONSE_TIME=10")
	gate := make(chan struct{})
	c.fakeRedisMonitor(t, gate)
	done := make(chan answer, 1)
	go func() { done <- in.post(t, "/feed", `{"uuid": "after-junk", "appid": "stuff", "stats": "all"}`) }()
	harness.WaitFor(t, "the request waits", 5*time.Second, func() bool { return in.svc.Waiting() == 1 })
	c.publish(t, `not json`, `[1, 2]`, `{"no": "uuid"}`, `{"uuid": 7}`, `{"uuid": "someone-else", "x": 1}`)
	close(gate)
	a := <-done
	if data, _ := a.Body["data"].(map[string]any); a.Code != 200 || data["uuid"] != "after-junk" {
		t.Fatalf("%d %s", a.Code, a.Raw)
	}
	if !strings.Contains(in.logs.String(), "Unparseable JSON Received from kafka") {
		t.Fatalf("junk not logged:\n%s", in.logs.String())
	}
	// An answer for a request nobody here waits for is kept for polling.
	harness.WaitFor(t, "the other answer is stored", 5*time.Second, func() bool {
		return c.rdb.Get(context.Background(), rediskeys.RestPollKey("someone-else")).Val() == `{"uuid": "someone-else", "x": 1}`
	})
}

func TestAnswerFoundInRedisThatIsNotJSONIs500(t *testing.T) {
	c, in := startOne(t)
	c.rdb.Set(context.Background(), rediskeys.RestPollKey("broken"), "{not json", time.Minute)
	a := in.post(t, "/poll", `{"poll_id": "broken"}`)
	if a.Code != 500 || harness.JSONText(t, a.Body) != failure("Unparseable JSON Received from redis") {
		t.Fatalf("%d %s", a.Code, a.Raw)
	}
	if c.rdb.Exists(context.Background(), rediskeys.RestPollKey("broken")).Val() != 0 {
		t.Fatal("the broken answer was kept")
	}
}

func TestPollReturnsAnAnswerStoredByThePythonService(t *testing.T) {
	c, in := startOne(t)
	// rest_service.py stores json.dumps(result), with Python's separators and no expiry.
	stored := `{"uuid": "py-1", "appid": "stuff", "server_time": 1478714930, "stats": "all", "nested": {"a": [1, 2.5]}}`
	c.rdb.Set(context.Background(), rediskeys.RestPollKey("py-1"), stored, 0)
	a := in.post(t, "/poll", `{"poll_id": "py-1"}`)
	var want any
	_ = json.Unmarshal([]byte(stored), &want)
	if a.Code != 200 || harness.JSONText(t, a.Body["data"]) != harness.JSONText(t, want) {
		t.Fatalf("%d %s", a.Code, a.Raw)
	}
}

func TestRequestsWithoutUUIDDoNotWait(t *testing.T) {
	c, in := startOne(t, "WAIT_FOR_RESPONSE_TIME=20")
	start := time.Now()
	for _, body := range []string{
		`{"url": "http://example.com/a", "appid": "testapp", "crawlid": "c1"}`,
		`{"url": "http://example.com/b", "appid": "testapp", "crawlid": "c2", "maxdepth": 2, "attrs": {"k": "v"}}`,
	} {
		if a := in.post(t, "/feed", body); a.Code != 200 || a.Body["data"] != nil {
			t.Fatalf("%d %s", a.Code, a.Raw)
		}
	}
	if time.Since(start) > 10*time.Second {
		t.Fatal("crawl requests waited for an answer")
	}
	if n := c.count(t, "demo.incoming"); n != 2 {
		t.Fatalf("incoming holds %d, want 2", n)
	}
	if keys := c.rdb.Keys(context.Background(), "rest:poll:*").Val(); len(keys) != 0 {
		t.Fatalf("poll keys %v", keys)
	}
}

// /feed validates render with the Kafka Monitor's schema and checks, and
// sends an accepted request on as given.
func TestFeedPassesRenderOnAndRefusesWhatTheKafkaMonitorRefuses(t *testing.T) {
	c, in := startOne(t)
	for _, tc := range []struct{ name, body, cause string }{
		{"an unknown option", `{"url": "http://example.com/", "appid": "abc", "crawlid": "1", "render": {"screenshot": true}}`, "additional properties 'screenshot' not allowed"},
		{"a timeout of zero", `{"url": "http://example.com/", "appid": "abc", "crawlid": "1", "render": {"timeout": 0}}`, "render: timeout: want seconds above 0"},
		{"a wait past the timeout", `{"url": "http://example.com/", "appid": "abc", "crawlid": "1", "render": {"wait_ms": 9000, "timeout": 5}}`, "render: wait_ms 9000 is not below the timeout"},
		{"a string", `{"url": "http://example.com/", "appid": "abc", "crawlid": "1", "render": "yes"}`, "want boolean or object"},
	} {
		a := in.post(t, "/feed", tc.body)
		if a.Code != 400 || !strings.Contains(a.Raw, tc.cause) {
			t.Errorf("%s: %d %s, want 400 saying %q", tc.name, a.Code, a.Raw, tc.cause)
		}
	}
	if n := c.count(t, "demo.incoming"); n != 0 {
		t.Fatalf("refused requests reached the incoming topic: %d", n)
	}
	body := `{"url": "http://spa.example/", "appid": "abc", "crawlid": "r1", "render": {"wait_for": "#app", "wait_ms": 200, "timeout": 12.5}}`
	if a := in.post(t, "/feed", body); a.Code != 200 {
		t.Fatalf("%d %s", a.Code, a.Raw)
	}
	got := c.watchIncoming(t, "demo.incoming", 2, nil)
	harness.WaitFor(t, "the request is read back", 30*time.Second, func() bool { return len(got.all()) == 1 })
	if string(got.all()[0]) != body {
		t.Fatalf("sent %q, want the body as given %q", got.all()[0], body)
	}
}
