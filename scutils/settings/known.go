package settings

import (
	"slices"
	"strings"
)

// clusterNames are the settings every Scrapy Cluster component knows, all
// components together: one process's environment (docker-compose, the local
// cluster) or settings file is often shared by all of them, so a name known
// to any is no typo in any. Kept by hand, sorted: each component and each
// scutils package with Defaults has a test that its names are all here
// (see Unlisted), which fails naming what to add.
var clusterNames = []string{
	"ADMIN_ADDR",
	"ADMIN_PPROF",
	"API_TOKEN",
	"BATCH_SIZE",
	"CONCURRENT_REQUESTS",
	"CONCURRENT_REQUESTS_PER_DOMAIN",
	"DAEMON_THREAD_JOIN_TIMEOUT",
	"DEFAULT_REQUEST_HEADERS",
	"DOMAIN_CONFIG_WAIT",
	"DOMAIN_MAX_PAGE_TIMEOUT",
	"DOWNLOAD_MAXSIZE",
	"DOWNLOAD_TIMEOUT",
	"DUPEFILTER_TIMEOUT",
	"FETCH_ALLOWED_NETWORKS",
	"FETCH_BLOCK_PRIVATE",
	"FLASK_HOST",
	"FLASK_LOGGING_ENABLED",
	"FLASK_PORT",
	"GLOBAL_PAGE_PER_DOMAIN_LIMIT",
	"GLOBAL_PAGE_PER_DOMAIN_LIMIT_TIMEOUT",
	"HEARTBEAT_TIMEOUT",
	"HTTP_READ_TIMEOUT",
	"HTTP_WRITE_TIMEOUT",
	"IP_ADDR_REGEX",
	"KAFKA_APPID_TOPICS",
	"KAFKA_BASE_64_ENCODE",
	"KAFKA_CONN_TIMEOUT",
	"KAFKA_CONSUMER_AUTO_COMMIT_ENABLE",
	"KAFKA_CONSUMER_AUTO_OFFSET_RESET",
	"KAFKA_CONSUMER_COMMIT_INTERVAL_MS",
	"KAFKA_CONSUMER_FETCH_MESSAGE_MAX_BYTES",
	"KAFKA_CONSUMER_SLEEP_TIME",
	"KAFKA_CONSUMER_TIMEOUT",
	"KAFKA_FEED_TIMEOUT",
	"KAFKA_GROUP",
	"KAFKA_HOSTS",
	"KAFKA_INCOMING_PARTITIONS",
	"KAFKA_INCOMING_TOPIC",
	"KAFKA_PRODUCER_BATCH_LINGER_MS",
	"KAFKA_PRODUCER_BUFFER_BYTES",
	"KAFKA_PRODUCER_MAX_REQUEST_SIZE",
	"KAFKA_PRODUCER_TOPIC",
	"KAFKA_TOPIC_PARTITIONS",
	"KAFKA_TOPIC_PREFIX",
	"KAFKA_TOPIC_REPLICATION_FACTOR",
	"LEASE_REAP_INTERVAL",
	"LEASE_TIMEOUT",
	"LEDGER_COMPLETE_INTERVAL",
	"LEDGER_TTL",
	"LOGGER_NAME",
	"LOG_BACKUPS",
	"LOG_DIR",
	"LOG_FILE",
	"LOG_JSON",
	"LOG_LEVEL",
	"LOG_MAX_BYTES",
	"LOG_STDOUT",
	"LOG_TEXT_FIELDS",
	"MAX_REQUEST_BYTES",
	"PLUGINS",
	"PLUGIN_DIR",
	"POLL_RESULT_TIMEOUT",
	"PUBLIC_IP_URL",
	"QUEUE_HITS",
	"QUEUE_MODERATED",
	"QUEUE_WINDOW",
	"READ_AHEAD_BYTES",
	"REDIRECT_ENABLED",
	"REDIRECT_MAX_TIMES",
	"REDIS_DB",
	"REDIS_HOST",
	"REDIS_LOCK_EXPIRATION",
	"REDIS_PASSWORD",
	"REDIS_PORT",
	"REDIS_SOCKET_TIMEOUT",
	"RETRY_FAILURES",
	"RETRY_FAILURES_MAX",
	"RETRY_HTTP_CODES",
	"RETRY_TIMES",
	"ROBOTSTXT_CACHE_TTL",
	"ROBOTSTXT_OBEY",
	"ROBOTSTXT_USER_AGENT",
	"SCHEDULER_BACKLOG_BLACKLIST",
	"SCHEDULER_IP_ENABLED",
	"SCHEDULER_IP_REFRESH",
	"SCHEDULER_PERSIST",
	"SCHEDULER_QUEUE_REFRESH",
	"SCHEDULER_QUEUE_TIMEOUT",
	"SCHEDULER_TYPE_ENABLED",
	"SCHEMA_DIR",
	"SCHEUDLER_ITEM_RETRIES",
	"SC_LOGGER_NAME",
	"SC_LOG_BACKUPS",
	"SC_LOG_DIR",
	"SC_LOG_FILE",
	"SC_LOG_JSON",
	"SC_LOG_LEVEL",
	"SC_LOG_MAX_BYTES",
	"SC_LOG_STDOUT",
	"SC_LOG_TEXT_FIELDS",
	"SHUTDOWN_GRACE",
	"SLEEP_TIME",
	"SPIDER",
	"STATS_CYCLE",
	"STATS_DUMP",
	"STATS_DUMP_CRAWL",
	"STATS_DUMP_QUEUE",
	"STATS_PLUGINS",
	"STATS_STATUS_CODES",
	"STATS_TIMES",
	"STATS_TOTAL",
	"STATUS_RESPONSE_CODES",
	"UI_APPID",
	"UI_AUTH_PASSWORD",
	"UI_AUTH_USER",
	"UI_ENABLED",
	"UI_LIVE_AT_START",
	"UI_REFRESH",
	"UI_RESULTS_BUFFER",
	"USER_AGENT",
	"WAIT_FOR_RESPONSE_TIME",
	"ZOOKEEPER_ASSIGN_PATH",
	"ZOOKEEPER_HOSTS",
	"ZOOKEEPER_ID",
}

// settingFamilies are the prefixes of Scrapy Cluster settings, present and
// reserved: an environment variable starting with one is taken for a
// setting, and named when no component knows it.
var settingFamilies = []string{
	"ADMIN_", "DUPEFILTER_", "FETCH_", "KAFKA_", "LEASE_", "LEDGER_", "LOG_", "QUEUE_", "REDIS_",
	"ROBOTSTXT_", "SCHEDULER_", "SC_LOG_", "STATS_", "UI_", "ZOOKEEPER_",
}

// notSettings are environment variables of a setting family that are no
// settings: the ones docker-compose.yml and the test harness read.
var notSettings = []string{"KAFKA_EXTERNAL_HOST", "KAFKA_IMAGE", "REDIS_IMAGE", "ZOOKEEPER_IMAGE", "ZOOKEEPER_JAR"}

// KnownToCluster reports whether some Scrapy Cluster component has a
// setting of this name.
func KnownToCluster(name string) bool {
	_, found := slices.BinarySearch(clusterNames, name)
	return found
}

// Unlisted returns the names of defaults that are not in the cluster's list
// of settings, sorted: a component's test calls it so that a new setting is
// added to the list (scutils/settings/known.go), where the other
// components see it.
func Unlisted(defaults Defaults) []string {
	var out []string
	for name := range defaults {
		if !KnownToCluster(name) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// inFamily reports whether name starts like a Scrapy Cluster setting.
func inFamily(name string) bool {
	for _, f := range settingFamilies {
		if strings.HasPrefix(name, f) {
			return true
		}
	}
	return false
}
