package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestSettingsCommandShowsTheComponentsDefaults(t *testing.T) {
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"settings", "--set", "REDIS_HOST=redis.example"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"SC_LOG_FILE: sc_crawler.log  # default", "SPIDER: link  # default", "QUEUE_HITS: 10  # default", "KAFKA_TOPIC_PREFIX: demo  # default", "REDIS_HOST: redis.example  # flag"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("settings output lacks %q:\n%s", want, out.String())
		}
	}
}
