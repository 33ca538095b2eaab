package cli

import (
	"context"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisconn"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// Service is a component's long-running part, as its main runs it.
// While it runs, RunService serves the process's admin endpoint (package
// admin: /metrics, with the service's own metrics when it is an
// admin.Instrumented, /healthz and /readyz) on ADMIN_ADDR, or through the
// service itself when it is an admin.Host.
type Service interface {
	// Run works until ctx is cancelled (SIGINT/SIGTERM), then drains.
	Run(ctx context.Context) error
	// Close releases what the service holds (not the logger or Redis client).
	Close()
}

// Builder makes a component's Service from its settings, logger and Redis client.
type Builder func(ctx context.Context, s *settings.Settings, log *logfactory.Logger, rdb redis.UniversalClient) (Service, error)

// Build is the Builder of a component whose constructor takes a Builder's
// arguments: Build(monitor.New).
func Build[S Service](newService func(context.Context, *settings.Settings, *logfactory.Logger, redis.UniversalClient) (S, error)) Builder {
	return func(ctx context.Context, s *settings.Settings, log *logfactory.Logger, rdb redis.UniversalClient) (Service, error) {
		return newService(ctx, s, log, rdb)
	}
}

// RunCommand is the RunE of a command that runs the service build makes
// (RunService) until SIGINT or SIGTERM.
func RunCommand(f *SettingsFlags, declared settings.Group, build Builder) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error { return RunService(cmd.Context(), f, declared, build) }
}

// RunsService makes root run the service build makes, with no sub-command
// as with `run` (whose help is short), and adds `healthcheck` (the admin
// endpoint's /readyz on ADMIN_ADDR): the crawler's and the Redis Monitor's
// command trees.
func RunsService(root *cobra.Command, f *SettingsFlags, declared settings.Group, short string, build Builder) {
	runE := RunCommand(f, declared, build)
	root.Args = cobra.NoArgs
	root.RunE = runE
	root.AddCommand(HealthcheckCommand(declared, f, AdminAddr))
	root.AddCommand(&cobra.Command{Use: "run", Short: short, Args: cobra.NoArgs, RunE: runE})
}

// RunService is every component's main: it loads the settings the user
// gave and opens the logger, naming unknown settings (see Open), routes the
// Redis client's own log lines to it, connects to Redis (one Redis, or a
// Redis Cluster with REDIS_CLUSTER_NODES set: every component runs on
// either), builds the service
// and runs it until ctx ends, closing everything afterwards.
func RunService(ctx context.Context, f *SettingsFlags, declared settings.Group, build Builder) error {
	s, log, err := f.Open(declared)
	if err != nil {
		return err
	}
	defer log.Close()
	redisconn.RouteClientLogs(log)
	rdb := redisconn.New(s)
	defer rdb.Close()
	adm, err := openAdmin(s, rdb)
	if err != nil {
		return err
	}
	defer adm.close()
	svc, err := build(ctx, s, log, rdb)
	if err != nil {
		return err
	}
	defer svc.Close()
	if err := adm.start(svc, log); err != nil {
		return err
	}
	return svc.Run(ctx)
}
