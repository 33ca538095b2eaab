package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	_ "github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugins/all"
	"github.com/scrapycluster/scrapy-cluster-go/rest/server"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if build.dir != "" {
		os.RemoveAll(build.dir)
	}
	os.Exit(code)
}

// build holds the cluster's binaries, built once per test binary.
var build struct {
	once sync.Once
	dir  string
	err  error
}

// binary returns the path of a binary of the workspace (kafka-monitor,
// redis-monitor, crawler, testsite), building them all the first time.
func binary(tb testing.TB, name string) string {
	tb.Helper()
	build.once.Do(func() {
		build.dir, build.err = os.MkdirTemp("", "console-e2e-")
		if build.err != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", build.dir+string(filepath.Separator),
			"./kafka-monitor/cmd/kafka-monitor", "./redis-monitor/cmd/redis-monitor",
			"./crawler/cmd/crawler", "./crawler/cmd/testsite")
		cmd.Dir = "../.." // the workspace root
		if out, err := cmd.CombinedOutput(); err != nil {
			build.err = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	if build.err != nil {
		tb.Fatal(build.err)
	}
	return filepath.Join(build.dir, name)
}

// cluster is a whole cluster on loopback: real redis-server, ZooKeeper and
// kfake, the Kafka Monitor, Redis Monitor and a link crawler as processes,
// two test sites, and the REST service (with the console) in this process.
type cluster struct {
	tb      testing.TB
	rdb     *redis.Client
	env     map[string]string
	procs   []*proc
	restURL string
	// site1 and site2 are the test sites' base URLs, on 127.0.0.1 and
	// 127.0.0.2: two domains to the crawler.
	site1, site2 string
}

func newCluster(tb testing.TB) *cluster {
	tb.Helper()
	c := &cluster{tb: tb}
	r := harness.StartRedis(tb)
	c.rdb = r.TestClient(tb)
	zk := harness.StartZooKeeper(tb)
	k := harness.StartKafka(tb)
	c.env = map[string]string{
		"REDIS_HOST": "127.0.0.1", "REDIS_PORT": strconv.Itoa(r.Port),
		"KAFKA_HOSTS": k.Hosts(), "KAFKA_TOPIC_PARTITIONS": "1", "KAFKA_INCOMING_PARTITIONS": "1",
		"KAFKA_PRODUCER_BATCH_LINGER_MS": "1", "KAFKA_CONSUMER_SLEEP_TIME": "0.2",
		"ZOOKEEPER_HOSTS": zk.Addr, "PUBLIC_IP_URL": "", "SCHEDULER_IP_ENABLED": "false",
		"SCHEDULER_QUEUE_REFRESH": "1", "QUEUE_HITS": "100000", "QUEUE_WINDOW": "60", "QUEUE_MODERATED": "false",
		"DOWNLOAD_TIMEOUT": "5", "SHUTDOWN_GRACE": "1", "SLEEP_TIME": "0.05", "HEARTBEAT_TIMEOUT": "30",
		"LOG_JSON": "true", "SC_LOG_JSON": "true", "LOG_STDOUT": "true", "SC_LOG_STDOUT": "true",
		"LOG_LEVEL": "DEBUG", "SC_LOG_LEVEL": "DEBUG", "WAIT_FOR_RESPONSE_TIME": "10",
		// The test sites are on loopback, which the crawler refuses by default.
		"FETCH_ALLOWED_NETWORKS": "127.0.0.0/8,::1/128",
		// Free admin ports: the defaults are fixed, and test packages run side by side.
		"ADMIN_ADDR": "127.0.0.1:0",
	}
	c.site1 = c.startSite("site1", "127.0.0.1", "--pages", "4", "--fanout", "2", "--depth", "1")
	c.site2 = c.startSite("site2", "127.0.0.2", "--fanout", "6", "--depth", "3")
	c.start("kafka-monitor", "kafka-monitor", "run")
	c.start("redis-monitor", "redis-monitor")
	c.start("crawler", "crawler", "--spider", "link")
	c.startREST()
	return c
}

// startSite runs a test site on a free port of ip and returns its base URL.
func (c *cluster) startSite(name, ip string, args ...string) string {
	c.tb.Helper()
	port, err := harness.FreePort()
	if err != nil {
		c.tb.Fatal(err)
	}
	addr := net.JoinHostPort(ip, strconv.Itoa(port))
	c.start(name, "testsite", append([]string{"--addr", addr}, args...)...)
	base := "http://" + addr + "/"
	waitFor(c.tb, name+" to serve", 20*time.Second, func() bool {
		resp, err := http.Get(base)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return base
}

// startREST runs the REST service in this process with the cluster's
// settings, and waits until it reports Kafka and Redis connected.
func (c *cluster) startREST() {
	tb := c.tb
	tb.Helper()
	s, err := settings.Load(server.Defaults(), settings.Options{NoEnv: true, Flags: c.env})
	if err != nil {
		tb.Fatal(err)
	}
	logs := &harness.OutputBuffer{}
	cfg := logfactory.ConfigFromSettings(s, s.String("LOGGER_NAME"))
	cfg.Output = logs
	log, err := logfactory.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + c.env["REDIS_PORT"]})
	svc, err := server.New(context.Background(), s, log, rdb, server.WithAccessLog(logs))
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- svc.Serve(ctx, ln) }()
	tb.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			tb.Errorf("REST service: %v", err)
		}
		svc.Close()
		rdb.Close()
		if tb.Failed() {
			tb.Logf("REST service log (last 16 KiB):\n%s", tail(logs.String(), 16<<10))
		}
	})
	c.restURL = "http://" + ln.Addr().String()
	waitFor(tb, "the REST service to report Kafka and Redis connected", 30*time.Second, func() bool {
		return svc.KafkaConnected() && svc.RedisConnected()
	})
}

// proc is one process of the cluster.
type proc struct {
	name string
	cmd  *exec.Cmd
	out  *harness.OutputBuffer
	done chan struct{}
	err  error
}

// start runs a binary with the cluster's settings in its environment; on
// cleanup it gets SIGTERM (SIGKILL after 10 s), and its output is shown if
// the test failed.
func (c *cluster) start(name, bin string, args ...string) *proc {
	tb := c.tb
	tb.Helper()
	cmd := exec.Command(binary(tb, bin), args...)
	for k, v := range c.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Dir = tb.TempDir()
	p := &proc{name: name, cmd: cmd, out: &harness.OutputBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	c.procs = append(c.procs, p)
	tb.Cleanup(func() {
		select {
		case <-p.done:
			tb.Errorf("%s exited by itself: %v", name, p.err)
		default:
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
			select {
			case <-p.done:
			case <-time.After(10 * time.Second):
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-p.done
				tb.Errorf("%s still running 10s after SIGTERM; killed", name)
			}
		}
		if tb.Failed() {
			tb.Logf("output of %s (last 16 KiB):\n%s", name, tail(p.out.String(), 16<<10))
		}
	})
	return p
}

func (c *cluster) proc(name string) *proc {
	for _, p := range c.procs {
		if p.name == name {
			return p
		}
	}
	c.tb.Fatalf("no process %s", name)
	return nil
}

// crawlerKnowsDomains reports whether the crawler's latest domain
// configuration has n throttled domains (its "Domain config changed" log line).
func (c *cluster) crawlerKnowsDomains(n int) bool {
	last := -1
	for _, line := range strings.Split(c.proc("crawler").out.String(), "\n") {
		var m struct {
			Message string `json:"message"`
			Domains int    `json:"domains"`
		}
		if json.Unmarshal([]byte(line), &m) == nil && m.Message == "Domain config changed" {
			last = m.Domains
		}
	}
	return last == n
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// waitFor polls cond every 50 ms until it holds, failing after timeout.
func waitFor(tb testing.TB, what string, timeout time.Duration, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
