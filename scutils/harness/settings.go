package harness

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// LoadSettings loads a test's settings: the declared ones with overrides, each
// value given as a flag would give it (a string as it is, anything else as
// JSON), and nothing from the environment. It fails tb on an error.
func LoadSettings(tb testing.TB, declared settings.Group, overrides map[string]any) *settings.Settings {
	tb.Helper()
	flags := make(map[string]string, len(overrides))
	for k, v := range overrides {
		if s, ok := v.(string); ok {
			flags[k] = s
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			tb.Fatalf("setting %s: %v", k, err)
		}
		flags[k] = string(b)
	}
	s, err := settings.Load(declared, settings.Options{NoEnv: true, Flags: flags})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// ClusterSettings are the settings (by name, as environment variables or
// flags) every component of a test cluster runs with: where its Redis,
// Kafka and ZooKeeper are (zkAddr "" for none: the domain configuration in
// Redis), one partition a topic, Kafka produces sent at once, no public IP
// look-up, a throttle that never bites, quick fetches and shutdowns, JSON
// logs at DEBUG on stdout (the crawler's SC_ ones too), loopback fetches
// allowed (the test sites are there) and admin endpoints on any free port
// (tests run side by side). Callers add or override what their test needs.
func ClusterSettings(redisPort int, kafkaHosts, zkAddr string) map[string]string {
	return map[string]string{
		"REDIS_HOST": "127.0.0.1", "REDIS_PORT": strconv.Itoa(redisPort),
		"KAFKA_HOSTS": kafkaHosts, "KAFKA_TOPIC_PARTITIONS": "1", "KAFKA_INCOMING_PARTITIONS": "1",
		"KAFKA_PRODUCER_BATCH_LINGER_MS": "1", "ZOOKEEPER_HOSTS": zkAddr,
		"PUBLIC_IP_URL": "", "SCHEDULER_IP_ENABLED": "false",
		"QUEUE_HITS": "100000", "QUEUE_WINDOW": "60", "QUEUE_MODERATED": "false",
		"DOWNLOAD_TIMEOUT": "5", "SHUTDOWN_GRACE": "1",
		"LOG_JSON": "true", "SC_LOG_JSON": "true", "LOG_STDOUT": "true", "SC_LOG_STDOUT": "true",
		"LOG_LEVEL": "DEBUG", "SC_LOG_LEVEL": "DEBUG",
		"FETCH_ALLOWED_NETWORKS": "127.0.0.0/8,::1/128",
		"ADMIN_ADDR":             "127.0.0.1:0",
	}
}

// Environ is settings as a process environment (KEY=VALUE strings).
func Environ(settings map[string]string) []string {
	env := make([]string, 0, len(settings))
	for k, v := range settings {
		env = append(env, k+"="+v)
	}
	return env
}
