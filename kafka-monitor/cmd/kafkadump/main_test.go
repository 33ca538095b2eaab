package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/kafkaclient"
)

const firehose = "demo.crawled_firehose"

// TestMain lets a test run this binary as kafkadump itself (see start), so
// exit codes and signals are tested on a real process.
func TestMain(m *testing.M) {
	if os.Getenv("KAFKADUMP_TEST_RUN_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// run executes newRoot with args in this process.
func run(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	root := newRoot()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err = root.ExecuteContext(ctx)
	return out.String(), errOut.String(), err
}

func startKafka(t *testing.T, partitions int32) (*harness.Kafka, func(partition int, values ...string)) {
	t.Helper()
	k := harness.StartKafka(t, harness.KafkaOptions{Topics: []string{firehose}, Partitions: partitions})
	cfg := kafkaclient.Config{Brokers: k.Addrs, ConnTimeout: 5 * time.Second, MaxRequestBytes: 1 << 20}
	return k, harness.PartitionWriter(t, cfg, firehose)
}

func TestHelpExplainsEveryFlag(t *testing.T) {
	for _, path := range [][]string{{}, {"list"}, {"dump"}} {
		t.Run(strings.Join(append([]string{"kafkadump"}, path...), " "), func(t *testing.T) {
			out, _, err := run(t, append(path, "--help")...)
			if err != nil {
				t.Fatal(err)
			}
			cmd, _, err := newRoot().Find(path)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out, "Examples:") {
				t.Errorf("help has no examples:\n%s", out)
			}
			check := func(f *pflag.Flag) {
				if f.Name == "help" || f.Name == "version" {
					return
				}
				if !strings.Contains(out, "--"+f.Name) || len(f.Usage) < 20 {
					t.Errorf("flag --%s is not explained in the help:\n%s", f.Name, out)
				}
			}
			cmd.LocalFlags().VisitAll(check)
			cmd.InheritedFlags().VisitAll(check)
		})
	}
}

func TestHelpKeepsTheOriginalsShortFlags(t *testing.T) {
	out, _, err := run(t, "dump", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"-t, --topic", "-c, --consumer", "-b, --from-beginning", "-n, --number", "-p, --pretty", "-d, --decode-base64", "--no-body", "--just-body", "-s, --settings", "--kafka-host"} {
		if !strings.Contains(out, want) {
			t.Errorf("dump help lacks %q", want)
		}
	}
}

func TestKafkaHostFlagSetsKafkaHosts(t *testing.T) {
	out, _, err := run(t, "settings", "--kafka-host", "kafka1:9092,kafka2:9092")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"KAFKA_HOSTS: kafka1:9092,kafka2:9092  # flag", "LOG_FILE: kafkadump.log  # default"} {
		if !strings.Contains(out, want) {
			t.Errorf("settings output lacks %q:\n%s", want, out)
		}
	}
}

func TestListPrintsTheTopics(t *testing.T) {
	k, _ := startKafka(t, 2)
	out, _, err := run(t, "list", "--kafka-host", k.Hosts())
	if err != nil {
		t.Fatal(err)
	}
	if want := "Topics:\n- " + firehose + "\n"; out != want {
		t.Errorf("list printed %q, want %q", out, want)
	}
	out, _, err = run(t, "list", "--partitions", "--set", "KAFKA_HOSTS="+k.Hosts())
	if err != nil {
		t.Fatal(err)
	}
	if want := "Topics:\n- " + firehose + " (2 partitions)\n"; out != want {
		t.Errorf("list --partitions printed %q, want %q", out, want)
	}
}

func TestDumpPrintsMessages(t *testing.T) {
	k, produce := startKafka(t, 2)
	page := base64.StdEncoding.EncodeToString([]byte("<html>hi</html>"))
	produce(0, `{"url": "http://a.example", "n": 1}`, `{"url": "http://b.example", "body": "`+page+`"}`)
	produce(1, `plain text, not JSON`)

	tests := []struct {
		name  string
		args  []string
		lines []string // expected in any order across partitions; in order within one
	}{
		{"as compact JSON lines and text", []string{"-n", "3"},
			[]string{`{"url":"http://a.example","n":1}`, `{"url":"http://b.example","body":"` + page + `"}`, `plain text, not JSON`}},
		{"pretty-printed", []string{"--number=3", "--pretty"},
			[]string{"{\n    \"url\": \"http://a.example\",\n    \"n\": 1\n}", "{\n    \"url\": \"http://b.example\",\n    \"body\": \"" + page + "\"\n}", `plain text, not JSON`}},
		{"with the base64 body decoded", []string{"-n3", "-d"},
			[]string{`{"url":"http://a.example","n":1}`, `{"url":"http://b.example","body":"<html>hi</html>"}`, `plain text, not JSON`}},
		{"pretty and decoded", []string{"-n", "3", "-pd"},
			[]string{"{\n    \"url\": \"http://a.example\",\n    \"n\": 1\n}", "{\n    \"url\": \"http://b.example\",\n    \"body\": \"<html>hi</html>\"\n}", `plain text, not JSON`}},
		{"without bodies", []string{"-n", "3", "--no-body"},
			[]string{`{"url":"http://a.example","n":1}`, `{"url":"http://b.example"}`, `plain text, not JSON`}},
		{"just the decoded body", []string{"-n", "3", "-d", "--just-body"},
			[]string{`<html>hi</html>`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"dump", "-t", firehose, "-b", "--kafka-host", k.Hosts()}, tt.args...)
			out, errOut, err := run(t, args...)
			if err != nil {
				t.Fatalf("%v\nstderr:\n%s", err, errOut)
			}
			rest := out
			for _, want := range tt.lines {
				if !strings.Contains(rest, want+"\n") {
					t.Fatalf("output lacks %q:\n%s", want, out)
				}
				rest = strings.Replace(rest, want+"\n", "", 1)
			}
			if rest != "" {
				t.Errorf("output has more than the messages: %q", rest)
			}
			if strings.Index(out, "a.example") > strings.Index(out, "b.example") {
				t.Errorf("messages of one partition out of order:\n%s", out)
			}
			if !strings.Contains(errOut, "Num Records: 3") {
				t.Errorf("stderr lacks the summary:\n%s", errOut)
			}
		})
	}
}

func TestBadUsageIsRefused(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"dump without a topic", []string{"dump"}, `required flag(s) "topic" not set`},
		{"an unknown flag", []string{"dump", "-t", firehose, "--tail"}, "unknown flag"},
		{"a number that is not a number", []string{"dump", "-t", firehose, "-n", "ten"}, "invalid argument"},
		{"a negative number", []string{"dump", "-t", firehose, "-n", "-1"}, "negative"},
		{"pretty with just-body", []string{"dump", "-t", firehose, "-p", "--just-body"}, "none of the others can be"},
		{"no-body with just-body", []string{"dump", "-t", firehose, "--no-body", "--just-body"}, "none of the others can be"},
		{"an argument to dump", []string{"dump", "-t", firehose, "extra"}, "unknown command"},
		{"an argument to list", []string{"list", "extra"}, "unknown command"},
		{"an unknown command", []string{"tail"}, "unknown command"},
		{"a broker address without port", []string{"list", "--kafka-host", "kafka"}, "KAFKA_HOSTS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := run(t, tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("kafkadump %s: error %v, want one containing %q", strings.Join(tt.args, " "), err, tt.wantErr)
			}
		})
	}
}

// proc is kafkadump running as a separate process.
type proc struct {
	*harness.Process
	stdout, stderr *harness.OutputBuffer
}

// start runs kafkadump with args as a separate process.
func start(t *testing.T, args ...string) *proc {
	t.Helper()
	p := &proc{stdout: &harness.OutputBuffer{}, stderr: &harness.OutputBuffer{}}
	p.Process = harness.StartProcess(t, harness.ProcessSpec{Name: "kafkadump", Path: os.Args[0], Args: args,
		Env: append(os.Environ(), "KAFKADUMP_TEST_RUN_MAIN=1"), Stdout: p.stdout, Stderr: p.stderr})
	return p
}

// exitCode waits for the process to exit and returns its exit code.
func (p *proc) exitCode(t *testing.T) int {
	t.Helper()
	select {
	case <-p.Done():
		return p.ExitCode()
	case <-time.After(60 * time.Second):
		t.Fatal("kafkadump did not exit")
		return -1
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	harness.WaitFor(t, what, 60*time.Second, cond)
}

func TestASignalStopsADumpCleanly(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			k, produce := startKafka(t, 2)
			produce(0, `{"old": true}`)
			p := start(t, "dump", "-t", firehose, "--kafka-host", k.Hosts())
			stdout, stderr := p.stdout, p.stderr

			// The start line is logged once the start offsets are fixed:
			// everything produced after it is dumped.
			waitFor(t, "the start line", func() bool {
				return strings.Contains(stderr.String(), "Dumping "+firehose) || p.Exited()
			})
			if p.Exited() {
				t.Fatalf("kafkadump exited early:\n%s", stderr.String())
			}
			produce(0, `{"new": 0}`)
			produce(1, `{"new": 1}`)
			waitFor(t, "the new messages", func() bool {
				out := stdout.String()
				return strings.Contains(out, `{"new":0}`) && strings.Contains(out, `{"new":1}`)
			})
			p.Signal(sig)
			if code := p.exitCode(t); code != 0 {
				t.Errorf("exit code after %v = %d, want 0\nstderr:\n%s", sig, code, stderr.String())
			}
			if got := stdout.String(); got != "{\"new\":0}\n{\"new\":1}\n" && got != "{\"new\":1}\n{\"new\":0}\n" {
				t.Errorf("stdout = %q, want just the two new messages", got)
			}
			if !strings.Contains(stderr.String(), "Num Records: 2,") {
				t.Errorf("stderr lacks the summary:\n%s", stderr.String())
			}
		})
	}
}

func TestAMissingTopicExitsWithAnError(t *testing.T) {
	k, _ := startKafka(t, 1)
	p := start(t, "dump", "-t", "demo.nope", "--kafka-host", k.Hosts())
	stdout, stderr := p.stdout, p.stderr
	if code := p.exitCode(t); code != 1 {
		t.Errorf("exit code = %d, want 1", code)
	}
	if want := "kafkadump: topic does not exist: demo.nope"; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
	}
	if stdout.String() != "" {
		t.Errorf("stdout = %q, want nothing", stdout.String())
	}
	out, _, err := run(t, "list", "--kafka-host", k.Hosts())
	if err != nil || strings.Contains(out, "demo.nope") {
		t.Errorf("after dumping a missing topic, list = %q, %v; want it still missing", out, err)
	}
}

func TestNoBrokerExitsWithAnError(t *testing.T) {
	port := harness.Port(t)
	p := start(t, "list", "--kafka-host", fmt.Sprintf("127.0.0.1:%d", port))
	stderr := p.stderr
	if code := p.exitCode(t); code != 1 {
		t.Errorf("exit code = %d, want 1", code)
	}
	if !strings.Contains(stderr.String(), "list topics") {
		t.Errorf("stderr does not explain:\n%s", stderr.String())
	}
}
