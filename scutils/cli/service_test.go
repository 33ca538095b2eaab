package cli_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/cli"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

type fakeService struct{ ran, closed bool }

func (f *fakeService) Run(context.Context) error { f.ran = true; return errors.New("stopped") }
func (f *fakeService) Close()                    { f.closed = true }

func TestRunServiceBuildsRunsAndClosesWithTheUsersSettings(t *testing.T) {
	defaults := cli.ComponentSettings("thing", "x.log")
	root, flags := cli.NewRoot("thing", "short", "long", defaults)
	svc := &fakeService{}
	var gotLevel, gotRedis string
	root.RunE = func(cmd *cobra.Command, _ []string) error {
		return cli.RunService(cmd.Context(), flags, defaults, func(_ context.Context, s *settings.Settings, log *logfactory.Logger, rdb redis.UniversalClient) (cli.Service, error) {
			gotLevel, gotRedis = log.Level().String(), rdb.(*redis.Client).Options().Addr
			if log.Name() != "thing" {
				t.Errorf("logger name %q", log.Name())
			}
			return svc, nil
		})
	}
	root.SetArgs([]string{"--log-level", "DEBUG", "--set", "REDIS_HOST=redis.example", "--set", "REDIS_PORT=6390"})
	err := root.Execute()
	if err == nil || err.Error() != "stopped" {
		t.Fatalf("Execute = %v, want the service's error", err)
	}
	if !svc.ran || !svc.closed || gotLevel != "DEBUG" || gotRedis != "redis.example:6390" {
		t.Fatalf("ran %v closed %v level %q redis %q", svc.ran, svc.closed, gotLevel, gotRedis)
	}
}

// With REDIS_CLUSTER_NODES set, a component starts on a cluster client of
// those seeds, whatever its binary's name (a build of one's own, with
// plugins or spiders of its own, included).
func TestRunServiceBuildsOnAClusterClientWithClusterNodes(t *testing.T) {
	defaults := cli.ComponentSettings("my-kafka-monitor", "x.log")
	root, flags := cli.NewRoot("my-kafka-monitor", "short", "long", defaults)
	svc := &fakeService{}
	var seeds []string
	root.RunE = func(cmd *cobra.Command, _ []string) error {
		return cli.RunService(cmd.Context(), flags, defaults, func(_ context.Context, _ *settings.Settings, _ *logfactory.Logger, rdb redis.UniversalClient) (cli.Service, error) {
			if c, ok := rdb.(*redis.ClusterClient); ok {
				seeds = c.Options().Addrs
			}
			return svc, nil
		})
	}
	root.SilenceErrors, root.SilenceUsage = true, true
	root.SetArgs([]string{"--set", "REDIS_CLUSTER_NODES=127.0.0.1:7000,127.0.0.1:7001"})
	if err := root.Execute(); err == nil || err.Error() != "stopped" {
		t.Fatalf("Execute = %v, want the service's error", err)
	}
	if !svc.ran || !svc.closed || strings.Join(seeds, ",") != "127.0.0.1:7000,127.0.0.1:7001" {
		t.Fatalf("ran %v closed %v on cluster seeds %v", svc.ran, svc.closed, seeds)
	}
}
