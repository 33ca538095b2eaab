package logfactory

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// fileLine is the text line of number i; all such lines have one length.
func fileLine(i int) string {
	return fmt.Sprintf("2017-02-01 15:27:48,814 [scrapy-cluster] INFO: line %06d\n", i)
}

var lineLen = int64(len(fileLine(0)))

func newFileLogger(t *testing.T, cfg Config) *Logger {
	t.Helper()
	cfg.Now = fixedClock(textTime)
	l, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// readAll concatenates files.
func readAll(t *testing.T, paths []string) string {
	t.Helper()
	var sb strings.Builder
	for _, p := range paths {
		sb.WriteString(readFile(t, p))
	}
	return sb.String()
}

// linesFrom returns fileLine(from) up to fileLine(to-1), concatenated.
func linesFrom(from, to int) string {
	var sb strings.Builder
	for i := from; i < to; i++ {
		sb.WriteString(fileLine(i))
	}
	return sb.String()
}

// backups lists the rotated files beside main.log, oldest first.
func backups(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.Name() != "main.log" {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(out) // lumberjack names sort by time
	return out
}

func rotations(l *Logger) int {
	rf := l.core.closer.(*rotatingFile)
	rf.mu.Lock()
	defer rf.mu.Unlock()
	return rf.rotations
}

func TestFileOutputCreatesDirAndAnnounces(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "var", "log", "scrapy-cluster")
	l := newFileLogger(t, Config{Dir: dir, File: "kafka_monitor.log", Level: "DEBUG", JSON: true})
	l.Info("hello", Extra{"a": 1})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "kafka_monitor.log")
	l.Flush()
	got := strings.Split(strings.TrimSuffix(readFile(t, path), "\n"), "\n")
	if len(got) != 2 || !strings.Contains(got[0], `"message": "Logging to file: `+path+`"`) || !strings.Contains(got[1], `"message": "hello"`) {
		t.Errorf("file holds %q", got)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm()&0o044 == 0 {
		t.Errorf("log file mode %v is not group/other readable", st.Mode())
	}
}

func TestFileOutputAppendsToAnExistingFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "main.log")
	if err := os.WriteFile(path, []byte("old line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l := newFileLogger(t, Config{Dir: dir})
	l.Info("line 000000")
	l.Close()
	if got := readFile(t, path); got != "old line\n"+fileLine(0) {
		t.Errorf("file = %q", got)
	}
}

func TestFileOutputFailsForAnUnusableDir(t *testing.T) {
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{Dir: filepath.Join(blocker, "logs")}); err == nil {
		t.Errorf("New with a directory under a file succeeded")
	}
}

func TestRotationHappensAtMaxBytes(t *testing.T) {
	dir := t.TempDir()
	l := newFileLogger(t, Config{Dir: dir, MaxBytes: 3 * lineLen, Backups: 5})
	for i := range 3 {
		l.Info(fmt.Sprintf("line %06d", i))
	}
	l.Flush()
	if b := backups(t, dir); len(b) != 0 {
		t.Fatalf("rotated before the file reached MaxBytes: %v", b)
	}
	l.Info("line 000003") // would take the file past MaxBytes
	l.Flush()
	b := backups(t, dir)
	if len(b) != 1 {
		t.Fatalf("backups = %v, want one", b)
	}
	if got, want := readFile(t, b[0]), fileLine(0)+fileLine(1)+fileLine(2); got != want {
		t.Errorf("backup = %q, want %q", got, want)
	}
	if got := readFile(t, filepath.Join(dir, "main.log")); got != fileLine(3) {
		t.Errorf("main.log = %q", got)
	}
	if name := filepath.Base(b[0]); !strings.HasPrefix(name, "main-") || !strings.HasSuffix(name, ".log") {
		t.Errorf("backup name %q is not lumberjack's main-<time>.log", name)
	}
}

func TestRotationCountsTheExistingFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "main.log")
	if err := os.WriteFile(path, []byte(fileLine(0)+fileLine(1)), 0o644); err != nil {
		t.Fatal(err)
	}
	l := newFileLogger(t, Config{Dir: dir, MaxBytes: 3 * lineLen})
	l.Info("line 000002")
	l.Info("line 000003")
	l.Flush()
	b := backups(t, dir)
	if len(b) != 1 || readFile(t, b[0]) != fileLine(0)+fileLine(1)+fileLine(2) || readFile(t, path) != fileLine(3) {
		t.Errorf("backups %v; main.log %q", b, readFile(t, path))
	}
}

// rotateUntil logs numbered lines until the file has rotated n times and
// returns how many lines it wrote.
func rotateUntil(t *testing.T, l *Logger, n int) int {
	t.Helper()
	lines := 0
	deadline := time.Now().Add(10 * time.Second)
	for rotations(l) < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d rotations after %d lines", rotations(l), lines)
		}
		l.Info(fmt.Sprintf("line %06d", lines))
		lines++
	}
	return lines
}

func TestFastRotationsLoseNoLines(t *testing.T) {
	// Many rotations within a millisecond must not give two backups the
	// same name (lumberjack's names have millisecond precision).
	dir := t.TempDir()
	l := newFileLogger(t, Config{Dir: dir, MaxBytes: 2 * lineLen, Backups: 1000})
	n := rotateUntil(t, l, 40)
	l.Flush()
	all := readAll(t, append(backups(t, dir), filepath.Join(dir, "main.log")))
	if want := linesFrom(0, n); all != want {
		t.Errorf("backups and main.log hold %d bytes, want all %d lines (%d bytes) in order", len(all), n, len(want))
	}
}

func TestRotationKeepsBackupsAndLosesNothingInThem(t *testing.T) {
	dir := t.TempDir()
	const keep, pruned = 2, 4
	l := newFileLogger(t, Config{Dir: dir, MaxBytes: 3 * lineLen, Backups: keep})
	n := rotateUntil(t, l, keep+pruned)
	deadline := time.Now().Add(10 * time.Second)
	// lumberjack prunes in the background just after a rotation.
	var b []string
	l.Flush()
	for {
		b = backups(t, dir)
		if len(b) == keep || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if len(b) != keep {
		t.Fatalf("backups = %v, want %d", b, keep)
	}
	// The backups and main.log together hold the newest lines, in order,
	// with no gap: no backup was overwritten by a later one.
	all := readAll(t, append(b, filepath.Join(dir, "main.log")))
	if int64(len(all))%lineLen != 0 || !strings.HasSuffix(all, fileLine(n-1)) {
		t.Fatalf("files do not end with whole lines up to the last one")
	}
	first := n - int(int64(len(all))/lineLen)
	if all != linesFrom(first, n) {
		t.Errorf("kept lines are not lines %d..%d in order", first, n-1)
	}
	if first < 3*pruned {
		t.Errorf("first kept line is %d; %d pruned backups of 3 lines or more should be gone", first, pruned)
	}
}

func TestNegativeMaxBytesOrBackupsNeverRotate(t *testing.T) {
	for _, cfg := range []Config{{MaxBytes: -1}, {MaxBytes: 2 * lineLen, Backups: -1}} {
		dir := t.TempDir()
		cfg.Dir = dir
		l := newFileLogger(t, cfg)
		for i := range 20 {
			l.Info(fmt.Sprintf("line %06d", i))
		}
		l.Flush()
		if b := backups(t, dir); len(b) != 0 {
			t.Errorf("%+v: rotated: %v", cfg, b)
		}
		if got := int64(len(readFile(t, filepath.Join(dir, "main.log")))); got != 20*lineLen {
			t.Errorf("%+v: main.log has %d bytes, want %d", cfg, got, 20*lineLen)
		}
	}
}

func TestCloseClosesTheFile(t *testing.T) {
	dir := t.TempDir()
	l := newFileLogger(t, Config{Dir: dir})
	l.Info("line 000000")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	rf := l.core.closer.(*rotatingFile)
	if _, err := rf.Write([]byte("late\n")); !errors.Is(err, os.ErrClosed) {
		t.Errorf("write after Close: %v, want os.ErrClosed", err)
	}
	l.Flush()
	if got := readFile(t, filepath.Join(dir, "main.log")); got != fileLine(0) {
		t.Errorf("main.log = %q", got)
	}
}

func TestCloseWithoutAFileDoesNothing(t *testing.T) {
	l, _ := newBuffered(t, Config{})
	if err := l.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// Lines to a file are gathered and written together: a WARNING writes
// them at once with itself, Flush does, and so does the clock.
func TestFileLinesAreWrittenTogetherAndSoon(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "main.log")
	l := newFileLogger(t, Config{Dir: dir, Level: "INFO"})
	l.Info("line 000000")
	l.Info("line 000001")
	if got := readFile(t, path); got != "" {
		t.Fatalf("INFO lines written at once: %q", got)
	}
	l.Warning("warn")
	if got := readFile(t, path); !strings.HasPrefix(got, fileLine(0)+fileLine(1)) || !strings.Contains(got, "WARNING: warn") {
		t.Fatalf("a WARNING did not write the lines before it with itself: %q", got)
	}
	l.Info("line 000002")
	deadline := time.Now().Add(5 * time.Second)
	for !strings.HasSuffix(readFile(t, path), fileLine(2)) {
		if time.Now().After(deadline) {
			t.Fatalf("an INFO line still waits %v after it was logged", 5*time.Second)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Lines written together are split between files at line boundaries, as
// lines written one by one are.
func TestLinesWrittenTogetherRotateLineByLine(t *testing.T) {
	dir := t.TempDir()
	l := newFileLogger(t, Config{Dir: dir, MaxBytes: 2 * lineLen, Backups: 10})
	for i := range 5 {
		l.Info(fmt.Sprintf("line %06d", i))
	}
	l.Flush() // one write of five lines
	var got []string
	for _, f := range append(backups(t, dir), filepath.Join(dir, "main.log")) {
		got = append(got, readFile(t, f))
	}
	// Backups are named after the millisecond of their rotation: two
	// within one millisecond are not made (the file grows instead).
	if all := strings.Join(got, ""); all != linesFrom(0, 5) {
		t.Fatalf("files hold %q, want lines 0..4 in order", got)
	}
	for _, f := range got {
		if int64(len(f)) > 2*lineLen && len(got) == 3 {
			t.Errorf("a file holds %d bytes, past MaxBytes %d", len(f), 2*lineLen)
		}
		if len(f)%int(lineLen) != 0 {
			t.Errorf("a file holds a part of a line: %q", f)
		}
	}
}

// Lines to Output are written one Write each, unless Gather is set.
func TestOutputGetsEachLineAtOnceUnlessGathered(t *testing.T) {
	// twoLines logs two lines to a logger on w (gathering them with gather).
	twoLines := func(w *countingWriter, gather bool) *Logger {
		l, err := New(Config{Output: w, Gather: gather})
		if err != nil {
			t.Fatal(err)
		}
		l.Info("a")
		l.Info("b")
		return l
	}
	var w countingWriter
	twoLines(&w, false)
	if w.writes != 2 {
		t.Fatalf("%d writes for two lines, want 2", w.writes)
	}
	var g countingWriter
	l := twoLines(&g, true)
	if g.writes != 0 {
		t.Fatalf("gathered lines written at once (%d writes)", g.writes)
	}
	l.Flush()
	if g.writes != 1 || strings.Count(g.buf.String(), "\n") != 2 {
		t.Fatalf("%d writes of %q, want one of both lines", g.writes, g.buf.String())
	}
}

type countingWriter struct {
	writes int
	buf    strings.Builder
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.writes++
	return c.buf.Write(p)
}

// While a batch of gathered lines is being written, other goroutines log
// without waiting for it; the next batch follows it, in order, and Flush
// returns only once both are written.
func TestGatheredLinesAreLoggedWhileABatchIsWritten(t *testing.T) {
	w := &blockingWriter{entered: make(chan struct{}), release: make(chan struct{})}
	l, err := New(Config{Output: w, Gather: true})
	if err != nil {
		t.Fatal(err)
	}
	warned := make(chan struct{})
	go func() {
		defer close(warned)
		l.Warning("first batch") // written at once: blocks in Write
	}()
	<-w.entered
	logged := make(chan struct{})
	go func() {
		defer close(logged)
		l.Info("second batch")
	}()
	select {
	case <-logged:
	case <-time.After(30 * time.Second):
		t.Fatal("an INFO line waited for the write of the batch before it")
	}
	flushed := make(chan struct{})
	go func() {
		defer close(flushed)
		l.Flush()
	}()
	close(w.release)
	<-warned
	<-flushed
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.buf.String()
	first, second := strings.Index(out, "first batch"), strings.Index(out, "second batch")
	if w.writes != 2 || first < 0 || second < first || strings.Count(out, "\n") != 2 {
		t.Fatalf("%d writes of %q, want the first batch then the second", w.writes, out)
	}
}

// blockingWriter's first Write waits until release is closed.
type blockingWriter struct {
	entered, release chan struct{}
	mu               sync.Mutex
	writes           int
	buf              strings.Builder
}

func (b *blockingWriter) Write(p []byte) (int, error) {
	b.mu.Lock()
	b.writes++
	first := b.writes == 1
	b.mu.Unlock()
	if first {
		close(b.entered)
		<-b.release
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}
