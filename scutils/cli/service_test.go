package cli_test

import (
	"context"
	"errors"
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
		return cli.RunService(cmd.Context(), flags, defaults, func(_ context.Context, s *settings.Settings, log *logfactory.Logger, rdb *redis.Client) (cli.Service, error) {
			gotLevel, gotRedis = log.Level().String(), rdb.Options().Addr
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
