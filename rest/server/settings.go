package server

import (
	"errors"
	"fmt"

	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin"
	"github.com/scrapycluster/scrapy-cluster-go/rest/console"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/admin"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/cli"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// Defaults are the REST service's settings with their defaults: the spec's
// (names and values as Scrapy Cluster 1.3) plus the shared REDIS_*, KAFKA_*
// and LOG_* settings of every component. Settings this implementation adds
// are marked "(Go)". Times are seconds unless the name says otherwise.
//
//	FLASK_LOGGING_ENABLED      true       an access log line per request on stderr, as Flask's server writes
//	FLASK_PORT                 5343       the port to listen on ("SC" in hexadecimal)
//	FLASK_HOST                 "0.0.0.0"  (Go) the address to listen on
//	SLEEP_TIME                 0.1        how often the Redis connection is checked
//	HEARTBEAT_TIMEOUT          120        lifetime of the stats:rest:self:<host>:<id> key; refreshed every timeout/4
//	DAEMON_THREAD_JOIN_TIMEOUT 10         how long background work may take to stop at shutdown
//	WAIT_FOR_RESPONSE_TIME     5          how long /feed waits for an answer before returning a poll_id
//	SCHEMA_DIR                 "schemas/" accepted for compatibility; the schemas are compiled in
//	KAFKA_FEED_TIMEOUT         10         how long sending a request to Kafka may take
//	KAFKA_CONSUMER_AUTO_OFFSET_RESET "latest"  where reading the outbound topic starts
//	KAFKA_CONSUMER_SLEEP_TIME  1          how often the Kafka connection is checked
//	KAFKA_PRODUCER_TOPIC       "demo.incoming"  the topic /feed sends to
//	KAFKA_INCOMING_PARTITIONS  6          (Go) its partitions when this service creates it (the Kafka Monitor's default)
//	PLUGINS                    the Kafka Monitor's  (Go) the request schemas /feed accepts, as the Kafka Monitor's PLUGINS
//	POLL_RESULT_TIMEOUT        3600       (Go) lifetime of an answer kept at rest:poll:<uuid>
//	MAX_REQUEST_BYTES          1 MiB      (Go) largest request body
//	HTTP_READ_TIMEOUT          10         (Go) time to read a request
//	HTTP_WRITE_TIMEOUT         30         (Go) time to handle and answer a request; more than WAIT_FOR_RESPONSE_TIME + KAFKA_FEED_TIMEOUT
//	LOGGER_NAME                "rest-service"
//	LOG_FILE                   "rest_service.log"
//
// plus the console's UI_*, API_TOKEN and ZOOKEEPER_* settings (console.Defaults).
//
//	ADMIN_PPROF                false      (Go) also serve Go's profiler at /debug/pprof/ (admin.PprofDefaults); /metrics, /healthz and /readyz are always served
func Defaults() settings.Defaults {
	km := plugin.Defaults()
	return cli.Merge(cli.ComponentDefaults("rest_service.log"), console.Defaults(), admin.PprofDefaults(), settings.Defaults{
		"FLASK_LOGGING_ENABLED":            true,
		"FLASK_PORT":                       5343,
		"FLASK_HOST":                       "0.0.0.0",
		"SLEEP_TIME":                       0.1,
		"HEARTBEAT_TIMEOUT":                120.0,
		"DAEMON_THREAD_JOIN_TIMEOUT":       10.0,
		"WAIT_FOR_RESPONSE_TIME":           5.0,
		"SCHEMA_DIR":                       "schemas/",
		"KAFKA_FEED_TIMEOUT":               10.0,
		"KAFKA_CONSUMER_AUTO_OFFSET_RESET": "latest",
		"KAFKA_CONSUMER_SLEEP_TIME":        1.0,
		"KAFKA_PRODUCER_TOPIC":             "demo.incoming",
		"KAFKA_INCOMING_PARTITIONS":        km["KAFKA_INCOMING_PARTITIONS"],
		"PLUGINS":                          km["PLUGINS"],
		"POLL_RESULT_TIMEOUT":              3600.0,
		"MAX_REQUEST_BYTES":                1 << 20,
		"HTTP_READ_TIMEOUT":                10.0,
		"HTTP_WRITE_TIMEOUT":               30.0,
		"LOGGER_NAME":                      "rest-service",
	})
}

// checkSettings rejects values the service cannot run with, naming the setting.
func checkSettings(s *settings.Settings) error {
	var errs []error
	positive := func(name string) {
		if s.Float(name) <= 0 {
			errs = append(errs, fmt.Errorf("setting %s: must be positive, got %v", name, s.Float(name)))
		}
	}
	for _, name := range []string{"SLEEP_TIME", "HEARTBEAT_TIMEOUT", "KAFKA_FEED_TIMEOUT", "KAFKA_CONSUMER_SLEEP_TIME",
		"POLL_RESULT_TIMEOUT", "HTTP_READ_TIMEOUT", "HTTP_WRITE_TIMEOUT", "MAX_REQUEST_BYTES", "KAFKA_INCOMING_PARTITIONS"} {
		positive(name)
	}
	if s.Float("WAIT_FOR_RESPONSE_TIME") < 0 {
		errs = append(errs, fmt.Errorf("setting WAIT_FOR_RESPONSE_TIME: must not be negative, got %v", s.Float("WAIT_FOR_RESPONSE_TIME")))
	}
	if s.Float("DAEMON_THREAD_JOIN_TIMEOUT") < 0 {
		errs = append(errs, fmt.Errorf("setting DAEMON_THREAD_JOIN_TIMEOUT: must not be negative, got %v", s.Float("DAEMON_THREAD_JOIN_TIMEOUT")))
	}
	if p := s.Int("FLASK_PORT"); p < 0 || p > 65535 {
		errs = append(errs, fmt.Errorf("setting FLASK_PORT: %d is not a TCP port", p))
	}
	if s.String("KAFKA_PRODUCER_TOPIC") == "" {
		errs = append(errs, errors.New("setting KAFKA_PRODUCER_TOPIC: must not be empty"))
	}
	if need := s.Seconds("WAIT_FOR_RESPONSE_TIME") + s.Seconds("KAFKA_FEED_TIMEOUT"); s.Seconds("HTTP_WRITE_TIMEOUT") <= need {
		errs = append(errs, fmt.Errorf("setting HTTP_WRITE_TIMEOUT: must be more than WAIT_FOR_RESPONSE_TIME + KAFKA_FEED_TIMEOUT (%s), got %s",
			need, s.Seconds("HTTP_WRITE_TIMEOUT")))
	}
	return errors.Join(errs...)
}
