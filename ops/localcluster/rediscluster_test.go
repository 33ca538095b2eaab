package localcluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/ops/localcluster"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

// TestLocalClusterOnARedisCluster runs `local-cluster --redis cluster
// --test-site`: six redis-server nodes formed into three masters with a
// replica each, every component on it (REDIS_CLUSTER_NODES, which the next
// steps print). A crawl fed through the REST service is published, and its
// progress is read back from the cluster. Run again on the same data
// directory, the nodes find each other from their nodes.conf (no second
// forming) and the crawl's ledger is still there.
func TestLocalClusterOnARedisCluster(t *testing.T) {
	bin := buildComponents(t)
	ports := freePorts(t, 3)
	kafkaPort, restPort, sitePort := ports[0], ports[1], ports[2]
	redisPort := clusterPortBlock(t)
	dataDir := t.TempDir()
	args := []string{"--bin", bin, "--data-dir", dataDir, "--color", "never", "--test-site", "--redis", "cluster",
		"--kafka-port", strconv.Itoa(kafkaPort), "--redis-port", strconv.Itoa(redisPort),
		"--rest-port", strconv.Itoa(restPort), "--test-site-port", strconv.Itoa(sitePort)}
	var nodes []string
	for i := range 6 {
		nodes = append(nodes, "127.0.0.1:"+strconv.Itoa(redisPort+i))
	}
	rest := fmt.Sprintf("http://127.0.0.1:%d", restPort)
	progress := fmt.Sprintf("%s/crawls/lc-cluster-1?appid=lc-test", rest)

	out, stop := runLauncher(t, args)
	for _, want := range []string{
		"Redis Cluster formed: 3 masters with a replica each",
		fmt.Sprintf("export KAFKA_HOSTS=127.0.0.1:%d REDIS_CLUSTER_NODES=%s ZOOKEEPER_HOSTS=", kafkaPort, strings.Join(nodes, ",")),
	} {
		if !out.Contains(want) {
			t.Errorf("the launcher's output lacks %q", want)
		}
	}
	site := fmt.Sprintf("http://127.0.0.1:%d/", sitePort)
	if got := feed(t, rest, map[string]any{"url": site, "appid": "lc-test", "crawlid": "lc-cluster-1", "maxdepth": 0}); got["status"] != "SUCCESS" {
		t.Fatalf("feed a crawl: %v", got)
	}
	if page := readCrawled(t, fmt.Sprintf("127.0.0.1:%d", kafkaPort), "lc-cluster-1", 60*time.Second); page["url"] != site {
		t.Errorf("crawl result %v", page)
	}
	waitFor(t, 30*time.Second, "the REST service to read the crawl's ledger from the cluster", func() bool {
		return crawlPublished(progress) == 1
	})
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: nodes})
	defer cc.Close()
	var keys atomic.Int64 // ForEachMaster asks the masters at once
	err := cc.ForEachMaster(context.Background(), func(ctx context.Context, m *redis.Client) error {
		n, err := m.DBSize(ctx).Result()
		keys.Add(n)
		return err
	})
	if err != nil || keys.Load() == 0 {
		t.Errorf("the cluster's masters hold %d keys (%v), want the crawl's", keys.Load(), err)
	}
	stop()

	out, stop = runLauncher(t, args)
	defer stop()
	if out.Contains("Redis Cluster formed") {
		t.Error("the cluster was formed again on a data directory that has it")
	}
	waitFor(t, 30*time.Second, "the crawl's ledger after the restart", func() bool {
		return crawlPublished(progress) == 1
	})
}

// runLauncher runs the local-cluster command with args until it prints the
// next steps, and returns its output and a stop that ends it cleanly.
func runLauncher(t *testing.T, args []string) (*harness.OutputBuffer, func()) {
	t.Helper()
	out := &harness.OutputBuffer{}
	cmd := localcluster.NewCommand(cleanEnv(), out)
	cmd.SetArgs(args)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("the launcher: %v", err)
			}
		case <-time.After(90 * time.Second):
			t.Error("the launcher did not stop")
		}
		if t.Failed() {
			t.Logf("launcher output:\n%s", out.String())
		}
	}
	t.Cleanup(stop)
	waitFor(t, 90*time.Second, "the launcher prints the next steps", func() bool {
		select {
		case err := <-done:
			stopped = true
			t.Fatalf("the launcher returned early: %v\n%s", err, out.String())
		default:
		}
		return out.Contains("The cluster is up.")
	})
	return out, stop
}

// crawlPublished is the published count of the crawl whose progress the
// REST service serves at url, -1 when it does not answer one.
func crawlPublished(url string) int {
	resp, err := http.Get(url)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	var answer struct {
		Data struct {
			Progress *struct {
				Published int `json:"published"`
			} `json:"progress"`
		} `json:"data"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&answer) != nil || answer.Data.Progress == nil {
		return -1
	}
	return answer.Data.Progress.Published
}

// clusterPortBlock finds six consecutive free loopback ports whose cluster
// bus ports (10000 above) are free too, and returns the first.
func clusterPortBlock(t *testing.T) int {
	t.Helper()
	for range 200 {
		base := 20000 + rand.IntN(35000-10)
		free := true
		for i := 0; i < 6 && free; i++ {
			for _, p := range []int{base + i, base + i + 10000} {
				ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
				if err != nil {
					free = false
					break
				}
				ln.Close()
			}
		}
		if free {
			return base
		}
	}
	t.Fatal("no block of six free ports with free bus ports")
	return 0
}
