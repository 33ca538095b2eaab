package main

import (
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/redis-monitor/command"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/cli/clitest"
)

func TestSettingsCommandShowsTheComponentsDefaults(t *testing.T) {
	out := clitest.Output(t, command.New(), "settings", "--set", "REDIS_HOST=redis.example")
	clitest.ExpectContains(t, "settings output", out, "LOG_FILE: redis_monitor.log  # default", "KAFKA_TOPIC_PREFIX: demo  # default", "REDIS_HOST: redis.example  # flag")
}
