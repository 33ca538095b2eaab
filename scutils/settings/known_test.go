package settings_test

import (
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/domainconfig"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/kafkaclient"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisconn"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/stats"
)

// The components' own tests check their Defaults; these are the shared
// ones scutils defines.
func TestTheSharedPackagesSettingsAreInTheClusterList(t *testing.T) {
	for what, d := range map[string]settings.Defaults{
		"redisconn":             redisconn.Defaults(),
		"kafkaclient":           kafkaclient.Defaults(),
		"logfactory":            logfactory.Defaults("x.log"),
		"logfactory with SC_":   logfactory.PrefixedDefaults("SC_", "x.log"),
		"stats":                 stats.Defaults(),
		"stats of the monitors": stats.MonitorDefaults(),
		"domainconfig":          domainconfig.Defaults(),
		"ledger":                ledger.Defaults(),
	} {
		if missing := settings.Unlisted(d); len(missing) > 0 {
			t.Errorf("%s: add %q to clusterNames in scutils/settings/known.go", what, missing)
		}
	}
}

func TestUnlistedNamesTheSettingsTheListLacks(t *testing.T) {
	got := settings.Unlisted(settings.Defaults{"QUEUE_HITS": 1, "B_NEW": 2, "A_NEW": 3})
	if len(got) != 2 || got[0] != "A_NEW" || got[1] != "B_NEW" {
		t.Errorf("Unlisted = %q, want [A_NEW B_NEW]", got)
	}
	if !settings.KnownToCluster("SCHEDULER_QUEUE_REFRESH") || settings.KnownToCluster("QUEUE_HIT") {
		t.Error("KnownToCluster is wrong about SCHEDULER_QUEUE_REFRESH or QUEUE_HIT")
	}
}
