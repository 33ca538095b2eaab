package harness_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/segmentio/kafka-go"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

func TestRedisKeepsAppendOnlyDataAcrossRestart(t *testing.T) {
	r := harness.StartRedis(t, harness.RedisOptions{AppendOnly: true})
	ctx := context.Background()
	c := r.TestClient(t)
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := r.Restart(); err != nil {
		t.Fatal(err)
	}
	got, err := c.Get(ctx, "k").Result()
	if err != nil || got != "v" {
		t.Fatalf("after restart got %q, %v; want v", got, err)
	}
}

func TestRedisKillMakesItUnreachable(t *testing.T) {
	r := harness.StartRedis(t)
	c := r.TestClient(t)
	r.Kill()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("PING succeeded against a killed server")
	}
}

func TestZooKeeperKeepsDataAcrossRestart(t *testing.T) {
	z := harness.StartZooKeeper(t)
	conn, _, err := zk.Connect([]string{z.Addr}, 2*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Create("/harness", []byte("hello"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if err := z.Restart(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		data, _, err := conn.Get("/harness")
		if err == nil {
			if string(data) != "hello" {
				t.Fatalf("got %q, want hello", data)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("node unreadable after restart: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestKafkaRoundTripsAMessageWithKafkaGo(t *testing.T) {
	k := harness.StartKafka(t, harness.KafkaOptions{Topics: []string{"demo.test"}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	w := &kafka.Writer{Addr: kafka.TCP(k.Addrs...), Topic: "demo.test", BatchTimeout: time.Millisecond}
	defer w.Close()
	if err := w.WriteMessages(ctx, kafka.Message{Value: []byte(`{"hello":1}`)}); err != nil {
		t.Fatal(err)
	}
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: k.Addrs, Topic: "demo.test", Partition: 0, MaxWait: 50 * time.Millisecond})
	defer r.Close()
	m, err := r.ReadMessage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Value) != `{"hello":1}` {
		t.Fatalf("got %s", m.Value)
	}
}

// recorder is a testing.TB that records failures and cleanups instead of
// acting on them, to test what the harness reports.
type recorder struct {
	testing.TB
	errors   []string
	logs     []string
	cleanups []func()
}

func (r *recorder) Helper()                 {}
func (r *recorder) Cleanup(f func())        { r.cleanups = append(r.cleanups, f) }
func (r *recorder) Error(args ...any)       { r.errors = append(r.errors, fmt.Sprint(args...)) }
func (r *recorder) Failed() bool            { return len(r.errors) > 0 }
func (r *recorder) Logf(f string, a ...any) { r.logs = append(r.logs, fmt.Sprintf(f, a...)) }
func (r *recorder) Errorf(f string, a ...any) {
	r.errors = append(r.errors, fmt.Sprintf(f, a...))
}
func (r *recorder) Fatalf(f string, a ...any) {
	r.Errorf(f, a...)
	panic(r)
}

// end runs the cleanups as the end of a test does.
func (r *recorder) end() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

func shell(script string) harness.ProcessSpec {
	return harness.ProcessSpec{Name: "sh", Path: "/bin/sh", Args: []string{"-c", script}}
}

func TestAProcessStoppedWithSIGTERMReportsItsExitAndKeepsItsOutput(t *testing.T) {
	p := harness.StartProcess(t, shell(`trap 'echo draining; exit 3' TERM; echo started; while :; do sleep 0.01; done`))
	harness.WaitFor(t, "the start line", 10*time.Second, func() bool { return p.Output().Contains("started") })
	err := p.Stop(10 * time.Second)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || p.ExitCode() != 3 {
		t.Fatalf("Stop = %v, exit code %d; want exit status 3", err, p.ExitCode())
	}
	// The group's SIGTERM ends the shell's sleep too, which it may mention.
	if got := p.Output().String(); !strings.HasPrefix(got, "started\n") || !strings.HasSuffix(got, "draining\n") {
		t.Errorf("output %q, want the start line and the drain line", got)
	}
}

func TestAProcessThatIgnoresSIGTERMIsKilledAfterItsGrace(t *testing.T) {
	p := harness.StartProcess(t, shell(`trap '' TERM; echo started; while :; do sleep 0.01; done`))
	harness.WaitFor(t, "the start line", 10*time.Second, func() bool { return p.Output().Contains("started") })
	if err := p.Stop(100 * time.Millisecond); !errors.Is(err, harness.ErrStillRunning) {
		t.Fatalf("Stop = %v, want ErrStillRunning", err)
	}
	if !p.Exited() || p.ExitCode() != -1 {
		t.Errorf("after Stop: exited %v, exit code %d; want killed", p.Exited(), p.ExitCode())
	}
}

func TestASupervisedProcessFailsTheTestWhenItEndsByItselfOrOutlivesItsGrace(t *testing.T) {
	cases := []struct {
		name, script string
		exits        bool // ends by itself at once
		kill         bool // the test kills it
		wantError    string
	}{
		{"an early exit is an error", `echo bye; exit 4`, true, false, "sh exited by itself: exit status 4"},
		{"a process the test killed is no error", `while :; do sleep 0.01; done`, false, true, ""},
		{"a process that drains on SIGTERM is no error", `trap 'exit 0' TERM; while :; do sleep 0.01; done`, false, false, ""},
		{"a process that outlives its grace is an error", `trap '' TERM; while :; do sleep 0.01; done`, false, false,
			"sh still running after SIGTERM (200ms); killed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{TB: t}
			spec := shell(tc.script)
			spec.Dir, spec.Supervise, spec.StopGrace = t.TempDir(), true, 200*time.Millisecond
			p := harness.StartProcess(rec, spec)
			switch {
			case tc.exits:
				<-p.Done()
			case tc.kill:
				p.Kill()
			default:
				time.Sleep(100 * time.Millisecond) // the shell sets its trap
			}
			rec.end()
			if got := strings.Join(rec.errors, "\n"); got != tc.wantError {
				t.Errorf("errors %q, want %q", got, tc.wantError)
			}
			if tc.exits && (len(rec.logs) != 1 || !strings.Contains(rec.logs[0], "bye")) {
				t.Errorf("logs %q, want the output", rec.logs)
			}
			if !p.Exited() {
				t.Error("the process still runs after the test")
			}
		})
	}
}

func TestAProcessCanWriteItsStreamsToWritersOfItsOwn(t *testing.T) {
	var stdout, stderr harness.OutputBuffer
	spec := shell(`echo out; echo err >&2`)
	spec.Stdout, spec.Stderr, spec.Env = &stdout, &stderr, []string{"PATH=/usr/bin:/bin"}
	p := harness.StartProcess(t, spec)
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if stdout.String() != "out\n" || stderr.String() != "err\n" || p.Output().String() != "" {
		t.Errorf("stdout %q, stderr %q, output %q", stdout.String(), stderr.String(), p.Output().String())
	}
}

func TestWaitForFailsWithWhatItWaitedFor(t *testing.T) {
	calls := 0
	harness.WaitFor(t, "the third call", 10*time.Second, func() bool { calls++; return calls == 3 })
	rec := &recorder{TB: t}
	func() {
		defer func() { _ = recover() }()
		harness.WaitFor(rec, "nothing", 50*time.Millisecond, func() bool { return false })
	}()
	if want := "timed out after 50ms waiting for nothing"; len(rec.errors) != 1 || rec.errors[0] != want {
		t.Errorf("errors %q, want %q", rec.errors, want)
	}
}

func TestBinariesAreBuiltOnceFromTheWorkspaceRoot(t *testing.T) {
	var bins harness.Binaries
	bins.Packages = []string{"./scutils/cmd/file-pusher"}
	defer bins.Remove()
	path := bins.Path(t, "file-pusher")
	if again := bins.Path(t, "file-pusher"); again != path {
		t.Errorf("second Path %s, want %s", again, path)
	}
	out, err := exec.Command(path, "--help").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "file-pusher") {
		t.Fatalf("%s --help: %v\n%s", path, err, out)
	}
	bins.Remove()
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after Remove: %v", err)
	}
}

func TestFreePortsComeFromBelowTheEphemeralRangeAndCanBeListenedOn(t *testing.T) {
	raw, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		t.Skipf("no ephemeral range to compare with: %v", err)
	}
	var low, high int
	if _, err := fmt.Sscan(string(raw), &low, &high); err != nil {
		t.Fatalf("ip_local_port_range %q: %v", raw, err)
	}
	for range 20 {
		port, err := harness.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if port >= low && low > 10000 {
			t.Errorf("port %d is in the ephemeral range %d-%d", port, low, high)
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			t.Fatalf("listen on the free port %d: %v", port, err)
		}
		l.Close()
	}
}

func TestDistinctCountMatchesAcceptsOneMergedPairOnly(t *testing.T) {
	for _, c := range []struct {
		got, want int64
		match     bool
	}{
		{11, 11, true}, {10, 11, true}, {9, 11, false}, {12, 11, false},
		{0, 1, false}, {1, 1, true}, {0, 0, true},
	} {
		if harness.DistinctCountMatches(c.got, c.want) != c.match {
			t.Errorf("DistinctCountMatches(%d, %d) = %v", c.got, c.want, !c.match)
		}
	}
}
