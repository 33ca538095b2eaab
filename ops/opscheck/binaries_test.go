package opscheck_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

// binaryPackages are the main packages the tests run, by binary name.
var binaryPackages = map[string]string{
	"kafka-monitor": "./kafka-monitor/cmd/kafka-monitor",
	"kafkadump":     "./kafka-monitor/cmd/kafkadump",
	"redis-monitor": "./redis-monitor/cmd/redis-monitor",
	"crawler":       "./crawler/cmd/crawler",
	"rest":          "./rest/cmd/rest",
	"testsite":      "./crawler/cmd/testsite",
	"file-pusher":   "./scutils/cmd/file-pusher",
	"local-cluster": "./ops/cmd/local-cluster",
}

// bins are the binaries of binaryPackages, built once per test binary.
var bins = harness.Binaries{Packages: slices.Sorted(maps.Values(binaryPackages))}

func TestMain(m *testing.M) { bins.Main(m) }

// binDir builds every binary of binaryPackages once per test binary, with a
// normal build even under -race, and returns the directory holding them.
func binDir(tb testing.TB) string {
	tb.Helper()
	return bins.Dir(tb)
}

// binary returns the path of one built binary.
func binary(tb testing.TB, name string) string {
	tb.Helper()
	return bins.Path(tb, name)
}
