package monitor_test

import (
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/monitor"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// The settings file and environment are shared by every component, so a
// setting the Kafka Monitor knows must be in the cluster's list, or the other
// components would call it unknown at start-up.
func TestEverySettingIsInTheClusterList(t *testing.T) {
	if missing := settings.Unlisted(monitor.Defaults()); len(missing) > 0 {
		t.Errorf("add %q to clusterNames in scutils/settings/known.go", missing)
	}
}
