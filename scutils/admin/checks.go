package admin

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/domainconfig"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/kafkaclient"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisconn"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/zkwatch"
)

// RedisCheck pings Redis through rdb.
func RedisCheck(rdb redis.UniversalClient) Check {
	return Check{Name: "redis", Probe: func(ctx context.Context) error { return redisconn.Ping(ctx, rdb) }}
}

// KafkaCheck asks a broker of cfg for its API versions.
func KafkaCheck(cfg kafkaclient.Config) Check {
	return Check{Name: "kafka", Probe: cfg.Ping}
}

// ZooKeeperCheck opens a ZooKeeper session on hosts and closes it again: a
// server that accepts connections but cannot give sessions (no quorum) is
// not ready either.
func ZooKeeperCheck(hosts []string) Check {
	return Check{Name: "zookeeper", Probe: func(ctx context.Context) error {
		conn, err := zkwatch.Dial(ctx, hosts, 0, nil)
		if err != nil {
			return err
		}
		conn.Close()
		return nil
	}}
}

// DependencyChecks are the checks a component's settings call for: Redis
// and Kafka always, ZooKeeper when the component declares the domain
// config's ZOOKEEPER_HOSTS and it names servers.
func DependencyChecks(s *settings.Settings, rdb redis.UniversalClient) ([]Check, error) {
	kcfg, err := kafkaclient.ConfigFromSettings(s)
	if err != nil {
		return nil, err
	}
	checks := []Check{RedisCheck(rdb), KafkaCheck(kcfg)}
	if hosts, ok := domainconfig.Hosts.Lookup(s); ok {
		if zk := zkwatch.SplitHosts(hosts); len(zk) > 0 {
			checks = append(checks, ZooKeeperCheck(zk))
		}
	}
	return checks, nil
}
