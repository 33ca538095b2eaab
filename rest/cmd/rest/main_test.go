package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/rest/command"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/cli/clitest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

func TestSettingsCommandShowsTheComponentsDefaults(t *testing.T) {
	out := clitest.Output(t, command.New(), "settings", "--set", "REDIS_HOST=redis.example", "--port", "8080")
	clitest.ExpectContains(t, "settings output", out, "LOG_FILE: rest_service.log  # default", "KAFKA_TOPIC_PREFIX: demo  # default",
		"REDIS_HOST: redis.example  # flag", "FLASK_PORT: 8080  # flag", "LOGGER_NAME: rest-service  # default",
		"WAIT_FOR_RESPONSE_TIME: 5  # default", "KAFKA_CONSUMER_AUTO_OFFSET_RESET: latest  # default",
		"KAFKA_PRODUCER_TOPIC: demo.incoming  # default", "SLEEP_TIME: 0.1  # default")
}

func TestHelpExplainsEveryFlag(t *testing.T) {
	clitest.ExpectContains(t, "help", clitest.Output(t, command.New(), "--help"), "--port", "FLASK_PORT", "--host", "FLASK_HOST", "--settings", "--set", "--log-level", "--log-json", "--log-file", "/feed", "/poll", "SIGTERM")
}

func TestUnknownArgumentsAreRefused(t *testing.T) {
	root := command.New()
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
	bin := filepath.Join(harness.BuildBinaries(t, "./rest/cmd/rest"), "rest")
	port := harness.Port(t)
	p := harness.StartProcess(t, harness.ProcessSpec{Path: bin, Args: []string{"--host", "127.0.0.1", "--port", strconv.Itoa(port),
		"--log-json", "--set", "KAFKA_HOSTS=" + k.Hosts(), "--set", "REDIS_HOST=127.0.0.1", "--set", "REDIS_PORT=" + strconv.Itoa(r.Port)},
		Env: append(os.Environ(), "FLASK_LOGGING_ENABLED=false", "KAFKA_CONSUMER_SLEEP_TIME=0.2")})

	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	err := p.WaitReady(20*time.Second, func() error {
		var idx map[string]any
		if res, err := http.Get(url + "/"); err == nil {
			_ = json.NewDecoder(res.Body).Decode(&idx)
			res.Body.Close()
		}
		if idx["node_health"] != "GREEN" {
			return fmt.Errorf("the service is not GREEN; last index %v", idx)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.Post(url+"/feed", "application/json", strings.NewReader(`{"url": "http://example.com", "appid": "testapp", "crawlid": "bin1"}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("feed: %d", res.StatusCode)
	}

	if err := p.Stop(20 * time.Second); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
	for _, want := range []string{`"message": "Running main flask method on port ` + strconv.Itoa(port), `"message": "'feed' endpoint called"`, `"message": "Closing Rest Service"`} {
		if !strings.Contains(p.Output().String(), want) {
			t.Errorf("output lacks %s", want)
		}
	}
}
