package settings_test

import (
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

func TestKnownToClusterKnowsEveryComponentsNamesAndNoTypos(t *testing.T) {
	// SCHEDULER_QUEUE_REFRESH is the crawler's, FLASK_PORT the REST
	// service's, SC_LOG_LEVEL a prefixed log setting of the crawler's.
	for _, name := range []string{"SCHEDULER_QUEUE_REFRESH", "FLASK_PORT", "SC_LOG_LEVEL", "LOG_LEVEL", "ADMIN_ADDR"} {
		if !settings.KnownToCluster(name) {
			t.Errorf("KnownToCluster(%s) = false", name)
		}
	}
	for _, name := range []string{"QUEUE_HIT", "PATH", "", "scheduler_persist"} {
		if settings.KnownToCluster(name) {
			t.Errorf("KnownToCluster(%q) = true", name)
		}
	}
}
