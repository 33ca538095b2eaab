package main

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/cli"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

func TestSettingsCommandShowsTheComponentsDefaults(t *testing.T) {
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"settings", "--set", "REDIS_HOST=redis.example"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"LOG_FILE: kafka_monitor.log  # default", "KAFKA_TOPIC_PREFIX: demo  # default", "REDIS_HOST: redis.example  # flag"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("settings output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestFeedExitStatus(t *testing.T) {
	port, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	noKafka := "KAFKA_HOSTS=127.0.0.1:" + strconv.Itoa(port)
	cases := []struct {
		name string
		args []string
		want int
	}{
		{"an invalid request is not sent", []string{"feed", `{"url": "http://x.com", "appid": "testapp"}`}, 2},
		{"text that is not JSON", []string{"feed", `{url:`}, 2},
		{"a valid request with Kafka unreachable", []string{"feed", `{"url": "http://x.com", "appid": "testapp", "crawlid": "c1"}`, "--set", "KAFKA_FEED_TIMEOUT=1"}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := newRoot()
			root.SetArgs(append(tc.args, "--set", noKafka, "--set", "KAFKA_CONN_TIMEOUT=1", "--log-level", "CRITICAL"))
			if got := cli.Execute(root); got != tc.want {
				t.Fatalf("exit status %d, want %d", got, tc.want)
			}
		})
	}
}

func TestHelpExplainsTheCommandsAndFlags(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"run", "--help"}, {"feed", "--help"}} {
		root := newRoot()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetArgs(args)
		if err := root.Execute(); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"--settings", "--set", "--log-level", "--log-json", "--log-file"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%v help lacks %s", args, want)
			}
		}
	}
}
