package localcluster

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// Redis modes of Config.Redis.
const (
	// RedisEmbedded runs miniredis inside the launcher: nothing to install,
	// nothing kept across restarts.
	RedisEmbedded = "embedded"
	// RedisSystem runs the redis-server found on PATH as a child process,
	// with its data in DataDir/redis when DataDir is set.
	RedisSystem = "system"
	// RedisCluster runs a Redis Cluster of redis-server children from PATH:
	// three masters and a replica each on RedisPort .. RedisPort+5 (their
	// cluster buses 10000 above), with their data in DataDir/redis-cluster
	// when DataDir is set. The components get REDIS_CLUSTER_NODES.
	RedisCluster = "cluster"
)

// Config is what Run starts. The zero value is not usable: start from
// DefaultConfig.
type Config struct {
	// KafkaPort is the embedded broker's port on 127.0.0.1 (default 9092).
	// Unused when KAFKA_HOSTS is set in Env.
	KafkaPort int
	// RedisPort is the embedded Redis's port on 127.0.0.1 (default 6379).
	// Unused when REDIS_HOST is set in Env.
	RedisPort int
	// RESTPort is the REST service's port on 127.0.0.1, its FLASK_PORT
	// (default 5343).
	RESTPort int
	// Crawlers is the number of crawler processes per spider (default 1).
	Crawlers int
	// Spiders are the spider types crawlers run for (default link).
	Spiders []string
	// Render also starts one rendering crawler (RENDER_ENABLED=true) per
	// spider type, besides the ordinary ones. It needs Chromium: the
	// RENDER_BROWSER of Env, or else chromium or chromium-browser on Env's
	// PATH; Run fails before anything starts when there is none.
	Render bool
	// BinDir holds the component binaries (kafka-monitor, redis-monitor,
	// crawler, rest, and testsite with TestSite).
	BinDir string
	// DataDir keeps the broker's log (DataDir/kafka) and, with RedisSystem,
	// Redis's (DataDir/redis) across restarts. Empty: memory only.
	DataDir string
	// Redis is RedisEmbedded (default), RedisSystem or RedisCluster.
	Redis string
	// TestSite also serves the crawler's loopback test site on
	// 127.0.0.1:TestSitePort (default port 8000).
	TestSite     bool
	TestSitePort int
	// KafkaRetention and KafkaRetentionBytes bound what the embedded broker
	// keeps of each partition, so its memory or disk use stays bounded
	// however long it runs. KafkaRetention defaults to 24 h.
	// KafkaRetentionBytes 0 (the default) is DiskRetentionBytes with a
	// DataDir and MemoryRetentionBytes without one.
	KafkaRetention      time.Duration
	KafkaRetentionBytes int64
	// StopTimeout is how long the processes may take to stop after SIGTERM
	// before they are killed (default 20 s: the components' own grace
	// periods are 10 s).
	StopTimeout time.Duration
	// ReadyTimeout is how long the REST service may take to report Kafka
	// and Redis connected before the next steps are printed anyway
	// (default 30 s).
	ReadyTimeout time.Duration
	// Cores is how many cores the cluster's processes share (DefaultConfig:
	// what Go gives the launcher, the CPUs it may run on). Each process the
	// launcher starts gets GOMAXPROCS, its equal share (CoresEach, at least
	// one), and so does the launcher itself while it runs with an embedded
	// broker or Redis. 0, or GOMAXPROCS in Env, leaves every process at
	// what Go or Env gives it.
	Cores int
	// Env is the environment the settings are read from and the processes
	// inherit (os.Environ() in the command).
	Env []string
	// Out receives every process's lines, prefixed with its name.
	Out io.Writer
	// Color colours the prefixes (the command sets it for a terminal).
	Color bool
	// Force, when closed, turns a graceful stop into an immediate SIGKILL of
	// every process (a second Ctrl-C).
	Force <-chan struct{}
}

// DefaultConfig is the configuration of `local-cluster` without flags.
func DefaultConfig() Config {
	return Config{
		KafkaPort:      9092,
		RedisPort:      6379,
		RESTPort:       5343,
		Crawlers:       1,
		Spiders:        []string{"link"},
		BinDir:         DefaultBinDir(),
		DataDir:        DefaultDataDir,
		Redis:          RedisEmbedded,
		TestSitePort:   8000,
		KafkaRetention: 24 * time.Hour,
		StopTimeout:    20 * time.Second,
		ReadyTimeout:   30 * time.Second,
		Cores:          runtime.GOMAXPROCS(0), // the CPUs it may run on, or a container's CPU limit
		Env:            os.Environ(),
		Out:            os.Stdout,
	}
}

// Default retention of each partition of the embedded broker. With a data
// directory the broker keeps its messages in segment files and only a small
// index per batch in memory, so the launcher's memory does not grow with
// what it retains (about 125 MB after a 100k-page crawl: the embedded
// Redis's queues and stats windows, the index and the GC's headroom). Without one (DataDir "") the segments are byte slices in
// the launcher's heap, grown by doubling and kept until a whole segment is
// past the retention, so a partition takes one and a half to three times
// its retention of live heap, and the garbage collector's headroom doubles
// that: 64 MiB per partition held the launcher at about 800 MB after a
// 100k-page crawl (the three firehose partitions full), 8 MiB at about 250 MB.
// BenchmarkLauncherMemory (ops/benchtable/clusterbench) measures it.
const (
	DiskRetentionBytes   = 64 << 20
	MemoryRetentionBytes = 8 << 20
)

// DefaultDataDir is where the embedded services keep their data unless told
// otherwise, relative to the directory the launcher runs in.
const DefaultDataDir = ".local-cluster"

// DefaultBinDir is the directory of the running executable when the
// component binaries are beside it (as bin/local-cluster is), else ./bin.
func DefaultBinDir() string {
	if exe, err := os.Executable(); err == nil {
		dir := filepath.Dir(exe)
		if _, err := os.Stat(filepath.Join(dir, "kafka-monitor")); err == nil {
			return dir
		}
	}
	return "bin"
}

// validate checks the configuration before anything starts.
func (c *Config) validate() error {
	var errs []error
	for _, p := range []struct {
		name string
		port int
	}{{"--kafka-port", c.KafkaPort}, {"--redis-port", c.RedisPort}, {"--rest-port", c.RESTPort}, {"--test-site-port", c.TestSitePort}} {
		if p.port < 1 || p.port > 65535 {
			errs = append(errs, fmt.Errorf("%s %d: not a port (1-65535)", p.name, p.port))
		}
	}
	if c.Crawlers < 0 {
		errs = append(errs, fmt.Errorf("--crawlers %d: must be 0 or more", c.Crawlers))
	}
	if (c.Crawlers > 0 || c.Render) && len(c.Spiders) == 0 {
		errs = append(errs, errors.New("--spiders: name at least one spider (link, wandering)"))
	}
	for _, s := range c.Spiders {
		if s == "" || strings.ContainsAny(s, " \t/") {
			errs = append(errs, fmt.Errorf("--spiders: %q is not a spider name", s))
		}
	}
	switch c.Redis {
	case RedisEmbedded, RedisSystem:
	case RedisCluster:
		if last := c.RedisPort + clusterNodes - 1 + clusterBusShift; last > 65535 {
			errs = append(errs, fmt.Errorf("--redis-port %d: --redis %s needs %d ports from it and their cluster buses %d above (up to %d): at most %d",
				c.RedisPort, RedisCluster, clusterNodes, clusterBusShift, last, 65535-clusterBusShift-clusterNodes+1))
		}
	default:
		errs = append(errs, fmt.Errorf("--redis %q: must be %s, %s or %s", c.Redis, RedisEmbedded, RedisSystem, RedisCluster))
	}
	if c.KafkaRetention <= 0 {
		errs = append(errs, fmt.Errorf("--kafka-retention %s: must be positive", c.KafkaRetention))
	}
	switch {
	case c.KafkaRetentionBytes == 0 && c.DataDir != "":
		c.KafkaRetentionBytes = DiskRetentionBytes
	case c.KafkaRetentionBytes == 0:
		c.KafkaRetentionBytes = MemoryRetentionBytes
	case c.KafkaRetentionBytes < 1<<20:
		errs = append(errs, fmt.Errorf("--kafka-retention-mib %d: must be at least 1 (0: the default)", c.KafkaRetentionBytes>>20))
	}
	if c.StopTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--stop-timeout %s: must be positive", c.StopTimeout))
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	if c.ReadyTimeout <= 0 {
		c.ReadyTimeout = 30 * time.Second
	}
	return errors.Join(errs...)
}

// lookupEnv returns the last value of name in env ("" when absent).
func lookupEnv(env []string, name string) string {
	v, _ := lookupEnvOK(env, name)
	return v
}

// lookupEnvOK is lookupEnv that also says whether name is set at all.
func lookupEnvOK(env []string, name string) (string, bool) {
	val, found := "", false
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			val, found = v, true
		}
	}
	return val, found
}

// withEnv returns env with the variables of set replacing any of the same name.
func withEnv(env []string, set map[string]string) []string {
	out := make([]string, 0, len(env)+len(set))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if _, replaced := set[k]; !replaced {
			out = append(out, kv)
		}
	}
	for k, v := range set {
		out = append(out, k+"="+v)
	}
	return out
}
