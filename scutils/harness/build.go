package harness

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// WorkspaceRoot is the directory holding the go.work above the current
// directory (a test's package directory).
func WorkspaceRoot() (string, error) {
	dir, err := filepath.Abs(".")
	if err != nil {
		return "", fmt.Errorf("find the workspace root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("find the workspace root: no go.work above the current directory")
		}
		dir = parent
	}
}

// Root is WorkspaceRoot for a test: it fails tb when there is no go.work
// above the test's directory.
func Root(tb testing.TB) string {
	tb.Helper()
	return must(tb, WorkspaceRoot)
}

// BuildBinaries builds the main packages into a temporary directory of tb
// (removed when tb ends) and returns the directory; the binaries are named
// as go build names them (the last element of each package path). A
// package is a path from the workspace root ("./crawler/cmd/crawler") or an
// import path. It is a normal build with the go on PATH, even when the tests
// run with -race; a failed build fails tb.
func BuildBinaries(tb testing.TB, packages ...string) string {
	tb.Helper()
	dir := tb.TempDir()
	if err := buildInto(dir, packages); err != nil {
		tb.Fatal(err)
	}
	return dir
}

// Binaries are main packages built at most once per test binary, the first
// time a test needs one, for the packages whose tests run the binaries.
// Run the tests with Main from TestMain, which removes them afterwards:
//
//	var bins = harness.Binaries{Packages: []string{"./crawler/cmd/crawler"}}
//
//	func TestMain(m *testing.M) { bins.Main(m) }
type Binaries struct {
	// Packages are the main packages, as BuildBinaries takes them.
	Packages []string

	once sync.Once
	dir  string
	err  error
}

// Dir builds the binaries the first time and returns the directory holding
// them; a failed build fails tb (every time it is asked).
func (b *Binaries) Dir(tb testing.TB) string {
	tb.Helper()
	b.once.Do(func() {
		b.dir, b.err = os.MkdirTemp("", "harness-bin-")
		if b.err == nil {
			b.err = buildInto(b.dir, b.Packages)
		}
	})
	if b.err != nil {
		tb.Fatal(b.err)
	}
	return b.dir
}

// Path is the path of the binary name, built by Dir.
func (b *Binaries) Path(tb testing.TB, name string) string {
	tb.Helper()
	p := filepath.Join(b.Dir(tb), name)
	if _, err := os.Stat(p); err != nil {
		tb.Fatalf("binary %s was not built: %v", name, err)
	}
	return p
}

// Remove deletes the built binaries.
func (b *Binaries) Remove() {
	if b.dir != "" {
		os.RemoveAll(b.dir)
	}
}

// Main is a TestMain: it runs the tests, removes the binaries they built
// and exits with the tests' result.
func (b *Binaries) Main(m *testing.M) {
	code := m.Run()
	b.Remove()
	os.Exit(code)
}

// buildInto runs go build from the workspace root with packages, writing
// the binaries into dir.
func buildInto(dir string, packages []string) error {
	root, err := WorkspaceRoot()
	if err != nil {
		return err
	}
	cmd := exec.Command("go", append([]string{"build", "-o", dir + string(filepath.Separator)}, packages...)...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %v: %w\n%s", packages, err, out)
	}
	return nil
}
