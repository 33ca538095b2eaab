package server

import (
	"errors"
	"fmt"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/fetch"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider/links"
	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin"
	"github.com/scrapycluster/scrapy-cluster-go/rest/console"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/admin"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/cli"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/kafkaclient"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// The REST service's own settings, names and defaults as the original's
// rest settings.py (times in seconds).
var (
	LoggingEnabled   = settings.Bool("FLASK_LOGGING_ENABLED", true, "an access log line per request on stderr, as Flask's server writes")
	Port             = settings.Int("FLASK_PORT", 5343, "port to listen on (`--port`)").Within(0, 65535)
	Host             = settings.String("FLASK_HOST", "0.0.0.0", "address to listen on (`--host`)").Ours()
	SleepTime        = settings.Seconds("SLEEP_TIME", 0.1, "seconds between checks of the Redis connection").Positive()
	HeartbeatTimeout = settings.Seconds("HEARTBEAT_TIMEOUT", 120.0, "seconds the `stats:rest:self:<host>:<id>` key lives; refreshed every quarter of it").Positive()
	JoinTimeout      = settings.Seconds("DAEMON_THREAD_JOIN_TIMEOUT", 10.0, "seconds background work may take to stop at shutdown").AtLeast(0)
	WaitForResponse  = settings.Seconds("WAIT_FOR_RESPONSE_TIME", 5.0, "seconds `/feed` waits for an answer before returning a `poll_id`").AtLeast(0)
	SchemaDir        = settings.String("SCHEMA_DIR", "schemas/", "accepted for compatibility; the poll schema is compiled in and `/feed` uses the Kafka Monitor's")
	FeedTimeout      = settings.Seconds("KAFKA_FEED_TIMEOUT", 10.0, "seconds sending a request to Kafka may take").Positive()
	ConsumerSleep    = settings.Seconds("KAFKA_CONSUMER_SLEEP_TIME", 1.0, "seconds between checks of the Kafka connection (and metadata refreshes)").Positive()
	ProducerTopic    = settings.String("KAFKA_PRODUCER_TOPIC", "demo.incoming", "the topic requests are sent to")
	PollTimeout      = settings.Seconds("POLL_RESULT_TIMEOUT", 3600.0, "seconds an answer kept for `/poll` lives (the original kept them forever)").Ours().Positive()
	MaxRequestBytes  = settings.Int("MAX_REQUEST_BYTES", 1<<20, "largest request body").Ours().Positive()
	ReadTimeout      = settings.Seconds("HTTP_READ_TIMEOUT", 10.0, "seconds to read a request").Ours().Positive()
	WriteTimeout     = settings.Seconds("HTTP_WRITE_TIMEOUT", 30.0, "seconds to handle and answer a request; must be more than `WAIT_FOR_RESPONSE_TIME` + `KAFKA_FEED_TIMEOUT`").Ours().Positive()
)

// Settings are the REST service's settings: its own, the shared REDIS_*,
// KAFKA_* (answers are read from 'latest') and LOG_* ones, the Kafka
// Monitor's PLUGINS and KAFKA_INCOMING_PARTITIONS (/feed validates as the
// monitor does), the console's (UI_*, API_TOKEN, ZOOKEEPER_*) and
// ADMIN_PPROF (the admin endpoint is served on the API's port), and for
// POST /try the crawler's download settings (fetch.Settings),
// MAX_LINKS_PER_PAGE, TRY_RATE and TRY_BURST.
func Settings() settings.Group {
	return settings.Join(cli.ComponentSettings("rest-service", "rest_service.log"), plugin.Settings(), console.Settings(),
		fetch.Settings(), settings.Declare(TryRate, TryBurst, links.MaxPerPage),
		settings.Declare(admin.Pprof, kafkaclient.AutoOffsetReset.WithDefault("latest"),
			LoggingEnabled, Port, Host, SleepTime, HeartbeatTimeout, JoinTimeout, WaitForResponse, SchemaDir, FeedTimeout,
			ConsumerSleep, ProducerTopic, PollTimeout, MaxRequestBytes, ReadTimeout, WriteTimeout))
}

// config is the service's own settings, read and checked.
type config struct {
	accessLog                   bool
	redisEvery, kafkaEvery      time.Duration
	heartbeat, joinTimeout      time.Duration
	waitFor, feedLimit, pollTTL time.Duration
	readTimeout, writeTimeout   time.Duration
	incoming                    string
	incomingPartitions          int
	maxBody                     int64
}

// configFromSettings reads the service's settings and rejects values it
// cannot run with that the settings' bounds (which settings.Load enforces)
// allow, naming the setting.
func configFromSettings(s *settings.Settings) (config, error) {
	c := config{
		accessLog: LoggingEnabled.From(s), redisEvery: SleepTime.From(s), kafkaEvery: ConsumerSleep.From(s),
		heartbeat: HeartbeatTimeout.From(s), joinTimeout: JoinTimeout.From(s),
		waitFor: WaitForResponse.From(s), feedLimit: FeedTimeout.From(s), pollTTL: PollTimeout.From(s),
		readTimeout: ReadTimeout.From(s), writeTimeout: WriteTimeout.From(s),
		incoming: ProducerTopic.From(s), incomingPartitions: plugin.IncomingPartitions.From(s),
		maxBody: int64(MaxRequestBytes.From(s)),
	}
	var errs []error
	if c.incoming == "" {
		errs = append(errs, fmt.Errorf("setting %s: must not be empty", ProducerTopic.Name()))
	}
	if need := c.waitFor + c.feedLimit; c.writeTimeout <= need {
		errs = append(errs, fmt.Errorf("setting %s: must be more than %s + %s (%s), got %s",
			WriteTimeout.Name(), WaitForResponse.Name(), FeedTimeout.Name(), need, c.writeTimeout))
	}
	return c, errors.Join(errs...)
}
