package opscheck_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
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

var build struct {
	once sync.Once
	dir  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if build.dir != "" {
		os.RemoveAll(build.dir)
	}
	os.Exit(code)
}

// repoRoot is the workspace root: the directory holding go.work above this
// package.
func repoRoot(tb testing.TB) string {
	tb.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Fatal("no go.work above the test's directory")
		}
		dir = parent
	}
}

// binDir builds every binary of binaryPackages once per test binary, with a
// normal build even under -race, and returns the directory holding them.
func binDir(tb testing.TB) string {
	tb.Helper()
	root := repoRoot(tb)
	build.once.Do(func() {
		build.dir, build.err = os.MkdirTemp("", "opscheck-bin-")
		if build.err != nil {
			return
		}
		args := []string{"build", "-o", build.dir + string(filepath.Separator)}
		for _, pkg := range binaryPackages {
			args = append(args, pkg)
		}
		cmd := exec.Command("go", args...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			build.err = fmt.Errorf("go %v: %w\n%s", args, err, out)
		}
	})
	if build.err != nil {
		tb.Fatal(build.err)
	}
	return build.dir
}

// binary returns the path of one built binary.
func binary(tb testing.TB, name string) string {
	tb.Helper()
	p := filepath.Join(binDir(tb), name)
	if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
		tb.Fatalf("binary %s was not built", name)
	}
	return p
}
