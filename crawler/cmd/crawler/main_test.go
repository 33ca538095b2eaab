package main

import (
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/command"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/cli/clitest"
)

func TestSettingsCommandShowsTheComponentsDefaults(t *testing.T) {
	out := clitest.Output(t, command.New(), "settings", "--set", "REDIS_HOST=redis.example")
	clitest.ExpectContains(t, "settings output", out, "SC_LOG_FILE: sc_crawler.log  # default", "SPIDER: link  # default", "QUEUE_HITS: 10  # default", "KAFKA_TOPIC_PREFIX: demo  # default", "REDIS_HOST: redis.example  # flag")
}
