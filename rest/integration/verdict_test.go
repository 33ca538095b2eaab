package integration_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	kmonitor "github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/monitor"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/kafkaclient"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
)

// verdictCase is one request and a part of the reason every path must give
// for refusing it ("" for a request every path accepts).
type verdictCase struct {
	name, raw, reason string
}

func crawlWith(fields string) string {
	return `{"url": "http://example.com/", "appid": "testapp", "crawlid": "c1"` + fields + `}`
}

func crawlOf(url string) string {
	return `{"url": "` + url + `", "appid": "testapp", "crawlid": "c1"}`
}

var badRequests = []verdictCase{
	{"a file: URL", crawlOf("file:///etc/passwd"), `url: scheme "file" not allowed; want http or https`},
	{"a javascript: URL", crawlOf("javascript:alert(1)"), `url: scheme "javascript" not allowed`},
	{"an ftp: URL", crawlOf("ftp://example.com/file"), `url: scheme "ftp" not allowed`},
	{"a gopher: URL", crawlOf("gopher://example.com/1"), `url: scheme "gopher" not allowed`},
	{"a data: URL", crawlOf("data:text/html,<b>hi</b>"), `url: scheme "data" not allowed`},
	{"a relative URL", crawlOf("/about/us"), `url: "/about/us" is relative or has no scheme`},
	{"a URL without a scheme", crawlOf("www.example.com/page"), `url: "www.example.com/page" is relative or has no scheme`},
	{"an http URL without a host", crawlOf("http:///page"), `url: "http:///page" has no host`},
	{"a URL of bytes that are not UTF-8", "{\"url\": \"http://example.com/\xff\xfe\", \"appid\": \"testapp\", \"crawlid\": \"c1\"}", "not UTF-8: byte 0xff at offset 28"},
	{"an appid of bytes that are not UTF-8", "{\"url\": \"http://example.com/\", \"appid\": \"test\xc3\", \"crawlid\": \"c1\"}", "not UTF-8: byte 0xc3 at offset 45"},
	{"an allow_regex that does not compile", crawlWith(`, "allow_regex": ["(unclosed"]`), `allow_regex[0] "(unclosed": error parsing regexp: missing closing )`},
	{"a deny_regex with a look-ahead", crawlWith(`, "deny_regex": ["a(?=b)"]`), `deny_regex[0] "a(?=b)": error parsing regexp: invalid or unsupported Perl syntax`},
	{"an allow_regex Python reads otherwise", crawlWith(`, "allow_regex": ["/page{,3}"]`), `{,3} is literal text in RE2 but a repetition in Python's re`},
	{"an allowed domain written as a URL", crawlWith(`, "allowed_domains": ["https://example.com"]`), `allowed_domains[0]: "https://example.com": a URL, not a host name`},
	{"a user agent with a line break", crawlWith(`, "useragent": "bot\r\nX-Evil: 1"`), `useragent: control character at offset 3`},
	{"a number beyond float64", crawlWith(`, "attrs": {"n": 1e400}`), `at '/attrs/n': number out of range`},
	{"a domain-update of a subdomain", `{"uuid": "u1", "appid": "testapp", "action": "domain-update", "domain": "www.ebay.com", "hits": 10, "window": 60}`,
		`domain: "www.ebay.com" is not a domain as queues name it`},
	{"a blacklist-update of a URL", `{"uuid": "u1", "appid": "testapp", "action": "blacklist-update", "domain": "http://ebay.com/"}`, `use "ebay.com"`},
	{"a domain-update without hits", `{"uuid": "u1", "appid": "testapp", "action": "domain-update", "domain": "ebay.com", "window": 60}`,
		"hits: missing or 0; a domain-update needs non-zero hits and window"},
	{"an empty message", ``, "empty request"},
	{"a message of whitespace", " \r\n\t", "empty request"},
	{"text that is not JSON", `{url: "http://example.com/"}`, "invalid JSON: invalid character 'u' looking for beginning of object key string"},
	{"two JSON values", `{} {}`, "invalid JSON: data after the JSON value"},
	{"null", `null`, "no plugin's schema accepts it: ScraperHandler: at '': got null, want object"},
	{"an array", `[{"url": "http://example.com/"}]`, "no plugin's schema accepts it: ScraperHandler: at '': got array, want object"},
	{"an appid too long", `{"url": "http://example.com/", "appid": "` + strings.Repeat("a", 41) + `", "crawlid": "c1"}`,
		"no plugin's schema accepts it: ScraperHandler: at '/appid': maxLength: got 41, want 40"},
	{"a crawlid too long", `{"url": "http://example.com/", "appid": "testapp", "crawlid": "` + strings.Repeat("c", 41) + `"}`, "at '/crawlid': maxLength: got 41, want 40"},
	{"a priority of the wrong type", crawlWith(`, "priority": "high"`), "at '/priority': got string, want integer"},
	{"a maxdepth written as a float", crawlWith(`, "maxdepth": 1.0`), "at '/maxdepth': got number, want integer"},
	{"an unknown field", crawlWith(`, "crazykey": 1`), "no plugin's schema accepts it: ScraperHandler: at '': additional properties 'crazykey' not allowed"},
	{"an unknown action", `{"uuid": "u1", "appid": "testapp", "spiderid": "link", "action": "explode"}`, "at '/action': value must be one of 'stop', 'info'"},
}

var goodRequests = []verdictCase{
	{"a crawl", crawlOf("http://example.com/"), ""},
	{"a crawl with every field", crawlWith(`, "spiderid": "link", "maxdepth": 2, "priority": 50, "allowed_domains": ["example.com", "127.0.0.1:8000"],
		"allow_regex": [".*/blog/.*"], "deny_regex": [".*\\.pdf$"], "deny_extensions": ["zip"], "domain_max_pages": 100, "expires": 1893456000,
		"useragent": "my-bot/1.0", "cookie": "a=b", "attrs": {"anything": ["you", 1.5, null]}`), ""},
	{"an https crawl of an IP address", crawlOf("https://127.0.0.1:8443/x?y=1#z"), ""},
	{"an info action", `{"uuid": "u1", "appid": "testapp", "spiderid": "link", "action": "info"}`, ""},
	{"a stats request", `{"uuid": "u2", "appid": "testapp", "stats": "kafka-monitor"}`, ""},
	{"a domain-update", `{"uuid": "u3", "appid": "testapp", "action": "domain-update", "domain": "ebay.com", "hits": 10, "window": 60, "scale": 0.5}`, ""},
	{"a blacklist-remove of an entry written by hand", `{"uuid": "u4", "appid": "testapp", "action": "blacklist-remove", "domain": "www.ebay.com"}`, ""},
}

// TestOneVerdictOnEveryPath sends every request through the three paths a
// request can take: REST /feed, `kafka-monitor feed` (the built binary)
// and `kafka-monitor run` (a message on the incoming topic). A bad request
// gets the same reason from each: the 400's error.cause, the feed's stderr
// (exit status 2), and the text of the monitor's log line, counted as a
// failure; a good one is accepted by each.
func TestOneVerdictOnEveryPath(t *testing.T) {
	e := &env{redis: harness.StartRedis(t), kafka: harness.StartKafka(t, harness.KafkaOptions{NoAutoCreate: true}), logs: &harness.OutputBuffer{}}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs:\n%s", e.logs.String())
		}
	})
	bin := filepath.Join(t.TempDir(), "kafka-monitor")
	build := exec.Command("go", "build", "-o", bin, "./kafka-monitor/cmd/kafka-monitor")
	build.Dir = "../.." // the workspace root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}

	// REST and feed send to a topic of their own, so that the monitor sees
	// only what the test puts on demo.incoming.
	_, restURL := e.rest(t, "KAFKA_PRODUCER_TOPIC=verdict.sent", "WAIT_FOR_RESPONSE_TIME=0.1")
	monitorLogs := &harness.OutputBuffer{}
	km := startMonitor(t, e, monitorLogs)
	kcfg := kafkaclient.Config{Brokers: e.kafka.Addrs, ConnTimeout: 5 * time.Second, MaxRequestBytes: 1 << 20}
	w := kcfg.NewWriter("demo.incoming")
	w.BatchSize = 1
	t.Cleanup(func() { w.Close() })

	viaREST := func(t *testing.T, raw string) (int, string) {
		res, err := http.Post(restURL+"/feed", "application/json", strings.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var answer struct {
			Status string
			Error  *struct{ Message, Cause string }
		}
		if err := json.NewDecoder(res.Body).Decode(&answer); err != nil {
			t.Fatalf("REST answer: %v", err)
		}
		if answer.Error == nil {
			return res.StatusCode, ""
		}
		return res.StatusCode, answer.Error.Cause
	}
	viaFeed := func(t *testing.T, raw string) (int, string) {
		cmd := exec.Command(bin, "feed", "-", "--log-level", "CRITICAL", "--set", "KAFKA_HOSTS="+e.kafka.Hosts(),
			"--set", "KAFKA_INCOMING_TOPIC=verdict.sent", "--set", "KAFKA_INCOMING_PARTITIONS=2")
		cmd.Stdin = strings.NewReader(raw)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		switch {
		case err == nil:
			return 0, stderr.String()
		case errors.As(err, &exit):
			return exit.ExitCode(), stderr.String()
		}
		t.Fatalf("feed: %v", err)
		return 0, ""
	}
	viaRun := func(t *testing.T, raw string) (rejections []string) {
		before, logged := km.Processed(), len(monitorLogs.String())
		if err := w.WriteMessages(context.Background(), kafka.Message{Value: []byte(raw)}); err != nil {
			t.Fatal(err)
		}
		harness.WaitFor(t, "the monitor handles the request", 30*time.Second, func() bool { return km.Processed() == before+1 })
		for line := range strings.SplitSeq(monitorLogs.String()[logged:], "\n") {
			var entry struct{ Message string }
			if json.Unmarshal([]byte(line), &entry) == nil && strings.HasPrefix(entry.Message, "Request rejected: ") {
				rejections = append(rejections, strings.TrimPrefix(entry.Message, "Request rejected: "))
			}
		}
		return rejections
	}

	for _, tc := range badRequests {
		t.Run("refused: "+tc.name, func(t *testing.T) {
			code, reason := viaREST(t, tc.raw)
			if code != http.StatusBadRequest || !strings.Contains(reason, tc.reason) {
				t.Fatalf("REST: %d with cause %q, want 400 saying %q", code, reason, tc.reason)
			}
			if status, stderr := viaFeed(t, tc.raw); status != 2 || stderr != "kafka-monitor: invalid request: "+reason+"\n" {
				t.Errorf("feed: exit status %d, stderr %q; want 2 and the reason %q", status, stderr, reason)
			}
			if got := viaRun(t, tc.raw); len(got) != 1 || got[0] != reason {
				t.Errorf("run: logged rejections %q, want one saying %q", got, reason)
			}
		})
	}
	for _, tc := range goodRequests {
		t.Run("accepted: "+tc.name, func(t *testing.T) {
			if code, reason := viaREST(t, tc.raw); code != http.StatusOK {
				t.Errorf("REST: %d with cause %q, want 200", code, reason)
			}
			if status, stderr := viaFeed(t, tc.raw); status != 0 {
				t.Errorf("feed: exit status %d, stderr %q; want 0", status, stderr)
			}
			if got := viaRun(t, tc.raw); len(got) != 0 {
				t.Errorf("run: rejected it: %q", got)
			}
		})
	}

	// Every refusal of run is a counted failure; every request is counted.
	ctx, rdb := context.Background(), e.client(t)
	fails, total := int64(len(badRequests)), int64(len(badRequests)+len(goodRequests))
	harness.WaitFor(t, "the stats count every request", 30*time.Second, func() bool {
		return rdb.ZCard(ctx, "stats:kafka-monitor:fail:900").Val() == fails && rdb.ZCard(ctx, "stats:kafka-monitor:total:900").Val() == total
	})
}

// startMonitor runs a Kafka Monitor on demo.incoming, logging JSON lines to
// logs, until the test ends.
func startMonitor(t *testing.T, e *env, logs *harness.OutputBuffer) *kmonitor.Monitor {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	log := harness.Logger(t, logfactory.Config{Name: "kafka-monitor", Level: "INFO", JSON: true}, logs)
	km, err := kmonitor.New(ctx, e.load(t, kmonitor.Settings(), "STATS_DUMP=0"), log, e.client(t))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- km.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("monitor: %v", err)
		}
		km.Close()
	})
	return km
}
