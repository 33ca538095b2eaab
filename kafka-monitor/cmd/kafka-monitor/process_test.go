package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

// runMainVar makes the test binary run main() instead of the tests, so a
// test can run the real kafka-monitor as a process. (Not KAFKA_...: that
// would be a setting family, and named as an unknown setting.)
const runMainVar = "KAFKAMONITOR_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainVar) == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

func TestTheBinaryNamesUnknownSettingsAtStartUp(t *testing.T) {
	port := harness.Port(t)
	file := filepath.Join(t.TempDir(), "local.yaml")
	if err := os.WriteFile(file, []byte("REDIS_HOTS: redis\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// An invalid request: feed loads its settings, logs, and exits 2 without Kafka.
	cmd := exec.CommandContext(ctx, os.Args[0], "feed", `{"url": "http://x.com", "appid": "testapp"}`,
		"--settings", file, "--set", "QUEUE_HIT=5", "--set", "KAFKA_HOSTS=127.0.0.1:"+strconv.Itoa(port))
	cmd.Env = append(os.Environ(), runMainVar+"=1",
		"ZOOKEEPER_HOST=zk:2181",           // a typo
		"SCHEDULER_QUEUE_REFRESH=5",        // the crawler's: fine in a shared environment
		"KUBERNETES_SERVICE_HOST=10.0.0.1", // not ours
		"LOG_TEXT_FIELDS=false")
	out, err := cmd.Output()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("exit: %v, want status 2\n%s", err, out)
	}
	for _, want := range []string{
		"[kafka-monitor] WARNING: Unknown setting QUEUE_HIT (from --set); did you mean QUEUE_HITS?\n",
		"[kafka-monitor] WARNING: Unknown setting REDIS_HOTS (from the settings file); did you mean REDIS_HOST?\n",
		"[kafka-monitor] WARNING: Unknown setting ZOOKEEPER_HOST (from the environment); did you mean ZOOKEEPER_HOSTS?\n",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, quiet := range []string{"SCHEDULER_QUEUE_REFRESH", "KUBERNETES", runMainVar} {
		if strings.Contains(string(out), quiet) {
			t.Errorf("output names %s:\n%s", quiet, out)
		}
	}
}
