package main

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/command"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/cli"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/cli/clitest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

func TestSettingsCommandShowsTheComponentsDefaults(t *testing.T) {
	out := clitest.Output(t, command.New(), "settings", "--set", "REDIS_HOST=redis.example")
	clitest.ExpectContains(t, "settings output", out, "LOG_FILE: kafka_monitor.log  # default", "KAFKA_TOPIC_PREFIX: demo  # default", "REDIS_HOST: redis.example  # flag")
}

func TestFeedExitStatus(t *testing.T) {
	port := harness.Port(t)
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
			root := command.New()
			root.SetArgs(append(tc.args, "--set", noKafka, "--set", "KAFKA_CONN_TIMEOUT=1", "--log-level", "CRITICAL"))
			if got := cli.Execute(root); got != tc.want {
				t.Fatalf("exit status %d, want %d", got, tc.want)
			}
		})
	}
}

func TestHelpExplainsTheCommandsAndFlags(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"run", "--help"}, {"feed", "--help"}} {
		out := clitest.Output(t, command.New(), args...)
		clitest.ExpectContains(t, fmt.Sprint(args, " help"), out, "--settings", "--set", "--log-level", "--log-json", "--log-file")
	}
}
