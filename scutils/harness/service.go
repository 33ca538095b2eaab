package harness

import (
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// server is what Redis and ZooKeeper share: a child process serving from
// files in dir, which Stop, Kill and Close end.
type server struct {
	dir  string
	mu   sync.Mutex
	proc *Process
}

// run launches spec and waits until ready answers (within timeout).
func (s *server) run(spec ProcessSpec, timeout time.Duration, ready func() error) error {
	spec.Dir, spec.OutputLimit = s.dir, serviceOutputLimit
	p, err := launchProcess(spec)
	if err != nil {
		return err
	}
	if err := p.WaitReady(timeout, ready); err != nil {
		return err
	}
	s.mu.Lock()
	s.proc = p
	s.mu.Unlock()
	return nil
}

// reserve picks a free loopback port for a server and makes a directory
// for its files.
func reserve(name string) (port int, dir string, err error) {
	if port, err = FreePort(); err != nil {
		return 0, "", err
	}
	dir, err = os.MkdirTemp("", "harness-"+name+"-")
	return port, dir, err
}

// take returns the running process (nil if none) and forgets it.
func (s *server) take() *Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.proc
	s.proc = nil
	return p
}

// Stop shuts the server down with SIGTERM; its files stay for Restart.
func (s *server) Stop() { _ = s.take().Stop(5 * time.Second) }

// Kill ends the server at once with SIGKILL.
func (s *server) Kill() { s.take().Kill() }

// Close kills the server and removes its files.
func (s *server) Close() {
	s.Kill()
	os.RemoveAll(s.dir)
}

// optional is the first of opts, or the zero T: an optional argument.
func optional[T any](opts []T) T {
	var o T
	if len(opts) > 0 {
		o = opts[0]
	}
	return o
}

// started is what StartRedis, StartZooKeeper and StartKafka return: the
// service launched for tb (closed when tb ends), or tb skipped or failed
// (handleStartError) when launching failed.
func started[S interface{ Close() }](tb testing.TB, name string, s S, err error) S {
	tb.Helper()
	if err != nil {
		handleStartError(tb, name, err)
	}
	tb.Cleanup(s.Close)
	return s
}

// runWith is a TestMain body for packages whose tests share one server:
// it launches the server into *s, runs the tests, closes the server and
// returns the exit code. A server that is not installed skips the package
// (or fails it when CI=true).
func runWith[S interface{ Close() }](m *testing.M, name string, s *S, launch func() (S, error)) int {
	launched, err := launch()
	if err != nil {
		return reportLaunchError(name, err)
	}
	defer launched.Close()
	*s = launched
	return m.Run()
}

// SharedRedis is one redis-server for a whole test package, launched by
// its TestMain:
//
//	var redisServer harness.SharedRedis
//	func TestMain(m *testing.M) { redisServer.Main(m) }
//
// Tests take clients of it (TestClient, or EmptyClient for a clean one).
type SharedRedis struct{ *Redis }

// Main runs the package's tests with the server and exits with their
// result; a missing redis-server skips them (fails them when CI=true).
func (s *SharedRedis) Main(m *testing.M) {
	os.Exit(runWith(m, "redis-server", &s.Redis, func() (*Redis, error) { return LaunchRedis(RedisOptions{}) }))
}

// SharedZooKeeper is SharedRedis for ZooKeeper; tests work under node paths
// of their own (Node).
type SharedZooKeeper struct{ *ZooKeeper }

// Main runs the package's tests with the server and exits with their
// result; a missing ZooKeeper skips them (fails them when CI=true).
func (s *SharedZooKeeper) Main(m *testing.M) {
	os.Exit(runWith(m, "zookeeper", &s.ZooKeeper, LaunchZooKeeper))
}

// Node is a client of the server (ZooKeeperClient) and a node path unique
// to this call (UniqueNodePath) followed by leaf.
func (s *SharedZooKeeper) Node(tb testing.TB, leaf string) (*zk.Conn, string) {
	tb.Helper()
	return ZooKeeperClient(tb, s.Addr), UniqueNodePath(tb) + leaf
}
