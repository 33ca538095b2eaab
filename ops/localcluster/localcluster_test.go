package localcluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/ops/localcluster"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/kafkaclient"
)

// The component binaries the launcher runs, by main package.
var components = []string{
	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/cmd/kafka-monitor",
	"github.com/scrapycluster/scrapy-cluster-go/redis-monitor/cmd/redis-monitor",
	"github.com/scrapycluster/scrapy-cluster-go/crawler/cmd/crawler",
	"github.com/scrapycluster/scrapy-cluster-go/crawler/cmd/testsite",
	"github.com/scrapycluster/scrapy-cluster-go/rest/cmd/rest",
}

// fakeRESTEnv makes the test binary a stand-in for the REST service (see
// TestMain): it serves a GREEN index on the address in the variable.
const fakeRESTEnv = "LOCALCLUSTER_TEST_FAKE_REST"

func TestMain(m *testing.M) {
	if addr := os.Getenv(fakeRESTEnv); addr != "" {
		os.Exit(serveFakeREST(addr))
	}
	os.Exit(m.Run())
}

// serveFakeREST answers every request on addr as a GREEN REST index with
// my_id fake-rest, until SIGTERM or SIGINT.
func serveFakeREST(addr string) int {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, os.Interrupt)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake rest:", err)
		return 1
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"kafka_connected": true, "my_id": "fake-rest", "node_health": "GREEN", "redis_connected": true, "uptime_sec": 1}`)
	})}
	go func() { _ = srv.Serve(ln) }()
	fmt.Println("fake rest serving on", ln.Addr())
	<-stop
	_ = srv.Close()
	return 0
}

// buildComponents builds the component binaries into a temporary directory
// with the go on PATH (a normal build, even when the tests run with -race),
// through the go.work workspace, as on a fresh clone.
func buildComponents(t *testing.T) string {
	t.Helper()
	return harness.BuildBinaries(t, components...)
}

// freePorts returns n distinct free loopback ports.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	for len(ports) < n {
		p := harness.Port(t)
		if !slices.Contains(ports, p) {
			ports = append(ports, p)
		}
	}
	return ports
}

// cleanEnv is the test's environment without the settings that would point
// the launcher at real services: these tests check the embedded mode.
func cleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "KAFKA_HOSTS", "REDIS_HOST", "REDIS_PORT", "REDIS_CLUSTER_NODES", "ZOOKEEPER_HOSTS", "KAFKA_TOPIC_PREFIX", "NO_COLOR",
			localcluster.EnvGoMaxProcs:
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// healthcheckLine reads a health check the banner prints: the setting
// naming the address, and the binary.
var healthcheckLine = regexp.MustCompile(`((?:ADMIN_ADDR|FLASK_PORT)=\S+) (\S+) healthcheck`)

var startedLine = regexp.MustCompile(`(?m)^local-cluster\s+\| started (\S+) \(pid (\d+)\)`)

// startedChildren reads the processes the launcher said it started.
func startedChildren(out string) map[string]int {
	children := map[string]int{}
	for _, m := range startedLine.FindAllStringSubmatch(out, -1) {
		pid, _ := strconv.Atoi(m[2])
		children[m[1]] = pid
	}
	return children
}

// alive reports whether a process with pid exists.
func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// runUntil runs the cluster of cfg (fakeBin's scripts, writing to out)
// until cond holds and both monitors are up (their SIGTERM traps set),
// within 30 s, then stops it and fails the test unless it stopped cleanly.
func runUntil(t *testing.T, cfg localcluster.Config, out *harness.OutputBuffer, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- localcluster.Run(ctx, cfg) }()
	waitFor(t, 30*time.Second, what, func() bool {
		return cond() && out.Contains("/kafka-monitor run up\n") && out.Contains("/redis-monitor  up\n")
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// waitFor polls cond until it holds or timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	harness.WaitFor(t, what, timeout, cond)
}

// TestLocalClusterCrawlsAnswersAndStopsOnSIGTERM runs `local-cluster
// --test-site` on free ports with the embedded broker and Redis, feeds a
// crawl of the test site through the REST service, reads its page from the
// crawled firehose, asks for stats through the REST service, then sends the
// process SIGTERM and checks that every child has exited and the launcher
// returned cleanly.
func TestLocalClusterCrawlsAnswersAndStopsOnSIGTERM(t *testing.T) {
	bin := buildComponents(t)
	ports := freePorts(t, 4)
	kafkaPort, redisPort, restPort, sitePort := ports[0], ports[1], ports[2], ports[3]
	out := &harness.OutputBuffer{}
	cmd := localcluster.NewCommand(cleanEnv(), out)
	cmd.SetArgs([]string{
		"--bin", bin, "--data-dir", t.TempDir(), "--color", "never", "--test-site",
		"--kafka-port", strconv.Itoa(kafkaPort), "--redis-port", strconv.Itoa(redisPort),
		"--rest-port", strconv.Itoa(restPort), "--test-site-port", strconv.Itoa(sitePort),
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	returned := false
	t.Cleanup(func() {
		cancel() // a failed test still stops the cluster
		if !returned {
			select {
			case <-done:
			case <-time.After(60 * time.Second):
				t.Error("the launcher did not stop")
			}
		}
		if t.Failed() {
			t.Logf("launcher output:\n%s", out.String())
		}
	})

	waitFor(t, 45*time.Second, "the launcher prints the next steps", func() bool {
		select {
		case err := <-done:
			returned = true
			t.Fatalf("the launcher returned early: %v", err)
		default:
		}
		return out.Contains("The cluster is up.")
	})
	for _, want := range []string{
		fmt.Sprintf(`feed '{"url": "http://127.0.0.1:%d/", "appid":"testapp", "crawlid":"abc123", "maxdepth":1}'`, sitePort),
		fmt.Sprintf("127.0.0.1:%d/feed", restPort),
		"dump -t demo.crawled_firehose -p",
		fmt.Sprintf("export KAFKA_HOSTS=127.0.0.1:%d REDIS_HOST=127.0.0.1 REDIS_PORT=%d ZOOKEEPER_HOSTS=", kafkaPort, redisPort),
	} {
		if !out.Contains(want) {
			t.Errorf("next steps lack %q", want)
		}
	}

	// The banner names each component's admin endpoint, and its health
	// check command works as printed.
	checks := healthcheckLine.FindAllStringSubmatch(out.String(), -1)
	if len(checks) < 4 {
		t.Errorf("the banner names %d health checks, want one per component: %q", len(checks), checks)
	}
	for _, m := range checks {
		if !strings.Contains(m[2], "crawler") && !strings.Contains(m[2], "rest") {
			continue
		}
		hc := exec.Command(m[2], "healthcheck")
		hc.Env = append(cleanEnv(), m[1])
		if got, err := hc.CombinedOutput(); err != nil {
			t.Errorf("%s %s healthcheck: %v\n%s", m[1], m[2], err, got)
		}
	}

	rest := fmt.Sprintf("http://127.0.0.1:%d", restPort)
	site := fmt.Sprintf("http://127.0.0.1:%d/", sitePort)
	if got := feed(t, rest, map[string]any{"url": site, "appid": "lc-test", "crawlid": "lc-crawl-1", "maxdepth": 0}); got["status"] != "SUCCESS" {
		t.Fatalf("feed a crawl: %v", got)
	}
	page := readCrawled(t, fmt.Sprintf("127.0.0.1:%d", kafkaPort), "lc-crawl-1", 30*time.Second)
	if page["url"] != site || page["status_code"] != float64(200) || page["appid"] != "lc-test" {
		t.Errorf("crawl result %v", page)
	}

	stats := answer(t, rest, map[string]any{"stats": "kafka-monitor", "appid": "lc-test", "uuid": "lc-stats-1"})
	if stats["uuid"] != "lc-stats-1" || stats["stats"] != "kafka-monitor" {
		t.Errorf("stats answer %v", stats)
	}
	if total, _ := stats["total"].(map[string]any); total["lifetime"] == nil {
		t.Errorf("kafka-monitor stats without a lifetime total: %v", stats)
	}

	children := startedChildren(out.String())
	var names []string
	for name := range children {
		names = append(names, name)
	}
	slices.Sort(names)
	if want := []string{"crawler-link-1", "kafka-monitor", "redis-monitor", "rest", "testsite"}; !slices.Equal(names, want) {
		t.Fatalf("started %v, want %v", names, want)
	}
	for name := range children {
		if !strings.Contains(out.String(), "\n"+fmt.Sprintf("%-14s | ", name)) {
			t.Errorf("no line of %s behind its padded name", name)
		}
	}

	// As an operator's Ctrl-C or kill: the launcher handles the signal.
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		returned = true
		if err != nil {
			t.Fatalf("the launcher returned %v after SIGTERM, want a clean stop", err)
		}
	case <-time.After(40 * time.Second):
		t.Fatal("the launcher did not stop within 40 s of SIGTERM")
	}
	for name, pid := range children {
		if alive(pid) {
			t.Errorf("%s (pid %d) still runs after the launcher stopped", name, pid)
		}
	}
	for _, want := range []string{"every process stopped", "embedded Redis stopped", "embedded Kafka broker stopped"} {
		if !out.Contains(want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

// feed POSTs req to the REST service's /feed and returns its answer.
func feed(t *testing.T, rest string, req map[string]any) map[string]any {
	t.Helper()
	return post(t, rest+"/feed", req)
}

func post(t *testing.T, url string, req map[string]any) map[string]any {
	t.Helper()
	body, _ := json.Marshal(req)
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	var got map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	return got
}

// answer feeds a request with a uuid and returns the Redis Monitor's answer,
// polling for it when /feed gave up waiting.
func answer(t *testing.T, rest string, req map[string]any) map[string]any {
	t.Helper()
	got := feed(t, rest, req)
	data, _ := got["data"].(map[string]any)
	if got["status"] != "SUCCESS" || data == nil {
		t.Fatalf("feed %v: %v", req, got)
	}
	pollID, polling := data["poll_id"].(string)
	for deadline := time.Now().Add(20 * time.Second); polling; {
		got = post(t, rest+"/poll", map[string]any{"poll_id": pollID})
		if d, ok := got["data"].(map[string]any); ok && got["status"] == "SUCCESS" {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("no answer to %v: %v", req, got)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return data
}

// readCrawled reads the crawled firehose from its start until a result of
// crawlid comes, and returns it.
func readCrawled(t *testing.T, broker, crawlid string, timeout time.Duration) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	kc := kafkaclient.Config{Brokers: []string{broker}, TopicPrefix: "demo", ConnTimeout: 5 * time.Second,
		FetchMaxBytes: 10 << 20, FetchMaxWait: 100 * time.Millisecond, StartAtEarliest: true}
	topic := kc.Topic("crawled_firehose")
	// The crawler creates the topic when it publishes its first page.
	partitions := harness.TopicPartitions(ctx, t, kc, topic, timeout)
	found := make(chan map[string]any, 1)
	harness.ReadTopic(ctx, t, kc, topic, partitions, func(v []byte) {
		var page map[string]any
		if json.Unmarshal(v, &page) == nil && page["crawlid"] == crawlid {
			select {
			case found <- page:
			default:
			}
		}
	})
	select {
	case page := <-found:
		cancel()
		return page
	case <-ctx.Done():
		t.Fatalf("no result of crawl %s on %s within %s", crawlid, topic, timeout)
		return nil
	}
}

// fakeBin writes shell scripts standing in for the component binaries: each
// runs body (default: wait for SIGTERM and exit 0).
func fakeBin(t *testing.T, bodies map[string]string) string {
	t.Helper()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	dir := t.TempDir()
	for _, name := range []string{"kafka-monitor", "redis-monitor", "crawler", "rest", "testsite"} {
		body, ok := bodies[name]
		if !ok {
			// "up" once the trap is set: a test that stops the cluster
			// before then would see sh die of the signal.
			body = `trap 'echo bye; exit 0' TERM; echo "$0 $* up"; while :; do sleep 0.05; done`
		}
		script := "#!/bin/sh\n" + body + "\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// fakeConfig is a launcher configuration on free ports, in memory, running
// the scripts in bin.
func fakeConfig(t *testing.T, bin string, out *harness.OutputBuffer) localcluster.Config {
	ports := freePorts(t, 3)
	cfg := localcluster.DefaultConfig()
	cfg.KafkaPort, cfg.RedisPort, cfg.RESTPort = ports[0], ports[1], ports[2]
	cfg.BinDir, cfg.DataDir, cfg.Env, cfg.Out = bin, "", cleanEnv(), out
	cfg.StopTimeout = 5 * time.Second
	return cfg
}

func TestAProcessExitingByItselfStopsTheClusterWithAnError(t *testing.T) {
	bin := fakeBin(t, map[string]string{"crawler": `echo "crawling"; sleep 0.3; echo "giving up" >&2; exit 3`})
	out := &harness.OutputBuffer{}
	cfg := fakeConfig(t, bin, out)
	cfg.Spiders = []string{"link", "wandering"}
	err := localcluster.Run(context.Background(), cfg)
	if err == nil || !regexp.MustCompile(`crawler-(link|wandering)-1 exited unexpectedly \(exit status 3\)`).MatchString(err.Error()) {
		t.Fatalf("Run returned %v, want a crawler's unexpected exit", err)
	}
	for name, pid := range startedChildren(out.String()) {
		if alive(pid) {
			t.Errorf("%s (pid %d) still runs", name, pid)
		}
	}
	// The first crawler to give up stops the cluster; SIGTERM ends the other
	// (sh without a trap) before it gives up.
	if !regexp.MustCompile(`crawler-(link|wandering)-1 +\| giving up`).MatchString(out.String()) {
		t.Errorf("no crawler's stderr in the output:\n%s", out)
	}
	for _, want := range []string{fmt.Sprintf("%-19s | bye", "kafka-monitor"),
		fmt.Sprintf("%-19s | bye", "rest"), "exited unexpectedly (exit status 3): stopping the cluster"} {
		if !out.Contains(want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestAProcessIgnoringSIGTERMIsKilledAfterTheStopTimeout(t *testing.T) {
	bin := fakeBin(t, map[string]string{"redis-monitor": `trap '' TERM; echo stubborn; while :; do sleep 0.05; done`})
	out := &harness.OutputBuffer{}
	cfg := fakeConfig(t, bin, out)
	cfg.StopTimeout = 500 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- localcluster.Run(ctx, cfg) }()
	waitFor(t, 10*time.Second, "every process is up", func() bool {
		return out.Contains("stubborn") && strings.Count(out.String(), " up\n") == 3
	})
	cancel()
	err := <-done
	if err == nil || !strings.Contains(err.Error(), "redis-monitor") || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("Run returned %v, want redis-monitor killed", err)
	}
	for name, pid := range startedChildren(out.String()) {
		if alive(pid) {
			t.Errorf("%s (pid %d) still runs", name, pid)
		}
	}
}

func TestMissingBinariesAreNamedBeforeAnythingStarts(t *testing.T) {
	out := &harness.OutputBuffer{}
	cfg := fakeConfig(t, t.TempDir(), out)
	cfg.TestSite = true
	err := localcluster.Run(context.Background(), cfg)
	if err == nil {
		t.Fatal("Run succeeded without binaries")
	}
	for _, name := range []string{"kafka-monitor", "redis-monitor", "crawler", "rest", "testsite", "make build"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not name %s", err, name)
		}
	}
	if out.String() != "" {
		t.Errorf("something started: %s", out)
	}
}

func TestBadFlagsAreRejected(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"a port out of range", []string{"--kafka-port", "70000"}, "--kafka-port 70000"},
		{"an unknown Redis mode", []string{"--redis", "sentinel"}, `--redis "sentinel": must be embedded, system or cluster`},
		{"cluster ports out of range", []string{"--redis", "cluster", "--redis-port", "60000"}, "--redis-port 60000: --redis cluster needs 6 ports"},
		{"no spiders for the crawlers", []string{"--spiders", ""}, "--spiders"},
		{"an unknown colour mode", []string{"--color", "sometimes"}, "--color"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := localcluster.NewCommand(cleanEnv(), &harness.OutputBuffer{})
			cmd.SetArgs(append(tc.args, "--bin", t.TempDir()))
			err := cmd.Execute()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error about %s", err, tc.want)
			}
		})
	}
}

// buildLauncher builds the local-cluster command into a temporary directory.
func buildLauncher(t *testing.T) string {
	t.Helper()
	return filepath.Join(harness.BuildBinaries(t, "./ops/cmd/local-cluster"), "local-cluster")
}

// holdPort listens on 127.0.0.1:port, as another program would, until the
// test ends.
func holdPort(t *testing.T, port int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
}

func TestATakenPortFailsTheLaunchAtOnceNamingItsFlag(t *testing.T) {
	launcher := buildLauncher(t)
	bin := fakeBin(t, nil)
	for _, tc := range []struct {
		name string
		held int // index into the ports below
		want string
	}{
		{"the Kafka port", 0, "port %d (Kafka, --kafka-port) is already in use"},
		{"the Redis port", 1, "port %d (Redis, --redis-port) is already in use"},
		{"the REST port", 2, "port %d (REST, --rest-port) is already in use"},
		{"the test site's port", 3, "port %d (test site, --test-site-port) is already in use"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ports := freePorts(t, 4)
			holdPort(t, ports[tc.held])
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, launcher, "--bin", bin, "--data-dir", "", "--color", "never", "--test-site",
				"--kafka-port", strconv.Itoa(ports[0]), "--redis-port", strconv.Itoa(ports[1]),
				"--rest-port", strconv.Itoa(ports[2]), "--test-site-port", strconv.Itoa(ports[3]))
			cmd.Env = cleanEnv()
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() == 0 {
				t.Fatalf("local-cluster ended with %v, want a non-zero exit status\nstdout:\n%s\nstderr:\n%s", err, &stdout, &stderr)
			}
			if want := "local-cluster: " + fmt.Sprintf(tc.want, ports[tc.held]) + "\n"; stderr.String() != want {
				t.Errorf("stderr %q, want %q", stderr.String(), want)
			}
			if stdout.Len() != 0 {
				t.Errorf("something started before the ports were checked:\n%s", &stdout)
			}
		})
	}
}

func TestTwoServicesOnOnePortAreRefused(t *testing.T) {
	out := &harness.OutputBuffer{}
	cfg := fakeConfig(t, fakeBin(t, nil), out)
	cfg.RESTPort = cfg.KafkaPort
	err := localcluster.Run(context.Background(), cfg)
	want := fmt.Sprintf("port %d is given to both Kafka (--kafka-port) and REST (--rest-port)", cfg.KafkaPort)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Run returned %v, want %q", err, want)
	}
	if out.String() != "" {
		t.Errorf("something started: %s", out)
	}
}

// fakeRESTBin is fakeBin whose rest runs the test binary as a REST
// stand-in on FLASK_PORT: itself (exec, the process the launcher started)
// or, with foreign, as a process of its own that the rest script starts.
func fakeRESTBin(t *testing.T, foreign bool) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	serve := fakeRESTEnv + `=127.0.0.1:$FLASK_PORT ` + strconv.Quote(self)
	body := "exec env " + serve
	if foreign {
		body = `trap 'kill $pid; exit 0' TERM; env ` + serve + ` & pid=$!; wait $pid`
	}
	return fakeBin(t, map[string]string{"rest": body})
}

func TestReadinessIsTheRESTProcessTheLauncherStarted(t *testing.T) {
	out := &harness.OutputBuffer{}
	cfg := fakeConfig(t, fakeRESTBin(t, false), out)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- localcluster.Run(ctx, cfg) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	waitFor(t, 30*time.Second, "the launcher announces the cluster", func() bool { return out.Contains("The cluster is up.") })
	pid := startedChildren(out.String())["rest"]
	if want := fmt.Sprintf("rest (pid %d, my_id fake-rest) reports Kafka and Redis connected", pid); !out.Contains(want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
}

func TestReadinessDoesNotAcceptAnotherProgramOnTheRESTPort(t *testing.T) {
	out := &harness.OutputBuffer{}
	cfg := fakeConfig(t, fakeRESTBin(t, true), out)
	cfg.ReadyTimeout = 2 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- localcluster.Run(ctx, cfg) }()
	defer func() {
		cancel()
		<-done
	}()
	// Another process serves a GREEN index on the REST port: the launcher
	// must see that it is not the rest it started.
	waitFor(t, 30*time.Second, "the launcher refuses the server on the REST port", func() bool {
		return out.Contains("not the rest the launcher started")
	})
	if !out.Contains("fake rest serving on 127.0.0.1:" + strconv.Itoa(cfg.RESTPort)) {
		t.Errorf("the stand-in did not serve on the REST port:\n%s", out)
	}
	if out.Contains("The cluster is up") || out.Contains("reports Kafka and Redis connected") {
		t.Errorf("the launcher took another program for its REST service:\n%s", out)
	}
}

func TestTheDefaultRetentionFollowsWhereTheBrokerKeepsItsData(t *testing.T) {
	bin := fakeBin(t, nil)
	for _, tc := range []struct {
		name      string
		dataDir   bool
		mib       int64
		wantWhere string
		wantMiB   int64
	}{
		{"on disk by default", true, 0, "data in ", localcluster.DiskRetentionBytes >> 20},
		{"in memory by default", false, 0, "in memory", localcluster.MemoryRetentionBytes >> 20},
		{"as given in memory", false, 32, "in memory", 32},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := &harness.OutputBuffer{}
			cfg := fakeConfig(t, bin, out)
			if tc.dataDir {
				cfg.DataDir = t.TempDir()
			}
			cfg.KafkaRetentionBytes = tc.mib << 20
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- localcluster.Run(ctx, cfg) }()
			waitFor(t, 30*time.Second, "the launcher starts the REST service", func() bool { return out.Contains("started rest ") })
			waitFor(t, 30*time.Second, "every process to be up", func() bool {
				o := out.String()
				return strings.Count(o, " up\n") >= strings.Count(o, "| started ")
			})
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("Run: %v", err)
			}
			line := regexp.MustCompile(`embedded Kafka broker \(kfake\) on \S+, (.*), keeping 24h0m0s or (\d+) MiB per partition`).FindStringSubmatch(out.String())
			if line == nil {
				t.Fatalf("no broker line in the output:\n%s", out)
			}
			if !strings.HasPrefix(line[1], tc.wantWhere) || line[2] != strconv.FormatInt(tc.wantMiB, 10) {
				t.Errorf("broker %s keeping %s MiB per partition, want %s... keeping %d MiB", line[1], line[2], tc.wantWhere, tc.wantMiB)
			}
		})
	}
}

func TestCrawlersAndTryMayFetchLoopbackOnlyWithTheTestSite(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := fakeBin(t, map[string]string{
		"crawler":  `trap 'exit 0' TERM; echo "allowed=[$FETCH_ALLOWED_NETWORKS]"; while :; do sleep 0.05; done`,
		"rest":     `trap 'exit 0' TERM; echo "rest allowed=[$FETCH_ALLOWED_NETWORKS]"; while :; do sleep 0.05; done`,
		"testsite": "exec env " + fakeRESTEnv + `="$2" ` + strconv.Quote(self), // --addr 127.0.0.1:<port>
	})
	for _, tc := range []struct {
		name     string
		testSite bool
		env      string
		want     string
	}{
		{"with the test site", true, "", "allowed=[" + localcluster.LoopbackNetworks + "]"},
		{"with the test site, added to the operator's networks", true, "10.1.0.0/16, 127.0.0.0/8", "allowed=[10.1.0.0/16,127.0.0.0/8,::1/128]"},
		{"without the test site", false, "10.1.0.0/16", "allowed=[10.1.0.0/16]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := &harness.OutputBuffer{}
			cfg := fakeConfig(t, bin, out)
			cfg.TestSite = tc.testSite
			cfg.TestSitePort = freePorts(t, 1)[0]
			if tc.env != "" {
				cfg.Env = append(cfg.Env, "FETCH_ALLOWED_NETWORKS="+tc.env)
			}
			runUntil(t, cfg, out, "the crawler and rest print their FETCH_ALLOWED_NETWORKS", func() bool {
				return out.Contains("crawler-link-1 | allowed=") && out.Contains("rest allowed=")
			})
			if !out.Contains("crawler-link-1 | " + tc.want + "\n") {
				t.Errorf("the crawler's line is not %q:\n%s", tc.want, out)
			}
			// The REST service's /try fetches as the crawlers do.
			if want := "rest " + tc.want + "\n"; !out.Contains(want) {
				t.Errorf("the REST service's line is not %q:\n%s", want, out)
			}
		})
	}
}

// With a Redis of the launcher's own, the components count the crawlers'
// responses in hashes of time buckets (STATS_RESPONSE_BUCKETS true), unless
// the environment says otherwise; with the operator's Redis the setting is
// left as the environment has it (the original's sorted sets by default:
// a Python Redis Monitor may read that Redis).
func TestResponseBucketsAreTheDefaultOnlyWithTheLaunchersOwnRedis(t *testing.T) {
	bin := fakeBin(t, map[string]string{
		"crawler": `trap 'exit 0' TERM; echo "buckets=[$STATS_RESPONSE_BUCKETS]"; while :; do sleep 0.05; done`,
	})
	for _, tc := range []struct {
		name string
		env  []string
		want string
	}{
		{"the embedded Redis", nil, "buckets=[true]"},
		{"the embedded Redis, the environment saying false", []string{"STATS_RESPONSE_BUCKETS=false"}, "buckets=[false]"},
		{"the operator's Redis", []string{"REDIS_HOST=127.0.0.1", "REDIS_PORT=1"}, "buckets=[]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := &harness.OutputBuffer{}
			cfg := fakeConfig(t, bin, out)
			cfg.Env = append(cfg.Env, tc.env...)
			// rest up too: stopped before its trap is set, it would die of
			// the signal.
			runUntil(t, cfg, out, "the crawler prints its STATS_RESPONSE_BUCKETS", func() bool {
				return out.Contains("crawler-link-1 | buckets=") && out.Contains("/rest  up\n")
			})
			if !out.Contains("crawler-link-1 | " + tc.want + "\n") {
				t.Errorf("the crawler's line is not %q:\n%s", tc.want, out)
			}
		})
	}
}

// Each process the launcher starts gets an equal share of the cores as its
// GOMAXPROCS, and so does the launcher itself (it hosts the embedded broker
// and Redis) until Run returns; GOMAXPROCS in the environment, or Cores 0,
// leaves every process as Go or the environment has it.
func TestEachProcessGetsItsShareOfTheCores(t *testing.T) {
	bin := fakeBin(t, map[string]string{
		"crawler": `trap 'exit 0' TERM; echo "procs=[$GOMAXPROCS]"; while :; do sleep 0.05; done`,
	})
	before := runtime.GOMAXPROCS(0)
	for _, tc := range []struct {
		name      string
		cores     int
		env       []string
		want      string // the crawler's line
		wantOwn   int    // the launcher's GOMAXPROCS while it runs
		wantShare string // the launcher's line ("": none)
	}{
		// kafka-monitor, redis-monitor, crawler-link-1, rest and the launcher.
		{"12 cores", 12, nil, "procs=[2]", 2, "12 cores shared by 5 processes: GOMAXPROCS=2 each"},
		{"2 cores", 2, nil, "procs=[1]", 1, "2 cores shared by 5 processes: GOMAXPROCS=1 each"},
		{"GOMAXPROCS in the environment", 12, []string{"GOMAXPROCS=3"}, "procs=[3]", before, ""},
		{"no cores given", 0, nil, "procs=[]", before, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := &harness.OutputBuffer{}
			cfg := fakeConfig(t, bin, out)
			cfg.Cores = tc.cores
			cfg.Env = append(cfg.Env, tc.env...)
			own := 0
			runUntil(t, cfg, out, "the crawler prints its GOMAXPROCS", func() bool {
				own = runtime.GOMAXPROCS(0)
				return out.Contains("crawler-link-1 | procs=") && out.Contains("/rest  up\n")
			})
			if !out.Contains("crawler-link-1 | " + tc.want + "\n") {
				t.Errorf("the crawler's line is not %q:\n%s", tc.want, out)
			}
			if own != tc.wantOwn {
				t.Errorf("the launcher ran with GOMAXPROCS %d, want %d", own, tc.wantOwn)
			}
			if got := runtime.GOMAXPROCS(0); got != before {
				t.Errorf("after Run, GOMAXPROCS %d, want %d as before", got, before)
			}
			if shared := out.Contains("cores shared by"); tc.wantShare == "" && shared {
				t.Errorf("the launcher says it shared the cores:\n%s", out)
			} else if tc.wantShare != "" && !out.Contains(tc.wantShare) {
				t.Errorf("no line %q:\n%s", tc.wantShare, out)
			}
		})
	}
}

func TestCoresEachIsAnEqualShareOfAtLeastOne(t *testing.T) {
	for _, tc := range []struct{ cores, processes, want int }{
		{2, 6, 1}, {16, 5, 3}, {16, 4, 4}, {1, 1, 1}, {8, 0, 8}, {0, 3, 1},
	} {
		if got := localcluster.CoresEach(tc.cores, tc.processes); got != tc.want {
			t.Errorf("CoresEach(%d, %d) = %d, want %d", tc.cores, tc.processes, got, tc.want)
		}
	}
}

func TestCoresShareIsNothingWithGOMAXPROCSSetOrNoCores(t *testing.T) {
	for _, tc := range []struct {
		env       []string
		cores     int
		wantEach  int
		wantShare bool
	}{
		{nil, 2, 1, true},
		{[]string{"A=1"}, 16, 4, true},
		{[]string{"GOMAXPROCS=3"}, 16, 0, false},
		{[]string{"GOMAXPROCS="}, 16, 0, false}, // set empty: Go's default, passed on
		{nil, 0, 0, false},
	} {
		each, ok := localcluster.CoresShare(tc.env, tc.cores, 4)
		if each != tc.wantEach || ok != tc.wantShare {
			t.Errorf("CoresShare(%q, %d, 4) = %d, %v; want %d, %v", tc.env, tc.cores, each, ok, tc.wantEach, tc.wantShare)
		}
	}
}
