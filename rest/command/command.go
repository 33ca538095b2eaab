// Package command is the rest command tree: the root command runs the REST
// service; `rest settings` prints the effective settings. The rest binary is
// this package plus the Kafka Monitor's built-in plugins, whose schemas /feed
// validates requests against. To accept requests of plugins of your own,
// build your own binary the same way and enable them in PLUGINS:
//
//	import (
//		_ "github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugins/all"
//		"github.com/scrapycluster/scrapy-cluster-go/rest/command"
//		_ "example.com/you/yourplugin" // registers itself in init()
//		"github.com/scrapycluster/scrapy-cluster-go/scutils/cli"
//	)
//
//	func main() { os.Exit(cli.Execute(command.New())) }
package command

import (
	"context"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/scrapycluster/scrapy-cluster-go/rest/server"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/cli"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// New builds the rest command tree. The request plugins must be registered
// (imported) by the binary.
func New() *cobra.Command {
	declared := server.Settings()
	root, flags := cli.NewRoot("rest",
		"Scrapy Cluster REST service: HTTP gateway to the cluster (/, /feed, /poll)",
		`The REST service lets applications that do not speak Kafka use the cluster over HTTP:

  GET|POST /    the service's state: kafka_connected, redis_connected, my_id,
                node_health (GREEN, YELLOW or RED) and uptime_sec
  POST /feed    a crawl, action, stats or zookeeper request (Content-Type: application/json),
                validated against the Kafka Monitor's schemas and sent to KAFKA_PRODUCER_TOPIC.
                A request with a uuid waits up to WAIT_FOR_RESPONSE_TIME seconds for its
                answer on <KAFKA_TOPIC_PREFIX>.outbound_firehose and returns it as data, or
                {"poll_id": <uuid>} when it did not come in time
  POST /poll    {"poll_id": <uuid>}: an answer that came after /feed stopped waiting,
                from any REST instance (kept at rest:poll:<uuid> for POLL_RESULT_TIMEOUT)

Answers are wrapped as {"data": ..., "error": ..., "status": "SUCCESS" or "FAILURE"}.
The service keeps running while Kafka or Redis are away and reconnects when they return.
SIGINT or SIGTERM stops accepting connections, lets requests in flight finish and exits 0.`,
		declared)
	root.Example = "  rest\n  rest --port 8080 --settings localsettings.yaml\n  rest --set KAFKA_HOSTS=kafka:9092 --set REDIS_HOST=redis --log-json\n  rest settings"
	root.Args = cobra.NoArgs
	pf := root.PersistentFlags()
	pf.Int("port", 0, "port to listen on (setting FLASK_PORT, default 5343)")
	pf.String("host", "", "address to listen on (setting FLASK_HOST, default 0.0.0.0: every interface)")
	flags.Bind("port", "FLASK_PORT")
	flags.Bind("host", "FLASK_HOST")
	root.AddCommand(cli.HealthcheckCommand(declared, flags, server.APIAddr))
	root.RunE = cli.RunCommand(flags, declared, newService)
	return root
}

// newService builds the REST service.
func newService(ctx context.Context, s *settings.Settings, log *logfactory.Logger, rdb redis.UniversalClient) (cli.Service, error) {
	svc, err := server.New(ctx, s, log, rdb)
	if err != nil {
		return nil, err
	}
	return serving{svc}, nil
}

// serving runs the REST service as a cli.Service.
type serving struct{ *server.Service }

func (s serving) Run(ctx context.Context) error { return s.ListenAndServe(ctx) }
