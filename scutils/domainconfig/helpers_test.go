package domainconfig_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/domainconfig"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
)

// zkServer is one ZooKeeper server shared by the tests that do not stop it;
// each test works under its own path. Redis is started per test (it starts
// in milliseconds).
var zkServer harness.SharedZooKeeper

func TestMain(m *testing.M) { zkServer.Main(m) }

// nodePath is a document path unique to this test run (-count may repeat a
// test against the same server), nested to exercise parent creation.
func nodePath(t *testing.T) string { return harness.UniqueNodePath(t) + "/crawler/all" }

// zkStore is a store with its own connection, closed when the test ends.
func zkStore(t *testing.T, addr, path string) *domainconfig.ZooKeeperStore {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := domainconfig.DialZooKeeper(ctx, []string{addr}, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// zkData returns the node's data, failing the test if it is missing.
func zkData(t *testing.T, conn *zk.Conn, path string) string {
	t.Helper()
	data, _, err := conn.Get(path)
	if err != nil {
		t.Fatalf("get %s: %v", path, err)
	}
	return string(data)
}

// testContext is a context that ends with the test or after a generous
// deadline, whichever comes first.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// waitFor polls cond until it holds or 30 s pass (generous: the test machine
// may be busy).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	harness.WaitFor(t, what, 30*time.Second, cond)
}

// testLogger returns a DEBUG logger writing into the returned buffer.
func testLogger(t *testing.T) (*logfactory.Logger, *harness.OutputBuffer) {
	t.Helper()
	out := &harness.OutputBuffer{}
	log := harness.Logger(t, logfactory.Config{Level: "DEBUG", IncludeExtra: true}, out)
	t.Cleanup(func() { log.Close() })
	return log, out
}

// recorder keeps the documents a watcher delivered, marshaled.
type recorder struct {
	mu   sync.Mutex
	docs []string
}

func (r *recorder) record(d domainconfig.Document) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.docs = append(r.docs, string(d.Marshal()))
}

func (r *recorder) snapshot() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.docs...)
}

// last reports whether the latest delivery is want.
func (r *recorder) last(want string) func() bool {
	return func() bool {
		d := r.snapshot()
		return len(d) > 0 && d[len(d)-1] == want
	}
}
