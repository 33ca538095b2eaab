package localcluster

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// nextSteps is what the launcher prints once the cluster is up: commands to
// copy, with the real ports, binaries and topics, and each component's
// admin endpoint (plan's processes).
func nextSteps(cfg Config, svc services, cwd string, plan [][]spec) string {
	bin := func(name string) string {
		p := filepath.Join(cfg.BinDir, name)
		if rel, err := filepath.Rel(cwd, p); err == nil && !strings.HasPrefix(rel, "..") {
			return rel
		}
		return p
	}
	prefix := lookupEnv(cfg.Env, "KAFKA_TOPIC_PREFIX")
	if prefix == "" {
		prefix = "demo"
	}
	url, note := "http://example.com/", "  (any site you may crawl; --test-site serves one on loopback)"
	if cfg.TestSite {
		url, note = "http://127.0.0.1:"+strconv.Itoa(cfg.TestSitePort)+"/", ""
	}
	spider := "link"
	if len(cfg.Spiders) > 0 {
		spider = cfg.Spiders[0]
	}
	rest := "127.0.0.1:" + strconv.Itoa(cfg.RESTPort)
	curl := "curl -s -XPOST -H 'Content-Type: application/json' " + rest + "/feed -d "
	crawl := func(crawlid string) string {
		return fmt.Sprintf(`'{"url": "%s", "appid":"testapp", "crawlid":"%s", "maxdepth":1}'`, url, crawlid)
	}

	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	line("")
	line("  The cluster is up. In another terminal, from %s:", cwd)
	line("")
	if svc.redisClusterNodes != "" {
		line("    export KAFKA_HOSTS=%s REDIS_CLUSTER_NODES=%s ZOOKEEPER_HOSTS=%s",
			svc.kafkaHosts, svc.redisClusterNodes, svc.zookeeperHosts)
	} else {
		line("    export KAFKA_HOSTS=%s REDIS_HOST=%s REDIS_PORT=%s ZOOKEEPER_HOSTS=%s",
			svc.kafkaHosts, svc.redisHost, svc.redisPort, svc.zookeeperHosts)
	}
	line("")
	line("  Watch the crawl results:")
	line("    %s dump -t %s.crawled_firehose -p", bin(binKafkaDump), prefix)
	line("")
	line("  Feed a crawl through Kafka, or through the REST service%s:", note)
	line("    %s feed %s", bin(binKafkaMonitor), crawl("abc123"))
	line("    %s%s", curl, crawl("abc124"))
	line("")
	line("  Ask what a crawl has queued (info) and for the cluster's statistics (stats):")
	line(`    %s'{"action":"info", "appid":"testapp", "uuid":"info1", "crawlid":"abc123", "spiderid":"%s"}'`, curl, spider)
	line(`    %s'{"stats":"all", "appid":"testapp", "uuid":"stats1"}'`, curl)
	line("    %s dump -t %s.outbound_firehose -p     # every answer, as it comes", bin(binKafkaDump), prefix)
	line("")
	if _, set := lookupEnvOK(cfg.Env, "QUEUE_HITS"); !set {
		line("  The crawlers keep the original's throttle, 10 pages a minute per domain; for a quicker demo")
		line("  start the cluster with QUEUE_HITS=600 QUEUE_MODERATED=false in the environment.")
		line("")
	}
	if admin := adminLines(plan, cfg.RESTPort, bin); len(admin) > 0 {
		line("  Each component's admin endpoint (/metrics, /healthz, /readyz; random ports here), and its health check:")
		for _, l := range admin {
			line("    %s", l)
		}
		line("")
	}
	line("  The console: http://%s/ui/", rest)
	line("  The REST service's state: curl -s %s/   Ctrl-C here stops everything.", rest)
	line("")
	return b.String()
}
