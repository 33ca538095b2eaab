package localcluster

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/cli"
)

// commandHelp is local-cluster --help's long text.
const commandHelp = `local-cluster starts the complete cluster on this machine with nothing to install:

  kafka           an embedded Kafka-protocol broker (kfake) on 127.0.0.1:--kafka-port
  redis           an embedded Redis (miniredis) on 127.0.0.1:--redis-port
  kafka-monitor   kafka-monitor run
  redis-monitor   redis-monitor
  crawler-<s>-<n> crawler --spider <s>, --crawlers of them for each of --spiders
  crawler-<s>-render with --render, one rendering crawler (RENDER_ENABLED=true) for each of --spiders
  rest            the REST service on 127.0.0.1:--rest-port
  testsite        with --test-site, the crawler's loopback test site on --test-site-port

ZooKeeper is not needed: with ZOOKEEPER_HOSTS empty the crawlers' domain config lives in Redis.
The components are the binaries in --bin (make build puts them in bin/), each a separate process
whose output is shown behind its name. Once the REST service reports Kafka and Redis connected,
the commands to feed a crawl, watch its results and ask for info and stats are printed with the
real ports.

Ports: before anything starts, every port the cluster will listen on (--kafka-port and
--redis-port for the embedded services, --rest-port, --test-site-port with --test-site) is
checked; one that is in use stops the launcher at once with exit status 1, naming the port and
the flag that changes it. The cluster is announced only when the answer on --rest-port comes
from the rest process the launcher started (on Linux it checks, in /proc, which process holds
the port), so another program on that port is never taken for it.

With --test-site the crawlers and the REST service (its /try fetches as a crawler does) get
FETCH_ALLOWED_NETWORKS=` + LoopbackNetworks + ` (added to any FETCH_ALLOWED_NETWORKS in the
environment): the crawler refuses internal addresses by default, and the test site is on loopback.

With --render, one crawler per spider type also renders pages in headless Chromium (crawl
requests with "render"; the others never take them). It needs Chromium: RENDER_BROWSER from the
environment, or else chromium or chromium-browser on PATH, which the rendering crawlers get as
RENDER_BROWSER. When none is found the launcher says so and exits with status 3 before anything
starts.

Real services instead of embedded ones: set KAFKA_HOSTS (no broker is started), REDIS_HOST and
REDIS_PORT, or REDIS_CLUSTER_NODES (no Redis is started) and ZOOKEEPER_HOSTS (the domain config lives there) in the
environment. Every other setting in the environment (LOG_LEVEL, QUEUE_HITS, ...) reaches the
components as it is; the launcher only defaults FLASK_HOST to 127.0.0.1, PUBLIC_IP_URL to empty
and SCHEDULER_IP_ENABLED to false, which suit one machine, and with a Redis of its own (which no
Python component reads) STATS_RESPONSE_BUCKETS to true: the crawlers' response counts in hashes
of time buckets, whose memory does not grow with the pages crawled.

Cores: every process shares this machine's cores, so each one it starts gets GOMAXPROCS, an
equal share of them (the cores Go gives the launcher over the processes, the launcher counted
when it hosts the embedded broker or Redis, which then runs with its share too; at least 1), and
the launcher says so. A Go process left a P per core that uses less than a core keeps waking a
second thread for nothing: on 2 cores each spends about a fifth less CPU a page with its share
(docs/production.md, "Sharing the cores of one machine"). GOMAXPROCS in the environment
reaches every process as it is instead.

Data: the broker keeps its log in --data-dir/kafka (consumer offsets and messages survive a
restart, within the retention); miniredis keeps nothing across restarts. --redis system runs the
redis-server on PATH instead, with an append-only file in --data-dir/redis; --redis cluster runs a
Redis Cluster of six redis-server processes (three masters and a replica each, on --redis-port and
the five ports after it, their cluster buses 10000 above) with their files in
--data-dir/redis-cluster, and gives the components REDIS_CLUSTER_NODES (docs/redis-cluster.md). --data-dir '' keeps
everything in memory; the broker's messages then live in the launcher's heap, so its retention
defaults to less (see --kafka-retention-mib). With the default --data-dir the launcher holds
about 125 MB after a 100k-page crawl, whatever the retention.

Ctrl-C (or SIGTERM) sends SIGTERM to every process, waits for them to drain (--stop-timeout),
closes the embedded services and exits 0; a second Ctrl-C kills at once. If a process exits by
itself, the launcher says so, stops the others and exits 1.`

// NewCommand returns the local-cluster command. env is the environment the
// cluster's settings come from and its processes inherit (os.Environ()); out
// receives every line. SIGINT or SIGTERM stops the cluster cleanly, a second
// one kills what is left.
func NewCommand(env []string, out io.Writer) *cobra.Command {
	cfg := DefaultConfig()
	cfg.Env, cfg.Out = env, out
	var (
		retentionMiB int64
		color        string
	)
	cmd := &cobra.Command{
		Use:   "local-cluster",
		Short: "Run the whole Scrapy Cluster on this machine: embedded Kafka and Redis, every component",
		Long:  commandHelp,
		Example: `  local-cluster --test-site
  local-cluster --crawlers 2 --spiders link,wandering --rest-port 8080
  local-cluster --test-site --render
  local-cluster --kafka-port 19092 --redis-port 16379 --data-dir ''
  KAFKA_HOSTS=kafka:9092 REDIS_HOST=redis ZOOKEEPER_HOSTS=zookeeper:2181 local-cluster`,
		Version:       cli.Version,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.KafkaRetentionBytes = retentionMiB << 20
			switch color {
			case "always":
				cfg.Color = true
			case "never":
				cfg.Color = false
			case "auto":
				f, ok := out.(*os.File)
				cfg.Color = ok && isTerminal(f, env)
			default:
				return fmt.Errorf("--color %q: must be auto, always or never", color)
			}
			return runUntilSignalled(cmd.Context(), cfg)
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.KafkaPort, "kafka-port", cfg.KafkaPort, "port of the embedded Kafka broker on 127.0.0.1 (unused with KAFKA_HOSTS set)")
	f.IntVar(&cfg.RedisPort, "redis-port", cfg.RedisPort, "port of the embedded Redis on 127.0.0.1 (unused with REDIS_HOST set)")
	f.IntVar(&cfg.RESTPort, "rest-port", cfg.RESTPort, "port of the REST service on 127.0.0.1 (its FLASK_PORT)")
	f.IntVar(&cfg.Crawlers, "crawlers", cfg.Crawlers, "crawler processes per spider type")
	f.StringSliceVar(&cfg.Spiders, "spiders", cfg.Spiders, "spider types to run crawlers for, comma-separated (built in: link, wandering)")
	f.BoolVar(&cfg.Render, "render", cfg.Render, "also start one rendering crawler (RENDER_ENABLED=true) per spider type; needs chromium or chromium-browser on PATH (or RENDER_BROWSER)")
	f.StringVar(&cfg.BinDir, "bin", cfg.BinDir, "directory of the component binaries: by default this executable's directory when they are there, else ./bin")
	f.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "directory the broker (and --redis system) keep their data in across restarts; '' keeps everything in memory")
	f.StringVar(&cfg.Redis, "redis", cfg.Redis, "Redis to start when REDIS_HOST and REDIS_CLUSTER_NODES are not set: embedded (miniredis, in memory), system (redis-server from PATH) or cluster (a Redis Cluster of six redis-server processes from PATH)")
	f.BoolVar(&cfg.TestSite, "test-site", cfg.TestSite, "also serve the crawler's test site on loopback (testsite from --bin)")
	f.IntVar(&cfg.TestSitePort, "test-site-port", cfg.TestSitePort, "port of the test site on 127.0.0.1")
	f.DurationVar(&cfg.KafkaRetention, "kafka-retention", cfg.KafkaRetention, "how long the embedded broker keeps messages")
	f.Int64Var(&retentionMiB, "kafka-retention-mib", cfg.KafkaRetentionBytes>>20, fmt.Sprintf("MiB the embedded broker keeps per partition at most, oldest dropped first (default %d with a --data-dir; %d with --data-dir '', where the messages take several times their size of the launcher's memory)", DiskRetentionBytes>>20, MemoryRetentionBytes>>20))
	f.DurationVar(&cfg.StopTimeout, "stop-timeout", cfg.StopTimeout, "how long the processes may take to stop after SIGTERM before they are killed")
	f.StringVar(&color, "color", "auto", "colour the process names: auto (when writing to a terminal, unless NO_COLOR is set), always or never")
	f.SortFlags = false
	return cmd
}

// runUntilSignalled runs the cluster until ctx is done or the first SIGINT or
// SIGTERM; a second signal kills every process at once.
func runUntilSignalled(parent context.Context, cfg Config) error {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	force := make(chan struct{})
	cfg.Force = force
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-ctx.Done():
		case <-done:
			return
		}
		select {
		case <-sigs:
			close(force)
		case <-done:
		}
	}()
	return Run(ctx, cfg)
}
