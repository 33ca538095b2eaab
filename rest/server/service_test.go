package server_test

import (
	"context"
	"io"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/rest/server"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
)

func TestShutdownLetsRequestsInFlightFinish(t *testing.T) {
	c, in := startOne(t, "WAIT_FOR_RESPONSE_TIME=10")
	gate := make(chan struct{})
	c.fakeRedisMonitor(t, gate)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- in.svc.Serve(ctx, ln) }()
	direct := *in
	direct.url = "http://" + ln.Addr().String()

	result := make(chan answer, 1)
	go func() { result <- direct.post(t, "/feed", `{"uuid": "in-flight", "appid": "stuff", "stats": "all"}`) }()
	harness.WaitFor(t, "the request waits for its answer", 5*time.Second, func() bool { return in.svc.Waiting() == 1 })

	cancel() // as SIGTERM does
	harness.WaitFor(t, "new connections are refused", 5*time.Second, func() bool {
		conn, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second)
		if err == nil {
			conn.Close()
		}
		return err != nil
	})
	select {
	case err := <-served:
		t.Fatalf("Serve returned (%v) while a request was in flight", err)
	default:
	}
	close(gate) // the answer comes
	a := <-result
	if data, _ := a.Body["data"].(map[string]any); a.Code != 200 || data["uuid"] != "in-flight" {
		t.Fatalf("in-flight request: %d %s", a.Code, a.Raw)
	}
	harness.WaitDone(t, "Serve", 10*time.Second, served) // returns once the last request finished
}

func TestAccessLogLinesAreFlasks(t *testing.T) {
	c := newCluster(t)
	for _, enabled := range []string{"true", "false"} {
		var buf harness.OutputBuffer
		in := startInstance(t, settingsFor(t, c.redis.Port, c.kafka.Hosts(), "FLASK_LOGGING_ENABLED="+enabled), server.WithAccessLog(&buf))
		in.do(t, "GET", "/?x=1", "", "")
		in.do(t, "GET", "/missing", "", "")
		if enabled == "false" {
			if buf.String() != "" {
				t.Fatalf("access log written with FLASK_LOGGING_ENABLED false: %q", buf.String())
			}
			continue
		}
		lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
		want := []*regexp.Regexp{
			regexp.MustCompile(`^127\.0\.0\.1 - - \[\d\d/[A-Z][a-z]{2}/\d{4} \d\d:\d\d:\d\d\] "GET /\?x=1 HTTP/1\.1" 200 \d+$`),
			regexp.MustCompile(`^127\.0\.0\.1 - - \[[^]]+\] "GET /missing HTTP/1\.1" 404 \d+$`),
		}
		if len(lines) != len(want) {
			t.Fatalf("access log %q", buf.String())
		}
		for i, re := range want {
			if !re.MatchString(lines[i]) {
				t.Errorf("line %q does not match %s", lines[i], re)
			}
		}
	}
}

func TestUnusableSettingsAreRefusedByName(t *testing.T) {
	for _, tc := range []struct{ set, name string }{
		{"HTTP_WRITE_TIMEOUT=4", "HTTP_WRITE_TIMEOUT"}, // not more than WAIT_FOR_RESPONSE_TIME + KAFKA_FEED_TIMEOUT (2 + 2)
		{"FLASK_PORT=70000", "FLASK_PORT"},
		{"WAIT_FOR_RESPONSE_TIME=-1", "WAIT_FOR_RESPONSE_TIME"},
		{"POLL_RESULT_TIMEOUT=0", "POLL_RESULT_TIMEOUT"},
		{"MAX_REQUEST_BYTES=0", "MAX_REQUEST_BYTES"},
		{"SLEEP_TIME=0", "SLEEP_TIME"},
		{"HTTP_READ_TIMEOUT=-0.5", "HTTP_READ_TIMEOUT"},
		{"DAEMON_THREAD_JOIN_TIMEOUT=-1", "DAEMON_THREAD_JOIN_TIMEOUT"},
		{"KAFKA_INCOMING_PARTITIONS=0", "KAFKA_INCOMING_PARTITIONS"},
		{"UI_RESULTS_BUFFER=100001", "UI_RESULTS_BUFFER"},
		{"KAFKA_PRODUCER_TOPIC=", "KAFKA_PRODUCER_TOPIC"},
		{"KAFKA_CONSUMER_AUTO_OFFSET_RESET=middle", "KAFKA_CONSUMER_AUTO_OFFSET_RESET"},
		{`PLUGINS={"plugins.nothing.Nothing": 500}`, "PLUGINS"},
		{"UI_AUTH_USER=ops", "UI_AUTH_PASSWORD"},
		{"UI_RESULTS_BUFFER=0", "UI_RESULTS_BUFFER"},
		{"UI_REFRESH=-1", "UI_REFRESH"},
		{"UI_APPID=ui", "UI_APPID"},
		{"ZOOKEEPER_ASSIGN_PATH=relative/", "ZOOKEEPER_ASSIGN_PATH"},
	} {
		err := newService(tc.set)
		if err == nil {
			t.Errorf("%s: accepted", tc.set)
			continue
		}
		if !strings.Contains(err.Error(), tc.name) {
			t.Errorf("%s: error %q does not name the setting", tc.set, err)
		}
	}
}

// newService loads the settings with set and builds a service (closed at
// once) as the rest command does; the error is the first either gives.
func newService(set string) error {
	s, err := loadSettings(1, "127.0.0.1:1", set)
	if err != nil {
		return err
	}
	log, _ := logfactory.New(logfactory.Config{Output: &harness.OutputBuffer{}})
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer rdb.Close()
	svc, err := server.New(context.Background(), s, log, rdb)
	if err == nil {
		svc.Close()
	}
	return err
}

func TestSlowClientsAreCutOffByTheReadTimeout(t *testing.T) {
	_, in := startOne(t, "HTTP_READ_TIMEOUT=0.3")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- in.svc.Serve(ctx, ln) }()
	defer func() {
		cancel()
		<-served
	}()

	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Headers, then a body that never comes.
	if _, err := conn.Write([]byte("POST /feed HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"url\":")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	reply, _ := io.ReadAll(conn) // until the server closes the connection
	if waited := time.Since(start); waited > 5*time.Second {
		t.Fatalf("connection kept for %s, HTTP_READ_TIMEOUT is 0.3 s", waited)
	}
	if !strings.Contains(string(reply), "400") || !strings.Contains(string(reply), "The payload must be valid JSON.") {
		t.Fatalf("reply %q", reply)
	}
}

// A taken port stops the service with an error naming the flag and the
// setting that choose another.
func TestATakenPortNamesTheFlagAndTheSettingToChange(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	_, port, _ := net.SplitHostPort(taken.Addr().String())
	_, in := startOne(t, "FLASK_HOST=127.0.0.1", "FLASK_PORT="+port)
	err = in.svc.ListenAndServe(context.Background())
	if err == nil || !strings.Contains(err.Error(), "--port") || !strings.Contains(err.Error(), "FLASK_PORT") || !strings.Contains(err.Error(), "127.0.0.1:"+port) {
		t.Fatalf("ListenAndServe on a taken port: %v, want an error naming --port and FLASK_PORT", err)
	}
}
