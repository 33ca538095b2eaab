package plugintest

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

// shared is the redis-server Main runs a package's tests with.
var shared harness.SharedRedis

// Main is a plugin test package's TestMain: it runs the tests with one
// redis-server they share (harness.SharedRedis), which Redis and
// EmptyRedis hand out, and exits with their result.
//
//	func TestMain(m *testing.M) { plugintest.Main(m) }
func Main(m *testing.M) { shared.Main(m) }

// Redis returns a client of the server Main started, closed when t ends.
// The package's tests share the server; a test that needs it empty uses
// EmptyRedis.
func Redis(t testing.TB) *redis.Client {
	t.Helper()
	return server(t).TestClient(t)
}

// EmptyRedis empties the server Main started (FLUSHALL) and returns a
// client of it: a clean Redis for one test.
func EmptyRedis(t testing.TB) *redis.Client {
	t.Helper()
	return server(t).EmptyClient(t)
}

func server(t testing.TB) *harness.Redis {
	t.Helper()
	if shared.Redis == nil {
		t.Fatal("plugintest needs plugintest.Main as the package's TestMain")
	}
	return shared.Redis
}
