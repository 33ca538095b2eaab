package redisconn_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisconn"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

func TestClientFromSettingsReachesRedisAndSurvivesARestart(t *testing.T) {
	r := harness.StartRedis(t)
	s, err := settings.Load(redisconn.Settings(), settings.Options{Environ: []string{
		"REDIS_HOST=127.0.0.1", "REDIS_PORT=" + strconv.Itoa(r.Port), "REDIS_DB=2", "REDIS_SOCKET_TIMEOUT=1",
	}})
	if err != nil {
		t.Fatal(err)
	}
	c := redisconn.New(s)
	defer c.Close()
	ctx := context.Background()
	if err := redisconn.Ping(ctx, c); err != nil {
		t.Fatal(err)
	}
	if c.Options().DB != 2 || c.Options().ReadTimeout != time.Second {
		t.Fatalf("options %+v", c.Options())
	}
	r.Kill()
	if err := redisconn.Ping(ctx, c); err == nil {
		t.Fatal("ping succeeded with Redis down")
	}
	if err := r.Restart(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for redisconn.Ping(ctx, c) != nil {
		if time.Now().After(deadline) {
			t.Fatal("client did not reconnect after Redis restarted")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
