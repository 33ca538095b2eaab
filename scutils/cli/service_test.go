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
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisconn"
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

// With REDIS_CLUSTER_NODES set, a component that does not support it
// refuses to start, naming the setting, and builds nothing.
func TestRunServiceRefusesClusterMode(t *testing.T) {
	defaults := cli.ComponentSettings("thing", "x.log")
	root, flags := cli.NewRoot("thing", "short", "long", defaults)
	built := false
	root.RunE = func(cmd *cobra.Command, _ []string) error {
		return cli.RunService(cmd.Context(), flags, defaults, func(context.Context, *settings.Settings, *logfactory.Logger, redis.UniversalClient) (cli.Service, error) {
			built = true
			return &fakeService{}, nil
		})
	}
	root.SilenceErrors, root.SilenceUsage = true, true
	root.SetArgs([]string{"--set", "REDIS_CLUSTER_NODES=127.0.0.1:7000"})
	err := root.Execute()
	if !errors.Is(err, redisconn.ErrClusterUnsupported) || !strings.Contains(err.Error(), "REDIS_CLUSTER_NODES=127.0.0.1:7000 is set") || built {
		t.Fatalf("Execute = %v (built %v), want a refusal naming REDIS_CLUSTER_NODES", err, built)
	}
}

// The crawler, the Kafka Monitor, the Redis Monitor and the REST service
// start in cluster mode; a binary of another name refuses it.
func TestTheClusterComponentsRunInClusterMode(t *testing.T) {
	s, err := settings.Load(redisconn.Settings(), settings.Options{Environ: []string{"REDIS_CLUSTER_NODES=127.0.0.1:7000"}})
	if err != nil {
		t.Fatal(err)
	}
	for name, ready := range map[string]bool{"crawler": true, "kafka-monitor": true, "redis-monitor": true, "rest": true, "thing": false} {
		err := cli.RefuseCluster(s, name)
		if ready && err != nil || !ready && !errors.Is(err, redisconn.ErrClusterUnsupported) {
			t.Errorf("%s in cluster mode: %v", name, err)
		}
	}
}
