package harness

import (
	"context"
	"fmt"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/zkwatch"
)

// ZooKeeperClient is a plain ZooKeeper client of the server at addr (a
// ZooKeeper's Addr, or a proxy in front of it), connected with a session
// and closed when tb ends: what a test inspects and changes nodes with. It
// fails tb if no session is established within 30 s.
func ZooKeeperClient(tb testing.TB, addr string) *zk.Conn {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := zkwatch.Dial(ctx, []string{addr}, 10*time.Second, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(conn.Close)
	return conn
}

// nodeSeq numbers the paths UniqueNodePath hands out.
var nodeSeq atomic.Int64

// notInNodeName is what a test's name may hold that a node name should not.
var notInNodeName = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// UniqueNodePath is a ZooKeeper node path ("/<test name>-<n>", no trailing
// slash) unique to this call, so tests sharing a server, and a test repeated
// by -count, each work under a path of their own.
func UniqueNodePath(tb testing.TB) string {
	return fmt.Sprintf("/%s-%d", notInNodeName.ReplaceAllString(tb.Name(), "_"), nodeSeq.Add(1))
}
