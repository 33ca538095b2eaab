// Package localcluster runs the whole cluster on one machine with nothing to
// install: an embedded Kafka-protocol broker (kfake), an embedded Redis
// (miniredis) and the Kafka Monitor, Redis Monitor, crawlers and REST service
// as separate processes built from this repository, each logging behind its
// name. ZooKeeper is not needed: with ZOOKEEPER_HOSTS empty the domain
// config lives in Redis. KAFKA_HOSTS, REDIS_HOST and ZOOKEEPER_HOSTS in the
// environment point the same processes at real services instead.
//
// The local-cluster command (ops/cmd/local-cluster, `make run`) is
// NewCommand; Run is the launcher itself.
package localcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Binaries Run starts, from Config.BinDir.
const (
	binKafkaMonitor = "kafka-monitor"
	binRedisMonitor = "redis-monitor"
	binCrawler      = "crawler"
	binREST         = "rest"
	binTestSite     = "testsite"
	binKafkaDump    = "kafkadump"
)

// services is where the cluster's Kafka, Redis and ZooKeeper are, embedded
// or given in the environment.
type services struct {
	kafkaHosts    string
	kafkaEmbedded bool
	redisHost     string
	redisPort     string
	redisEmbedded bool // miniredis or redis-server children of ours
	// redisClusterNodes is REDIS_CLUSTER_NODES: the environment's Redis
	// Cluster, or the local one of --redis cluster (redisEmbedded), whose
	// nodes keep their files in redisClusterDir.
	redisClusterNodes string
	redisClusterDir   string
	zookeeperHosts    string
}

// Run starts the cluster and runs it until ctx is done (then it stops every
// process with SIGTERM, closes the embedded services and returns nil) or a
// process ends by itself (then it stops the others and returns an error).
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.validate(); err != nil {
		return err
	}
	cwd, err := os.Getwd()
	if err != nil {
		return err
	}
	if cfg.BinDir, err = filepath.Abs(cfg.BinDir); err != nil {
		return err
	}
	svc := cfg.services()
	if svc.redisEmbedded && cfg.Redis == RedisCluster {
		dir, cleanup, err := cfg.clusterDir()
		if err != nil {
			return err
		}
		defer cleanup()
		svc.redisClusterDir = dir
	}
	plan, err := cfg.plan(svc)
	if err != nil {
		return err
	}
	if err := checkPorts(cfg.ports(svc)); err != nil {
		return err
	}
	hostsService := svc.kafkaEmbedded || (svc.redisEmbedded && cfg.Redis == RedisEmbedded)
	own, coresSummary := cfg.shareCores(plan, hostsService)
	if own > 0 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(own))
	}
	names := []string{"kafka"}
	for _, tier := range plan {
		for _, s := range tier {
			names = append(names, s.name)
		}
	}
	con := newConsole(cfg.Out, cfg.Color, names)
	closeServices, err := startServices(ctx, &cfg, svc, con)
	if err != nil {
		return err
	}
	defer closeServices()

	if coresSummary != "" {
		con.logf("%s", coresSummary)
	}
	con.logf("admin endpoints: %s", adminSummary(plan))
	procs := &processes{cfg: &cfg, con: con, exited: make(chan *child, len(names))}
	if err := procs.start(ctx, plan, svc, cwd); err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	announced := make(chan struct{})
	defer func() {
		cancel()
		<-announced
	}()
	go func() {
		defer close(announced)
		announce(runCtx, cfg, svc, con, findChild(procs.started, "rest"), cwd, plan)
	}()

	select {
	case <-ctx.Done():
		cancel()
		<-announced
		con.logf("stopping: SIGTERM to every process (Ctrl-C again kills them at once)")
		if err := procs.stopAll(); err != nil {
			return err // the command prints it
		}
		con.logf("every process stopped")
		return nil
	case c := <-procs.exited:
		cancel()
		c.reported.Store(true)
		err := fmt.Errorf("%s exited unexpectedly (%s)", c.name, describeExit(c.err))
		con.logf("%v: stopping the cluster", err)
		return errors.Join(err, procs.stopAll())
	}
}

// services says where Kafka, Redis and ZooKeeper are: in cfg.Env, or else
// embedded on cfg's ports.
func (cfg *Config) services() services {
	svc := services{
		kafkaHosts:     lookupEnv(cfg.Env, "KAFKA_HOSTS"),
		redisHost:      lookupEnv(cfg.Env, "REDIS_HOST"),
		redisPort:      lookupEnv(cfg.Env, "REDIS_PORT"),
		zookeeperHosts: lookupEnv(cfg.Env, "ZOOKEEPER_HOSTS"),
		// A Redis Cluster of the environment's wins, as in the components.
		redisClusterNodes: lookupEnv(cfg.Env, "REDIS_CLUSTER_NODES"),
	}
	if svc.kafkaHosts == "" {
		svc.kafkaEmbedded = true
		svc.kafkaHosts = "127.0.0.1:" + strconv.Itoa(cfg.KafkaPort)
	}
	switch {
	case svc.redisClusterNodes != "":
	case svc.redisHost == "":
		svc.redisEmbedded = true
		svc.redisHost, svc.redisPort = "127.0.0.1", strconv.Itoa(cfg.RedisPort)
		if cfg.Redis == RedisCluster {
			svc.redisClusterNodes = strings.Join(cfg.clusterAddrs(), ",")
		}
	case svc.redisPort == "":
		svc.redisPort = "6379"
	}
	return svc
}

// startServices locks the data directory, starts the embedded Kafka broker
// and miniredis the cluster uses (or says which services it uses instead)
// and creates the output topics. closeAll closes what it started, last
// first.
func startServices(ctx context.Context, cfg *Config, svc services, con *console) (closeAll func(), err error) {
	var closers []func()
	closeAll = func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	defer func() {
		if err != nil {
			closeAll()
		}
	}()
	if cfg.DataDir != "" && (svc.kafkaEmbedded || (svc.redisEmbedded && cfg.Redis != RedisEmbedded)) {
		unlock, err := lockDataDir(cfg.DataDir)
		if err != nil {
			return nil, err
		}
		closers = append(closers, unlock)
	}
	if svc.kafkaEmbedded {
		k, err := startKafka(cfg, con)
		if err != nil {
			return nil, err
		}
		closers = append(closers, func() {
			k.Close()
			con.logf("embedded Kafka broker stopped")
		})
		where := "in memory"
		if cfg.DataDir != "" {
			where = "data in " + filepath.Join(cfg.DataDir, "kafka")
		}
		con.logf("embedded Kafka broker (kfake) on %s, %s, keeping %s or %d MiB per partition",
			k.addr, where, cfg.KafkaRetention, cfg.KafkaRetentionBytes>>20)
	} else {
		con.logf("using Kafka at KAFKA_HOSTS=%s", svc.kafkaHosts)
		warnUnreachable(con, "KAFKA_HOSTS", strings.Split(svc.kafkaHosts, ",")[0])
	}
	switch {
	case svc.redisClusterNodes != "" && !svc.redisEmbedded:
		con.logf("using the Redis Cluster at REDIS_CLUSTER_NODES=%s", svc.redisClusterNodes)
		warnUnreachable(con, "REDIS_CLUSTER_NODES", strings.Split(svc.redisClusterNodes, ",")[0])
	case !svc.redisEmbedded:
		con.logf("using Redis at REDIS_HOST=%s REDIS_PORT=%s", svc.redisHost, svc.redisPort)
		warnUnreachable(con, "REDIS_HOST", net.JoinHostPort(svc.redisHost, svc.redisPort))
	case cfg.Redis == RedisEmbedded:
		r, err := startMiniredis(cfg.RedisPort)
		if err != nil {
			return nil, err
		}
		closers = append(closers, func() {
			r.Close()
			con.logf("embedded Redis stopped")
		})
		con.logf("embedded Redis (miniredis) on %s, in memory", r.addr)
	}
	if topics, err := ensureOutputTopics(ctx, cfg.Env, svc.kafkaHosts); err != nil {
		con.logf("warning: create the output topics: %v (the components create them when they first write)", err)
	} else {
		con.logf("topics %s ready", strings.Join(topics, ", "))
	}
	if svc.zookeeperHosts != "" {
		con.logf("using ZooKeeper at ZOOKEEPER_HOSTS=%s for the domain config", svc.zookeeperHosts)
	} else {
		con.logf("no ZooKeeper: the domain config lives in Redis")
	}
	return closeAll, nil
}

// processes are the cluster's processes, started tier by tier.
type processes struct {
	cfg     *Config
	con     *console
	started [][]*child // by tier
	exited  chan *child
}

// start starts plan's processes tier by tier and waits for the first
// tier's (redis-server, the test site) to answer. When one fails it stops
// those started and returns why; when ctx ends meanwhile it returns nil
// (Run then stops them cleanly).
func (ps *processes) start(ctx context.Context, plan [][]spec, svc services, cwd string) error {
	for i, tier := range plan {
		var children []*child
		for _, s := range tier {
			c, err := startChild(ps.con, s, cwd, ps.exited)
			if err != nil {
				ps.started = append(ps.started, children)
				return errors.Join(err, ps.stopAll())
			}
			ps.con.logf("started %s (pid %d): %s", s.name, c.pid(), commandLine(s))
			children = append(children, c)
		}
		ps.started = append(ps.started, children)
		if i == 0 {
			if err := ps.readyInfrastructure(ctx, svc); err != nil {
				if ctx.Err() != nil {
					return nil // stopped while starting: Run stops them cleanly
				}
				return errors.Join(err, ps.stopAll())
			}
		}
	}
	return nil
}

// stopAll stops the processes started, the last tier first.
func (ps *processes) stopAll() error {
	var errs []error
	for i := len(ps.started) - 1; i >= 0; i-- {
		errs = append(errs, stopChildren(ps.con, ps.started[i], ps.cfg.StopTimeout, ps.cfg.Force))
	}
	return errors.Join(errs...)
}

// announce waits until rest reports Kafka and Redis connected and prints
// the commands to try, unless ctx ends first or another program answers
// on the REST port. rest is nil when the cluster stopped while starting.
func announce(ctx context.Context, cfg Config, svc services, con *console, rest *child, cwd string, plan [][]spec) {
	if rest == nil {
		return
	}
	myID, err := waitREST(ctx, rest.pid(), cfg.RESTPort, cfg.ReadyTimeout)
	switch {
	case ctx.Err() != nil:
		return
	case errors.Is(err, errForeignREST):
		con.logf("%v: not announcing the cluster", err)
		return
	case err != nil:
		con.logf("the REST service does not report Kafka and Redis connected after %s (%v); see the logs above", cfg.ReadyTimeout, err)
	default:
		con.logf("rest (pid %d, my_id %s) reports Kafka and Redis connected", rest.pid(), myID)
	}
	con.print(nextSteps(cfg, svc, cwd, plan))
}

// plan lists the processes to start, in tiers: the first (redis-server,
// the test site) is started first and stopped last.
func (cfg *Config) plan(svc services) ([][]spec, error) {
	env := withEnv(cfg.Env, map[string]string{
		"KAFKA_HOSTS":         svc.kafkaHosts,
		"REDIS_HOST":          svc.redisHost,
		"REDIS_PORT":          svc.redisPort,
		"REDIS_CLUSTER_NODES": svc.redisClusterNodes,
		"ZOOKEEPER_HOSTS":     svc.zookeeperHosts,
		"FLASK_PORT":          strconv.Itoa(cfg.RESTPort),
	})
	// Single-machine defaults the environment may override: the REST
	// service on loopback only, and no public IP lookup (no internet
	// needed; every crawler here has the same IP anyway).
	defaults := map[string]string{
		"FLASK_HOST":           "127.0.0.1",
		"PUBLIC_IP_URL":        "",
		"SCHEDULER_IP_ENABLED": "false",
	}
	// A Redis of the launcher's own is read by no Python component: the
	// crawlers' response counts go in hashes of time buckets, whose memory
	// does not grow with the pages crawled (an embedded Redis holds them in
	// this machine's memory), rather than the original's sorted sets.
	if svc.redisEmbedded {
		defaults["STATS_RESPONSE_BUCKETS"] = "true"
	}
	for k, v := range defaults {
		if _, set := lookupEnvOK(cfg.Env, k); !set {
			env = append(env, k+"="+v)
		}
	}

	var missing []string
	bin := func(name string) string {
		p := filepath.Join(cfg.BinDir, name)
		if st, err := os.Stat(p); err != nil || st.IsDir() {
			missing = append(missing, name)
		}
		return p
	}
	var infra []spec
	if svc.redisEmbedded && cfg.Redis == RedisSystem {
		p, err := exec.LookPath("redis-server")
		if err != nil {
			return nil, fmt.Errorf("--redis %s: %w (install redis-server or use --redis %s)", RedisSystem, err, RedisEmbedded)
		}
		args := []string{"--bind", "127.0.0.1", "--port", strconv.Itoa(cfg.RedisPort), "--save", "", "--daemonize", "no"}
		if cfg.DataDir != "" {
			dir, err := filepath.Abs(filepath.Join(cfg.DataDir, "redis"))
			if err != nil {
				return nil, err
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, fmt.Errorf("create %s: %w", dir, err)
			}
			args = append(args, "--dir", dir, "--appendonly", "yes")
		} else {
			args = append(args, "--appendonly", "no")
		}
		infra = append(infra, spec{name: "redis", path: p, args: args, env: cfg.Env})
	}
	if svc.redisEmbedded && cfg.Redis == RedisCluster {
		nodes, err := cfg.clusterSpecs(svc.redisClusterDir)
		if err != nil {
			return nil, err
		}
		infra = append(infra, nodes...)
	}
	if cfg.TestSite {
		infra = append(infra, spec{name: "testsite", path: bin(binTestSite),
			args: []string{"--addr", "127.0.0.1:" + strconv.Itoa(cfg.TestSitePort)}, env: cfg.Env})
	}
	components := []spec{
		{name: "kafka-monitor", path: bin(binKafkaMonitor), args: []string{"run"}, env: env},
		{name: "redis-monitor", path: bin(binRedisMonitor), env: env},
	}
	crawlerEnv := env
	if cfg.TestSite {
		crawlerEnv = withEnv(env, map[string]string{"FETCH_ALLOWED_NETWORKS": allowLoopback(lookupEnv(env, "FETCH_ALLOWED_NETWORKS"))})
	}
	for _, sp := range cfg.Spiders {
		for i := 1; i <= cfg.Crawlers; i++ {
			components = append(components, spec{name: fmt.Sprintf("crawler-%s-%d", sp, i),
				path: bin(binCrawler), args: []string{"--spider", sp}, env: crawlerEnv})
		}
	}
	if cfg.Render {
		renderers, err := renderCrawlers(cfg.Env, cfg.Spiders, bin(binCrawler), crawlerEnv)
		if err != nil {
			return nil, err
		}
		components = append(components, renderers...)
	}
	// The REST service's /try fetches as a crawler would, with the crawlers' FETCH_* settings.
	components = append(components, spec{name: "rest", path: bin(binREST), env: crawlerEnv})
	components, err := withAdminAddrs(env, components)
	if err != nil {
		return nil, err
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s not found in %s: run `make build` first, or point --bin at them", strings.Join(missing, ", "), cfg.BinDir)
	}
	return [][]spec{infra, components}, nil
}

// LoopbackNetworks is what the crawlers of a cluster with the test site may
// fetch besides what FETCH_ALLOWED_NETWORKS already allows: the test site is
// on loopback, which the crawler's guard against internal addresses refuses
// by default.
const LoopbackNetworks = "127.0.0.0/8,::1/128"

// allowLoopback adds LoopbackNetworks to a FETCH_ALLOWED_NETWORKS value
// (comma-separated CIDRs), keeping what it allows already.
func allowLoopback(allowed string) string {
	var nets []string
	for _, n := range strings.Split(allowed, ",") {
		if n = strings.TrimSpace(n); n != "" {
			nets = append(nets, n)
		}
	}
	for _, n := range strings.Split(LoopbackNetworks, ",") {
		if !slices.Contains(nets, n) {
			nets = append(nets, n)
		}
	}
	return strings.Join(nets, ",")
}

// readyInfrastructure waits until the first tier answers and, with
// --redis cluster, forms the local Redis Cluster.
func (ps *processes) readyInfrastructure(ctx context.Context, svc services) error {
	if err := waitInfrastructure(ctx, *ps.cfg, svc, ps.exited); err != nil {
		return err
	}
	if !svc.redisEmbedded || ps.cfg.Redis != RedisCluster {
		return nil
	}
	if err := formCluster(ctx, *ps.cfg, ps.con); err != nil {
		return err
	}
	where := "in memory"
	if ps.cfg.DataDir != "" {
		where = "data in " + svc.redisClusterDir
	}
	ps.con.logf("Redis Cluster (redis-server) on %s: %d masters with a replica each, %s", svc.redisClusterNodes, clusterMasters, where)
	return nil
}

// waitInfrastructure waits until the redis-server and the test site we
// started answer.
func waitInfrastructure(ctx context.Context, cfg Config, svc services, exited <-chan *child) error {
	var addrs []string
	if svc.redisEmbedded && cfg.Redis == RedisSystem {
		addrs = append(addrs, net.JoinHostPort(svc.redisHost, svc.redisPort))
	}
	if svc.redisEmbedded && cfg.Redis == RedisCluster {
		addrs = append(addrs, cfg.clusterAddrs()...)
	}
	if cfg.TestSite {
		addrs = append(addrs, "127.0.0.1:"+strconv.Itoa(cfg.TestSitePort))
	}
	deadline := time.Now().Add(cfg.ReadyTimeout)
	for _, addr := range addrs {
		for {
			conn, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				conn.Close()
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("nothing answers on %s after %s", addr, cfg.ReadyTimeout)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case c := <-exited:
				c.reported.Store(true)
				return fmt.Errorf("%s exited unexpectedly (%s)", c.name, describeExit(c.err))
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return nil
}

// findChild returns the started child called name, or nil.
func findChild(tiers [][]*child, name string) *child {
	for _, tier := range tiers {
		for _, c := range tier {
			if c.name == name {
				return c
			}
		}
	}
	return nil
}

// errForeignREST is waitREST's error when what answers on the REST port is
// not the REST process the launcher started.
var errForeignREST = errors.New("another program answers on the REST port")

// waitREST polls the REST service's index on 127.0.0.1:port until it
// reports both Kafka and Redis connected (node_health GREEN) and returns its
// my_id. The answer counts only when process pid, the rest the launcher
// started, holds the socket it came through (listensOn): another program on
// the port is never taken for the cluster's REST service. Where the system
// cannot tell who holds a socket, the answer alone counts. An answer from
// another program ends the wait with errForeignREST once timeout passes.
func waitREST(ctx context.Context, pid, port int, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/"
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		myID, last := restHealth(ctx, client, url)
		if last == nil {
			ours, err := listensOn(pid, port)
			switch {
			case ours || errors.Is(err, errors.ErrUnsupported):
				return myID, nil
			case err != nil:
				last = fmt.Errorf("check who holds port %d: %w", port, err)
			default:
				last = fmt.Errorf("%w: the process holding 127.0.0.1:%d is not the rest the launcher started (pid %d)", errForeignREST, port, pid)
			}
		}
		select {
		case <-ctx.Done():
			return "", last
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// restHealth asks the REST index at url for its state: nil error and its
// my_id when it is GREEN.
func restHealth(ctx context.Context, client *http.Client, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var state struct {
		NodeHealth string `json:"node_health"`
		MyID       string `json:"my_id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&state); err != nil {
		return "", fmt.Errorf("GET %s: %w", url, err)
	}
	if state.NodeHealth != "GREEN" {
		return "", fmt.Errorf("node_health %s", state.NodeHealth)
	}
	return state.MyID, nil
}

// commandLine is how s is started, as a shell would need it.
func commandLine(s spec) string {
	words := []string{filepath.Base(s.path)}
	for _, a := range s.args {
		if a == "" || strings.ContainsAny(a, " \t'\"$\\") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		words = append(words, a)
	}
	return strings.Join(words, " ")
}

// warnUnreachable says so when nothing answers at addr, a service given in
// the environment; the processes keep retrying, so it is not fatal.
func warnUnreachable(con *console, setting, addr string) {
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		con.logf("warning: %s: nothing answers at %s yet (%v); the processes will keep trying", setting, addr, err)
		return
	}
	conn.Close()
}
