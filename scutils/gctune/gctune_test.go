package gctune_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/gctune"
)

// childEnv marks the test binary run as a child by runChild: it applies
// the settings below and prints the State as JSON.
const childEnv = "GCTUNE_TEST_CHILD"

const (
	childPercent = 400
	childLimit   = 300 << 20
)

// TestMain lets the test binary be a fresh process whose runtime read
// GOGC and GOMEMLIMIT at start, as a service's does.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		_ = json.NewEncoder(os.Stdout).Encode(gctune.Apply(childPercent, childLimit))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runChild runs Apply(childPercent, childLimit) in a new process with env
// added to its environment (GOGC and GOMEMLIMIT unset unless env sets them).
func runChild(t *testing.T, env ...string) gctune.State {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOGC=") && !strings.HasPrefix(kv, "GOMEMLIMIT=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, childEnv+"=1")
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	var st gctune.State
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatalf("child printed %q: %v", out, err)
	}
	return st
}

func TestApplySetsBothWhenTheEnvironmentSetsNeither(t *testing.T) {
	got := runChild(t)
	want := gctune.State{Percent: childPercent, Limit: childLimit}
	if got != want {
		t.Fatalf("Apply = %+v, want %+v", got, want)
	}
}

func TestGOGCWinsOverThePercent(t *testing.T) {
	got := runChild(t, "GOGC=150")
	want := gctune.State{Percent: 150, Limit: childLimit, PercentFromEnv: true}
	if got != want {
		t.Fatalf("Apply with GOGC=150 = %+v, want %+v", got, want)
	}
	if got := runChild(t, "GOGC=off"); got.Percent != -1 || !got.PercentFromEnv {
		t.Fatalf("Apply with GOGC=off = %+v, want percent -1 from the environment", got)
	}
}

func TestGOMEMLIMITWinsOverTheLimit(t *testing.T) {
	got := runChild(t, "GOMEMLIMIT=1GiB")
	want := gctune.State{Percent: childPercent, Limit: 1 << 30, LimitFromEnv: true}
	if got != want {
		t.Fatalf("Apply with GOMEMLIMIT=1GiB = %+v, want %+v", got, want)
	}
}

func TestNoLimitLeavesTheLimitAlone(t *testing.T) {
	oldPercent := debug.SetGCPercent(100)
	oldLimit := debug.SetMemoryLimit(-1)
	t.Cleanup(func() {
		debug.SetGCPercent(oldPercent)
		debug.SetMemoryLimit(oldLimit)
	})
	t.Setenv(gctune.EnvPercent, "")
	t.Setenv(gctune.EnvLimit, "")
	got := gctune.Apply(250, 0)
	if got.Percent != 250 || got.Limit != oldLimit {
		t.Fatalf("Apply(250, 0) = %+v, want percent 250 and the limit left at %d", got, oldLimit)
	}
}
