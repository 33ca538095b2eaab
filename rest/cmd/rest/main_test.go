package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

func TestSettingsCommandShowsTheComponentsDefaults(t *testing.T) {
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"settings", "--set", "REDIS_HOST=redis.example", "--port", "8080"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"LOG_FILE: rest_service.log  # default", "KAFKA_TOPIC_PREFIX: demo  # default",
		"REDIS_HOST: redis.example  # flag", "FLASK_PORT: 8080  # flag", "LOGGER_NAME: rest-service  # default",
		"WAIT_FOR_RESPONSE_TIME: 5  # default", "KAFKA_CONSUMER_AUTO_OFFSET_RESET: latest  # default",
		"KAFKA_PRODUCER_TOPIC: demo.incoming  # default", "SLEEP_TIME: 0.1  # default"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("settings output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestHelpExplainsEveryFlag(t *testing.T) {
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"--help"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--port", "FLASK_PORT", "--host", "FLASK_HOST", "--settings", "--set", "--log-level", "--log-json", "--log-file", "/feed", "/poll", "SIGTERM"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("help lacks %q:\n%s", want, out.String())
		}
	}
}

func TestUnknownArgumentsAreRefused(t *testing.T) {
	root := newRoot()
	root.SetOut(&bytes.Buffer{})
	root.SetErr(&bytes.Buffer{})
	root.SetArgs([]string{"serve-please"})
	if err := root.Execute(); err == nil {
		t.Fatal("an unknown argument was accepted")
	}
}

// TestBinaryServesAndExitsCleanlyOnSIGTERM builds the rest binary, runs it
// against real Redis and a kfake broker, and stops it as an orchestrator would.
func TestBinaryServesAndExitsCleanlyOnSIGTERM(t *testing.T) {
	r := harness.StartRedis(t)
	k := harness.StartKafka(t)
	bin := filepath.Join(t.TempDir(), "rest")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	port, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--host", "127.0.0.1", "--port", strconv.Itoa(port), "--log-json",
		"--set", "KAFKA_HOSTS="+k.Hosts(), "--set", "REDIS_HOST=127.0.0.1", "--set", "REDIS_PORT="+strconv.Itoa(r.Port))
	cmd.Env = append(os.Environ(), "FLASK_LOGGING_ENABLED=false", "KAFKA_CONSUMER_SLEEP_TIME=0.2")
	out := &harness.OutputBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("output:\n%s", out.String())
		}
	}()

	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(20 * time.Second)
	for {
		var idx map[string]any
		if res, err := http.Get(url + "/"); err == nil {
			_ = json.NewDecoder(res.Body).Decode(&idx)
			res.Body.Close()
		}
		if idx["node_health"] == "GREEN" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the service did not become GREEN; last index %v", idx)
		}
		time.Sleep(50 * time.Millisecond)
	}
	res, err := http.Post(url+"/feed", "application/json", strings.NewReader(`{"url": "http://example.com", "appid": "testapp", "crawlid": "bin1"}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("feed: %d", res.StatusCode)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no exit within 20 s of SIGTERM")
	}
	for _, want := range []string{`"message": "Running main flask method on port ` + strconv.Itoa(port), `"message": "'feed' endpoint called"`, `"message": "Closing Rest Service"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %s", want)
		}
	}
}
