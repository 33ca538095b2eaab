package console_test

import (
	"context"
	"encoding/json"
	"maps"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	_ "github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugins/all"
	"github.com/scrapycluster/scrapy-cluster-go/rest/server"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisconn"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

func TestMain(m *testing.M) { bins.Main(m) }

// bins are the cluster's binaries, built once per test binary.
var bins = harness.Binaries{Packages: []string{"./kafka-monitor/cmd/kafka-monitor", "./redis-monitor/cmd/redis-monitor",
	"./crawler/cmd/crawler", "./crawler/cmd/testsite"}}

// cluster is a whole cluster on loopback: real redis-server, ZooKeeper and
// kfake, the Kafka Monitor, Redis Monitor and a link crawler as processes,
// two test sites, and the REST service (with the console) in this process.
type cluster struct {
	tb testing.TB
	// rdb is the one Redis (nil on a Redis Cluster); frontier is the
	// cluster's Redis in either mode: rdb, or a client of the Redis Cluster.
	rdb      *redis.Client
	frontier redis.UniversalClient
	env      map[string]string
	procs    harness.Processes
	restURL  string
	// site1 and site2 are the test sites' base URLs, on 127.0.0.1 and
	// 127.0.0.2: two domains to the crawler.
	site1, site2 string
}

// newCluster starts the cluster with the common settings and overrides.
func newCluster(tb testing.TB, overrides ...map[string]string) *cluster {
	tb.Helper()
	return newClusterOn(tb, false, overrides...)
}

// newClusterOn is newCluster on one Redis, or with onRedisCluster on a
// Redis Cluster (three masters, three replicas; REDIS_CLUSTER_NODES) that
// every component and the REST service use.
func newClusterOn(tb testing.TB, onRedisCluster bool, overrides ...map[string]string) *cluster {
	tb.Helper()
	c := &cluster{tb: tb}
	redisPort, nodes := 6379, "" // REDIS_PORT is not read on a Redis Cluster
	if onRedisCluster {
		rc := harness.StartRedisCluster(tb)
		c.frontier, nodes = rc.TestClient(tb), rc.Seeds()
	} else {
		r := harness.StartRedis(tb)
		c.rdb, redisPort = r.TestClient(tb), r.Port
		c.frontier = c.rdb
	}
	zk := harness.StartZooKeeper(tb)
	k := harness.StartKafka(tb)
	c.env = harness.ClusterSettings(redisPort, k.Hosts(), zk.Addr)
	if onRedisCluster {
		c.env["REDIS_CLUSTER_NODES"] = nodes
	}
	maps.Copy(c.env, map[string]string{
		"KAFKA_CONSUMER_SLEEP_TIME": "0.2", "SCHEDULER_QUEUE_REFRESH": "1",
		"SLEEP_TIME": "0.05", "HEARTBEAT_TIMEOUT": "30", "WAIT_FOR_RESPONSE_TIME": "10",
	})
	for _, o := range overrides {
		maps.Copy(c.env, o)
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
	port := harness.Port(c.tb)
	addr := net.JoinHostPort(ip, strconv.Itoa(port))
	c.start(name, "testsite", append([]string{"--addr", addr}, args...)...)
	base := "http://" + addr + "/"
	harness.WaitFor(c.tb, name+" to serve", 20*time.Second, func() bool {
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
	s, err := settings.Load(server.Settings(), settings.Options{NoEnv: true, Flags: c.env})
	if err != nil {
		tb.Fatal(err)
	}
	logs := &harness.OutputBuffer{}
	log := harness.Logger(tb, logfactory.Settings("").Config(s), logs)
	rdb := redisconn.New(s) // the one Redis, or the Redis Cluster of REDIS_CLUSTER_NODES
	tb.Cleanup(func() {
		rdb.Close()
		if tb.Failed() {
			tb.Logf("REST service log (last 16 KiB):\n%s", harness.Tail(logs.String(), 16<<10))
		}
	})
	var svc *server.Service
	svc, c.restURL = serveREST(tb, s, log, rdb, server.WithAccessLog(logs))
	harness.WaitFor(tb, "the REST service to report Kafka and Redis connected", 30*time.Second, func() bool {
		return svc.KafkaConnected() && svc.RedisConnected()
	})
}

// serveREST runs a REST service with s, log and rdb on a loopback port
// until tb ends, and returns it with its base URL.
func serveREST(tb testing.TB, s *settings.Settings, log *logfactory.Logger, rdb redis.UniversalClient, opts ...server.Option) (*server.Service, string) {
	tb.Helper()
	svc, err := server.New(context.Background(), s, log, rdb, opts...)
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
	})
	return svc, "http://" + ln.Addr().String()
}

// start runs a binary (kafka-monitor, redis-monitor, crawler, testsite)
// with the cluster's settings in its environment; on cleanup it gets
// SIGTERM (SIGKILL after 10 s), and its output is shown if the test failed.
// It must not exit before.
func (c *cluster) start(name, bin string, args ...string) *harness.Process {
	c.tb.Helper()
	p := harness.StartProcess(c.tb, harness.ProcessSpec{Name: name, Path: bins.Path(c.tb, bin), Args: args, Env: harness.Environ(c.env),
		StopGrace: 10 * time.Second, Supervise: true})
	c.procs = append(c.procs, p)
	return p
}

// proc is the process started as name.
func (c *cluster) proc(name string) *harness.Process { return c.procs.Get(c.tb, name) }

// crawlerKnowsDomains reports whether the crawler's latest domain
// configuration has n throttled domains (its "Domain config changed" log line).
func (c *cluster) crawlerKnowsDomains(n int) bool {
	last := -1
	for _, line := range strings.Split(c.proc("crawler").Output().String(), "\n") {
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
