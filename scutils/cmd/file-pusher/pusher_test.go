package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/zkwatch"
)

var shared harness.SharedZooKeeper

func TestMain(m *testing.M) { shared.Main(m) }

// base is a node path unique to the test run (-count may repeat a test
// against the same server), ending with /; call it once per test.
func base(t *testing.T) string { return harness.UniqueNodePath(t) + "/" }

// clientAndBase is a client of the shared server and a base path as base(t).
func clientAndBase(t *testing.T) (*zk.Conn, string) {
	t.Helper()
	return shared.Node(t, "/")
}

func writeFile(t *testing.T, name, contents string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(contents), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// pusher runs the command and returns its exit status and output.
func pusher(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// get returns the node's data; exists is false when there is no node.
// mustPush runs file-pusher with args and fails the test unless it exits 0.
func mustPush(t *testing.T, args ...string) {
	t.Helper()
	if code, out, errOut := pusher(t, args...); code != 0 {
		t.Fatalf("file-pusher %q: exit %d, stdout %q, stderr %q", args, code, out, errOut)
	}
}

func get(t *testing.T, conn *zk.Conn, path string) (data []byte, exists bool) {
	t.Helper()
	data, _, err := conn.Get(path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, false
	}
	if err != nil {
		t.Fatalf("get %s: %v", path, err)
	}
	return data, true
}

const exampleYAML = `blacklist:
  - bad-domain.com
domains:
  dmoztools.net:
    window: 60
    hits: 10
    scale: 0.5
`

func TestPushCreatesTheNodeWithItsParentsThenUpdatesIt(t *testing.T) {
	c := harness.ZooKeeperClient(t, shared.Addr)
	p := base(t) + "crawler/"
	file := writeFile(t, "example.yml", exampleYAML)

	code, out, errOut := pusher(t, "-f", file, "-z", shared.Addr, "-p", p, "-i", "myconfig")
	if code != 0 || !strings.Contains(out, "creating conf node "+p+"myconfig") {
		t.Fatalf("first push: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if data, _ := get(t, c, p+"myconfig"); string(data) != exampleYAML {
		t.Fatalf("node holds %q, want the file", data)
	}

	if err := os.WriteFile(file, []byte("domains: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = pusher(t, "--file", file, "--zoo-keeper", shared.Addr, "--path", p, "--id", "myconfig")
	if code != 0 || !strings.Contains(out, "updating conf file "+p+"myconfig") {
		t.Fatalf("second push: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if data, _ := get(t, c, p+"myconfig"); string(data) != "domains: {}\n" {
		t.Fatalf("node holds %q after the update", data)
	}
}

func TestDefaultsPushToScrapyClusterCrawlerAll(t *testing.T) {
	c := harness.ZooKeeperClient(t, shared.Addr)
	file := writeFile(t, "example.yml", exampleYAML)
	mustPush(t, "-f", file, "-z", shared.Addr)
	if data, _ := get(t, c, "/scrapy-cluster/crawler/all"); string(data) != exampleYAML {
		t.Fatalf("/scrapy-cluster/crawler/all holds %q", data)
	}
}

func TestWipeEmptiesTheNodeAndKeepsIt(t *testing.T) {
	c, p := clientAndBase(t)
	file := writeFile(t, "example.yml", exampleYAML)
	mustPush(t, "-f", file, "-z", shared.Addr, "-p", p)

	code, out, errOut := pusher(t, "-w", "-z", shared.Addr, "-p", p)
	if code != 0 || !strings.Contains(out, "wiped conf node "+p+"all") {
		t.Fatalf("wipe: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	data, exists := get(t, c, p+"all")
	if !exists || data == nil || len(data) != 0 {
		t.Fatalf("after wipe: exists=%v data=%#v; want an empty (not null) node", exists, data)
	}

	code, out, _ = pusher(t, "--wipe", "-z", shared.Addr, "-p", p, "-i", "never-pushed")
	if code != 0 || !strings.Contains(out, "nothing to wipe") {
		t.Fatalf("wipe of a missing node: exit %d, stdout %q", code, out)
	}
	if _, exists := get(t, c, p+"never-pushed"); exists {
		t.Fatal("wipe created the missing node")
	}
}

func TestAWatcherSeesPushesAndWipes(t *testing.T) {
	p := base(t)
	configs := make(chan string, 10)
	w, err := zkwatch.New(context.Background(), zkwatch.Config{
		Hosts: []string{shared.Addr}, Path: p + "all", Ensure: true, ValidInit: true,
		OnConfig: func(s string) { configs <- s },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	next := func() string {
		select {
		case s := <-configs:
			return s
		case <-time.After(30 * time.Second):
			t.Fatal("no configuration delivered within 30 s")
			return ""
		}
	}
	file := writeFile(t, "example.yml", exampleYAML)
	mustPush(t, "-f", file, "-z", shared.Addr, "-p", p)
	if got := next(); got != exampleYAML {
		t.Fatalf("watcher got %q after the push", got)
	}
	mustPush(t, "-w", "-z", shared.Addr, "-p", p)
	if got := next(); got != "" {
		t.Fatalf("watcher got %q after the wipe, want empty", got)
	}
}

func TestBadInputGetsAClearErrorAndANonZeroExit(t *testing.T) {
	c, p := clientAndBase(t)
	good := writeFile(t, "good.yml", exampleYAML)
	port := harness.Port(t)
	dead := fmt.Sprintf("127.0.0.1:%d", port)

	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"without --zoo-keeper", []string{"-f", good}, exitUsage, "--zoo-keeper is required"},
		{"without --file or --wipe", []string{"-z", shared.Addr, "-p", p}, exitUsage, "--file is required"},
		{"with an unknown flag", []string{"-z", shared.Addr, "-f", good, "--frobnicate"}, exitUsage, "unknown flag"},
		{"with a stray argument", []string{"-z", shared.Addr, "-f", good, "extra"}, exitUsage, "unknown command"},
		{"with a relative path", []string{"-z", shared.Addr, "-f", good, "-p", "relative/"}, exitUsage, "does not start with /"},
		{"with an empty id", []string{"-z", shared.Addr, "-f", good, "-p", p, "-i", ""}, exitUsage, "--id must not be empty"},
		{"with a missing file", []string{"-z", shared.Addr, "-p", p, "-f", filepath.Join(t.TempDir(), "nope.yml")}, exitError, "read the configuration file"},
		{"with broken YAML", []string{"-z", shared.Addr, "-p", p, "-f", writeFile(t, "bad.yml", "domains: [unclosed\n")}, exitError, "not valid YAML"},
		{"with tabs for indentation", []string{"-z", shared.Addr, "-p", p, "-f", writeFile(t, "tabs.yml", "domains:\n\tx.com:\n\t\thits: 1\n")}, exitError, "not valid YAML"},
		{"with two YAML documents", []string{"-z", shared.Addr, "-p", p, "-f", writeFile(t, "two.yml", "a: 1\n---\nb: 2\n")}, exitError, "more than one YAML document"},
		{"with a file too big for ZooKeeper", []string{"-z", shared.Addr, "-p", p, "-f", writeFile(t, "big.yml", "# "+strings.Repeat("x", 1<<20)+"\n")}, exitError, "at most about 1 MiB"},
		{"with ZooKeeper unreachable", []string{"-z", dead, "-p", p, "-f", good, "--timeout", "1s"}, exitError, "connect to ZooKeeper " + dead + ": context deadline exceeded (last error: failed to connect to " + dead},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := pusher(t, tc.args...)
			if code != tc.wantCode || !strings.Contains(errOut, tc.wantErr) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, errOut, tc.wantCode, tc.wantErr)
			}
			if out != "" {
				t.Errorf("stdout %q, want nothing", out)
			}
		})
	}
	if _, exists := get(t, c, p+"all"); exists {
		t.Error("a failed run created the node")
	}
}

func TestNoValidatePushesAnyText(t *testing.T) {
	c, p := clientAndBase(t)
	text := "domains: [not yaml\n"
	file := writeFile(t, "raw.txt", text)
	mustPush(t, "-f", file, "-z", shared.Addr, "-p", p, "--no-validate")
	if data, _ := get(t, c, p+"all"); string(data) != text {
		t.Fatalf("node holds %q", data)
	}
}

func TestPathWithoutTrailingSlashIsJoinedAsWrittenWithANote(t *testing.T) {
	c := harness.ZooKeeperClient(t, shared.Addr)
	p := strings.TrimSuffix(base(t), "/")
	file := writeFile(t, "pointer.txt", "/tmp/myconfig\n")
	code, _, errOut := pusher(t, "-f", file, "-z", shared.Addr, "-p", p, "-i", "pointer1")
	if code != 0 || !strings.Contains(errOut, "does not end with /") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if data, _ := get(t, c, p+"pointer1"); string(data) != "/tmp/myconfig\n" {
		t.Fatalf("node %s holds %q", p+"pointer1", data)
	}
}

func TestHelpExplainsEveryFlagAndItsDefault(t *testing.T) {
	code, out, errOut := pusher(t, "--help")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{
		"-f, --file", "-i, --id", `(default "all")`, "-p, --path", `(default "/scrapy-cluster/crawler/")`,
		"-w, --wipe", "-z, --zoo-keeper", "--no-validate", "--timeout", "(default 15s)",
		"ZOOKEEPER_ASSIGN_PATH", "Exit status",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("help lacks %q:\n%s", want, out)
		}
	}
}
