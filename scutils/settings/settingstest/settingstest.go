// Package settingstest checks a component's settings in its tests.
package settingstest

import (
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// ExpectListed fails tb unless every setting of defaults is in the
// cluster's list of setting names. The settings file and environment are
// shared by every component, so a setting one component knows must be in
// the list, or the other components would call it unknown at start-up.
func ExpectListed(tb testing.TB, defaults settings.Defaults) {
	tb.Helper()
	if missing := settings.Unlisted(defaults); len(missing) > 0 {
		tb.Errorf("add %q to clusterNames in scutils/settings/known.go", missing)
	}
}
