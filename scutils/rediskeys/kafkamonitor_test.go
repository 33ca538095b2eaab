package rediskeys_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// redisGlob compiles a MATCH pattern of '*' wildcards as Redis reads it
// ('*' matches any characters, '/' and ':' included).
func redisGlob(pattern string) *regexp.Regexp {
	parts := strings.Split(pattern, "*")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile("^" + strings.Join(parts, ".*") + "$")
}

func TestStoredMarksKeyMatchesNoPatternTheOriginalScans(t *testing.T) {
	if got := rediskeys.StoredMarksKey("demo-group", "demo.incoming", 3); got != "kafka-monitor:stored:demo.incoming/3/demo-group" {
		t.Errorf("StoredMarksKey = %q", got)
	}
	if a, b := rediskeys.StoredMarksKey("a:b", "t", 0), rediskeys.StoredMarksKey("a%3Ab", "t", 0); a == b {
		t.Errorf("two groups share the key %q", a)
	}
	patterns := []string{"*:*:queue", "*:queue", "info:*", "stop:*", "expire:*", "statsrequest:*", "zk:*", "stats:*",
		"timeout:*", "*:dupefilter:*", "*:blacklist", "*:*:throttle_*", "lock:*"}
	for _, group := range []string{"demo-group", "queue", "blacklist", "dupefilter", "x:queue", "a:dupefilter:b", "x:blacklist", "throttle_time", ""} {
		for _, topic := range []string{"demo.incoming", "queue", "blacklist"} {
			key := rediskeys.StoredMarksKey(group, topic, 0)
			for _, p := range patterns {
				if redisGlob(p).MatchString(key) {
					t.Errorf("key %q matches %q", key, p)
				}
			}
		}
	}
}
