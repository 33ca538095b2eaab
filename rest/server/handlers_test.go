package server_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

func failure(message string) string {
	return `{"data":null,"error":{"message":"` + message + `"},"status":"FAILURE"}`
}

// failureBecause is failure with a cause, as compact JSON.
func failureBecause(message, cause string) string {
	b, _ := json.Marshal(map[string]any{"data": nil, "error": map[string]string{"cause": cause, "message": message}, "status": "FAILURE"})
	return string(b)
}

func TestBadRequestsGetTheSpecsFailures(t *testing.T) {
	c, in := startOne(t, "MAX_REQUEST_BYTES=1000")
	const mustJSON = "The payload must be valid JSON."
	for _, tc := range []struct {
		name, method, path, contentType, body string
		code                                  int
		want                                  string // the whole answer, as compact JSON
		cause                                 string // for schema failures: part of error.cause
	}{
		{"feed of broken JSON", "POST", "/feed", "application/json", `{"url": "http://example.com"`, 400, failureBecause(mustJSON, "invalid JSON: unexpected EOF"), ""},
		{"feed of JSON with data after it", "POST", "/feed", "application/json", `{"appid": "abc"} {}`, 400, failureBecause(mustJSON, "invalid JSON: data after the JSON value"), ""},
		{"feed of null", "POST", "/feed", "application/json", `null`, 400, failureBecause(mustJSON, "no plugin's schema accepts it: ScraperHandler: at '': got null, want object | "+
			"ActionHandler: at '': got null, want object | StatsHandler: at '': got null, want object | ZookeeperHandler: at '': got null, want object"), ""},
		{"feed of an empty body", "POST", "/feed", "application/json", ``, 400, failureBecause(mustJSON, "empty request"), ""},
		{"feed of whitespace", "POST", "/feed", "application/json", " \r\n", 400, failureBecause(mustJSON, "empty request"), ""},
		{"feed of text that is not UTF-8", "POST", "/feed", "application/json", "{\"appid\": \"ab\xff\xfe\"}", 400, failureBecause(mustJSON, "not UTF-8: byte 0xff at offset 13"), ""},
		{"feed sent as text/plain", "POST", "/feed", "text/plain", `{"url": "http://example.com", "appid": "abc", "crawlid": "1"}`, 400, failureBecause(mustJSON, `content type is "text/plain"`), ""},
		{"feed without a content type", "POST", "/feed", "", `{"url": "http://example.com", "appid": "abc", "crawlid": "1"}`, 400, failureBecause(mustJSON, `content type is ""`), ""},
		{"feed with a malformed content type", "POST", "/feed", "application/json; charset", `{}`, 400, failureBecause(mustJSON, `content type is "application/json; charset"`), ""},
		{"feed with an unknown key", "POST", "/feed", "application/json", `{"uuid": "abc123", "appid": "stuff", "crazykey": 1}`, 400, "",
			"additional properties 'crazykey' not allowed"},
		{"feed of an ftp URL", "POST", "/feed", "application/json", `{"url": "ftp://example.com/", "appid": "abc", "crawlid": "1"}`, 400, "",
			`url: scheme "ftp" not allowed; want http or https`},
		{"feed of a regex that does not compile", "POST", "/feed", "application/json", `{"url": "http://example.com/", "appid": "abc", "crawlid": "1", "deny_regex": ["(?!x)"]}`, 400, "",
			`deny_regex[0] "(?!x)": error parsing regexp`},
		{"feed of a crawl without a url", "POST", "/feed", "application/json", `{"appid": "testapp", "crawlid": "abc"}`, 400, "",
			"missing propert"},
		{"feed of an array", "POST", "/feed", "application/json", `[{"appid": "testapp"}]`, 400, "", "got array, want object"},
		{"feed of a priority out of range", "POST", "/feed", "application/json", `{"url": "http://example.com", "appid": "abc", "crawlid": "1", "priority": 101}`, 400, "", "priority"},
		{"feed of a float where an integer belongs", "POST", "/feed", "application/json", `{"url": "http://example.com", "appid": "abc", "crawlid": "1", "maxdepth": 1.0}`, 400, "", "want integer"},
		{"feed larger than MAX_REQUEST_BYTES", "POST", "/feed", "application/json", `{"url": "http://example.com/` + strings.Repeat("a", 1000) + `", "appid": "abc", "crawlid": "1"}`, 413,
			`{"data":null,"error":{"cause":"The body must not be larger than 1000 bytes (MAX_REQUEST_BYTES).","message":"The payload is too large."},"status":"FAILURE"}`, ""},
		{"poll of broken JSON", "POST", "/poll", "application/json", `{"poll_id": `, 400, failure(mustJSON), ""},
		{"poll sent as form data", "POST", "/poll", "application/x-www-form-urlencoded", `poll_id=abc`, 400, failure(mustJSON), ""},
		{"poll without poll_id", "POST", "/poll", "application/json", `{}`, 400, "", "missing property 'poll_id'"},
		{"poll with a number as poll_id", "POST", "/poll", "application/json", `{"poll_id": 3}`, 400, "", "want string"},
		{"poll with an empty poll_id", "POST", "/poll", "application/json", `{"poll_id": ""}`, 400, "", "poll_id"},
		{"poll with a poll_id longer than 100", "POST", "/poll", "application/json", `{"poll_id": "` + strings.Repeat("x", 101) + `"}`, 400, "", "poll_id"},
		{"poll with an extra key", "POST", "/poll", "application/json", `{"poll_id": "abc", "x": 1}`, 400, "", "additional properties 'x' not allowed"},
		{"poll of an unknown poll_id", "POST", "/poll", "application/json", `{"poll_id": "never-fed"}`, 404, failure("Could not find matching poll_id"), ""},
		{"an unknown endpoint", "GET", "/nothing/here", "", ``, 404, failure("The desired endpoint does not exist"), ""},
		{"an unknown endpoint by POST", "POST", "/feeds", "application/json", `{}`, 404, failure("The desired endpoint does not exist"), ""},
		{"feed with a trailing slash", "POST", "/feed/", "application/json", `{}`, 404, failure("The desired endpoint does not exist"), ""},
		{"feed by GET", "GET", "/feed", "", ``, 405, failure("The method is not allowed for the requested URL."), ""},
		{"poll by PUT", "PUT", "/poll", "application/json", `{"poll_id": "abc"}`, 405, failure("The method is not allowed for the requested URL."), ""},
		{"the index by DELETE", "DELETE", "/", "", ``, 405, failure("The method is not allowed for the requested URL."), ""},
		{"feed after an empty path segment", "POST", "//feed", "application/json", `{}`, 404, failure("The desired endpoint does not exist"), ""},
		{"feed after a dot segment", "POST", "/./feed", "application/json", `{}`, 404, failure("The desired endpoint does not exist"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := in.do(t, tc.method, tc.path, tc.contentType, tc.body)
			if a.Code != tc.code {
				t.Fatalf("status %d, want %d; body %s", a.Code, tc.code, a.Raw)
			}
			if tc.want != "" {
				if got := harness.JSONText(t, a.Body); got != tc.want {
					t.Fatalf("answer\n%s\nwant\n%s", got, tc.want)
				}
				return
			}
			errObj, _ := a.Body["error"].(map[string]any)
			if a.Body["status"] != "FAILURE" || a.Body["data"] != nil || errObj["message"] != "JSON did not validate against schema." {
				t.Fatalf("answer %s, want a schema failure", a.Raw)
			}
			if cause, _ := errObj["cause"].(string); !strings.Contains(cause, tc.cause) {
				t.Fatalf("cause %q does not mention %q", cause, tc.cause)
			}
		})
	}
	if n := c.count(t, "demo.incoming"); n != 0 {
		t.Fatalf("%d rejected requests reached Kafka", n)
	}
}

func TestMethodNotAllowedNamesTheAllowedMethods(t *testing.T) {
	_, in := startOne(t)
	in.wantNotAllowed(t, map[string]string{
		"GET /poll": "POST", "PUT /feed": "POST", "DELETE /": "GET, HEAD, POST",
		"POST /crawls": "GET, HEAD", "PATCH /crawls/c1": "GET, HEAD",
		// The console's pages, assets and event stream.
		"PUT /ui/submit": "GET, HEAD, POST", "POST /ui/live": "GET, HEAD", "DELETE /ui/": "GET, HEAD",
		"POST /ui/static/console.css": "GET, HEAD", "POST /ui/live/events": "GET, HEAD",
	})
}

func TestJSONContentTypesAreAcceptedAsFlaskDoes(t *testing.T) {
	_, in := startOne(t)
	for _, ct := range []string{"application/json", "application/json; charset=utf-8", "Application/JSON", "application/vnd.scrapy+json"} {
		a := in.do(t, "POST", "/feed", ct, `{"url": "http://example.com", "appid": "testapp", "crawlid": "ct"}`)
		if a.Code != 200 || harness.JSONText(t, a.Body) != `{"data":null,"error":null,"status":"SUCCESS"}` {
			t.Errorf("Content-Type %q: %d %s", ct, a.Code, a.Raw)
		}
	}
}

func TestAnswersAreIndentedAsFlasksJsonify(t *testing.T) {
	_, in := startOne(t)
	a := in.post(t, "/feed", `{"url": "http://example.com", "appid": "testapp", "crawlid": "abc123"}`)
	if want := "{\n  \"data\": null,\n  \"error\": null,\n  \"status\": \"SUCCESS\"\n}\n"; a.Raw != want {
		t.Fatalf("answer %q, want %q", a.Raw, want)
	}
	a = in.do(t, "GET", "/nowhere", "", "")
	if want := "{\n  \"data\": null,\n  \"error\": {\n    \"message\": \"The desired endpoint does not exist\"\n  },\n  \"status\": \"FAILURE\"\n}\n"; a.Raw != want {
		t.Fatalf("answer %q, want %q", a.Raw, want)
	}
}

func TestFeedAnswers500WhenKafkaIsUnreachable(t *testing.T) {
	r := harness.StartRedis(t)
	port := harness.Port(t)
	in := startInstance(t, settingsFor(t, r.Port, "127.0.0.1:"+strconv.Itoa(port)))
	harness.WaitFor(t, "Redis is connected", 5*time.Second, in.svc.RedisConnected)

	a := in.post(t, "/feed", `{"url": "http://example.com", "appid": "testapp", "crawlid": "abc123"}`)
	if a.Code != 500 || harness.JSONText(t, a.Body) != failure("Unable to connect to Kafka") {
		t.Fatalf("%d %s", a.Code, a.Raw)
	}
	a = in.post(t, "/feed", `{"uuid": "x1", "appid": "testapp", "stats": "all"}`)
	if a.Code != 500 || harness.JSONText(t, a.Body) != failure("Unable to connect to Kafka") {
		t.Fatalf("%d %s", a.Code, a.Raw)
	}
	// Invalid requests are still told why, without Kafka.
	if a = in.post(t, "/feed", `{"appid": "testapp"}`); a.Code != 400 {
		t.Fatalf("%d %s", a.Code, a.Raw)
	}
	a = in.do(t, "GET", "/", "", "")
	if a.Body["kafka_connected"] != false || a.Body["redis_connected"] != true || a.Body["node_health"] != "YELLOW" {
		t.Fatalf("index %s", a.Raw)
	}
}

func TestPollAnswers500WhenRedisIsUnreachable(t *testing.T) {
	c, in := startOne(t)
	c.redis.Stop()
	harness.WaitFor(t, "Redis is seen as gone", 5*time.Second, func() bool { return !in.svc.RedisConnected() })
	a := in.post(t, "/poll", `{"poll_id": "abc"}`)
	if a.Code != 500 || harness.JSONText(t, a.Body) != failure("Unable to connect to Redis") {
		t.Fatalf("%d %s", a.Code, a.Raw)
	}
	// Crawl requests do not need Redis.
	if a = in.post(t, "/feed", `{"url": "http://example.com", "appid": "testapp", "crawlid": "abc123"}`); a.Code != 200 {
		t.Fatalf("%d %s", a.Code, a.Raw)
	}
}
