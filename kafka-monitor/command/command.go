// Package command is the kafka-monitor command tree (run, feed, settings).
// The kafka-monitor binary is this package plus the built-in plugins; to add
// plugins of your own, build your own binary the same way:
//
//	import (
//	//
//		"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/command"
//	//		_ "example.com/you/yourplugin" // registers itself in init()
//		"github.com/scrapycluster/scrapy-cluster-go/scutils/cli"
//	)
//
//	func main() { os.Exit(cli.Execute(command.New())) }
//
// and enable the plugin in the PLUGINS setting.
package command

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/monitor"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/cli"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisconn"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// New builds the kafka-monitor command tree. Plugins must be registered
// (imported) by the binary.
func New() *cobra.Command {
	declared := monitor.Settings()
	root, flags := cli.NewRoot("kafka-monitor",
		"Scrapy Cluster Kafka Monitor: validates requests from Kafka and queues them in Redis",
		`The Kafka Monitor consumes JSON crawl, action, stats and zookeeper requests from the
incoming topic (KAFKA_INCOMING_TOPIC, default demo.incoming) in consumer group KAFKA_GROUP,
validates each against its plugins' schemas in rank order (PLUGINS) and lets the first
matching plugin store it in Redis for the crawlers and the Redis Monitor.`,
		declared)

	run := &cobra.Command{
		Use:   "run",
		Short: "Run the Kafka Monitor until SIGINT or SIGTERM",
		Long: `Consume the incoming topic and store every valid request in Redis.

A batch's offsets are committed as soon as its requests are in Redis, never before
(at-least-once). While Redis is down, the batch in hand is retried with back-off and nothing
further is read. Invalid requests are logged ("Request rejected: <reason>"), counted in
stats:kafka-monitor:fail:* and skipped. SIGINT or SIGTERM finishes the batch in hand, commits it
and exits 0.`,
		Example: "  kafka-monitor run\n  kafka-monitor run --settings localsettings.yaml --log-level DEBUG",
		Args:    cobra.NoArgs,
		RunE:    cli.RunCommand(flags, declared, cli.Build(monitor.New)),
	}

	feed := &cobra.Command{
		Use:   "feed [JSON]",
		Short: "Validate one JSON request and send it to the incoming topic",
		Long: `Validate a JSON request as the Kafka Monitor will (MAX_REQUEST_BYTES, the enabled plugins'
schemas and their checks: http(s) URLs, regular expressions that compile, domains as queues name
them, ...) and send it to the incoming topic within KAFKA_FEED_TIMEOUT seconds. The JSON is the
argument, or standard input when no argument (or "-") is given. An invalid request is not sent:
the reason is printed on standard error, as the monitor would log it, and the exit status is 2.
A failure to reach Kafka exits with 1.`,
		Example: `  kafka-monitor feed '{"url": "http://istresearch.com", "appid":"testapp", "crawlid":"ABC123"}'
  kafka-monitor feed '{"appid":"testapp", "uuid":"cdefgh1", "stats":"kafka-monitor"}'
  echo '{"uuid":"abc123", "appid":"testapp", "action":"blacklist-update", "domain":"ebay.com"}' | kafka-monitor feed`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			raw, err := requestText(cmd.InOrStdin(), args)
			if err != nil {
				return err
			}
			s, log, err := setup(flags, declared)
			if err != nil {
				return err
			}
			defer log.Close()
			err = monitor.Feed(cmd.Context(), s, log, raw)
			if errors.Is(err, monitor.ErrInvalidRequest) {
				return cli.ExitError(2, err)
			}
			return err
		},
	}
	root.AddCommand(run, feed, cli.HealthcheckCommand(declared, flags, cli.AdminAddr))
	return root
}

func setup(flags *cli.SettingsFlags, declared settings.Group) (*settings.Settings, *logfactory.Logger, error) {
	s, log, err := flags.Open(declared)
	if err != nil {
		return nil, nil, err
	}
	redisconn.RouteClientLogs(log)
	return s, log, nil
}

func requestText(stdin io.Reader, args []string) ([]byte, error) {
	if len(args) == 1 && args[0] != "-" {
		return []byte(args[0]), nil
	}
	// At most 64 MiB; the verdict on what was read (empty, too large, ...) is Feed's.
	raw, err := io.ReadAll(io.LimitReader(stdin, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("read request from standard input: %w", err)
	}
	return raw, nil
}
