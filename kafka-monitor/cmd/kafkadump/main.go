// Command kafkadump: Scrapy Cluster Kafka topic dump utility for debugging.
// It lists the cluster's topics and prints a topic's messages as they
// arrive; the logic lives in package dump.
package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/dump"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/cli"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/kafkaclient"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

func main() {
	os.Exit(cli.Execute(newRoot()))
}

// newRoot builds the command tree; main runs it.
func newRoot() *cobra.Command {
	declared := dump.Settings()
	root, flags := cli.NewRoot("kafkadump", "Scrapy Cluster Kafka topic dump utility for debugging",
		`kafkadump checks the message flows of a Scrapy Cluster: 'list' names the topics of the
Kafka cluster and 'dump' prints the messages of one topic as they arrive.

Messages go to stdout; logs (the start line, warnings, the closing count of
messages) go to stderr, so the output can be piped to jq or a file.

The brokers are the setting KAFKA_HOSTS (default localhost:9092), from
--kafka-host, --set KAFKA_HOSTS=..., the environment or the --settings file.`, declared)
	root.Example = `  kafkadump list
  kafkadump dump -t demo.crawled_firehose -p
  kafkadump dump -t demo.outbound_firehose --kafka-host kafka:9092`

	flags.LogToStderr()
	root.PersistentFlags().String("kafka-host", "", "Kafka brokers to use, host:port[,host:port...] (setting KAFKA_HOSTS, default localhost:9092)")
	flags.Bind("kafka-host", "KAFKA_HOSTS")
	// kafkadump logs to stderr, not stdout as the shared flags' help says.
	usage := map[string]string{
		"log-level": "log level: DEBUG, INFO, WARNING, ERROR or CRITICAL (setting LOG_LEVEL, default INFO)",
		"log-json":  "write logs as JSON lines (setting LOG_JSON, default false: text)",
		"log-file":  "write logs to the rotating file LOG_DIR/LOG_FILE (default logs/kafkadump.log) instead of stderr (setting LOG_STDOUT=false)",
	}
	for name, text := range usage {
		if f := root.PersistentFlags().Lookup(name); f != nil {
			f.Usage = text
		}
	}
	root.AddCommand(listCommand(declared, flags), dumpCommand(declared, flags))
	return root
}

func listCommand(declared settings.Group, flags *cli.SettingsFlags) *cobra.Command {
	var partitions bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List all Kafka topics",
		Long: `List the topics of the Kafka cluster, sorted by name, after a "Topics:" heading:

  Topics:
  - demo.crawled_firehose
  - demo.incoming

Internal topics such as __consumer_offsets are left out.`,
		Example: `  kafkadump list
  kafkadump list --partitions --kafka-host kafka:9092`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, log, err := setUp(declared, flags)
			if err != nil {
				return err
			}
			defer log.Close()
			return dump.List(cmd.Context(), cfg, cmd.OutOrStdout(), partitions)
		},
	}
	cmd.Flags().BoolVar(&partitions, "partitions", false, `show each topic's partition count: "- demo.incoming (3 partitions)"`)
	return cmd
}

func dumpCommand(declared settings.Group, flags *cli.SettingsFlags) *cobra.Command {
	var opts dump.Options
	cmd := &cobra.Command{
		Use:   "dump -t TOPIC",
		Short: "Dump a Kafka topic",
		Long: `Print the messages of a topic as they arrive, reading all its partitions, until
interrupted (Ctrl-C or SIGTERM, which stop cleanly with exit status 0) or until
--number messages were printed. A closing log line on stderr counts the messages.

By default only the messages produced after kafkadump started are printed, and
no consumer group is used: each partition is read directly and no offsets are
committed, so any number of dumps can watch a topic without disturbing each
other or the cluster. --from-beginning starts at the oldest message kept.
--consumer reads in that consumer group instead and commits what was printed,
so the next dump in the group carries on where this one stopped; there
--from-beginning only applies while the group has no committed offsets.

JSON objects are printed compacted on one line (indented with --pretty), in
their fields' order; any other message is printed as it came. A topic that does
not exist is an error: kafkadump never creates topics.`,
		Example: `  # watch the crawl results, pretty-printed
  kafkadump dump -t demo.crawled_firehose -p

  # the first 10 answers of the Redis Monitor already in Kafka
  kafkadump dump -t demo.outbound_firehose -b -n 10

  # crawled pages of a crawler with KAFKA_BASE_64_ENCODE on, pages only
  kafkadump dump -t demo.crawled_firehose -d --just-body

  # results without their html, as JSON lines for jq
  kafkadump dump -t demo.crawled_firehose --no-body | jq .url`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.Validate(); err != nil {
				return err
			}
			cfg, log, err := setUp(declared, flags)
			if err != nil {
				return err
			}
			defer log.Close()
			_, err = dump.Dump(cmd.Context(), cfg, opts, cmd.OutOrStdout(), log)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVarP(&opts.Topic, "topic", "t", "", "the Kafka topic to read from (required)")
	f.StringVarP(&opts.Group, "consumer", "c", "", "the Kafka consumer group to read in, committing what was printed (default none: read every partition directly, commit nothing)")
	f.BoolVarP(&opts.FromBeginning, "from-beginning", "b", false, "read the topic from the oldest message kept (default: only messages produced after the start)")
	f.IntVarP(&opts.Max, "number", "n", 0, "stop after this many messages (0: until interrupted)")
	f.BoolVarP(&opts.Format.Pretty, "pretty", "p", false, "pretty-print JSON objects, indented by four spaces (other messages are printed as they came)")
	f.BoolVarP(&opts.Format.DecodeBase64, "decode-base64", "d", false, `decode the base64-encoded raw html "body" of JSON objects (crawler setting KAFKA_BASE_64_ENCODE), reading it in the charset of their "encoding" field (default UTF-8)`)
	f.BoolVar(&opts.Format.NoBody, "no-body", false, `leave the raw html "body" field out of the JSON objects printed`)
	f.BoolVar(&opts.Format.JustBody, "just-body", false, `print just the raw html "body" field of each JSON object, as text (messages without one print nothing)`)
	_ = cmd.MarkFlagRequired("topic")
	cmd.MarkFlagsMutuallyExclusive("no-body", "just-body")
	cmd.MarkFlagsMutuallyExclusive("pretty", "just-body")
	return cmd
}

// setUp loads the settings and returns the Kafka configuration and a logger
// writing to stderr (or the log file), so that stdout carries only output.
func setUp(declared settings.Group, flags *cli.SettingsFlags) (kafkaclient.Config, *logfactory.Logger, error) {
	s, log, err := flags.Open(declared)
	if err != nil {
		return kafkaclient.Config{}, nil, err
	}
	cfg, err := kafkaclient.ConfigFromSettings(s)
	if err != nil {
		log.Close()
		return kafkaclient.Config{}, nil, err
	}
	return cfg, log, nil
}
