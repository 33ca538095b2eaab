package settings

import (
	"slices"
	"strings"
)

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

// KnownToCluster reports whether some Scrapy Cluster component declares a
// setting of this name (clusterNames, in names.go: one process's
// environment or settings file is often shared by every component, so a
// name known to any is no typo in any).
func KnownToCluster(name string) bool {
	_, found := slices.BinarySearch(clusterNames, name)
	return found
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
