package scheduler_test

import (
	"strings"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/fetch"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/scheduler"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// DUPEFILTER_MODE and the compact filter's settings are checked at start:
// a wrong one is refused with its name.
func TestTheDuplicateFilterSettingsAreChecked(t *testing.T) {
	group := settings.Join(scheduler.Settings(), fetch.Settings(), ledger.Settings())
	for _, tc := range []struct {
		set  map[string]any
		want string // "" for accepted
	}{
		{map[string]any{}, ""},
		{map[string]any{"DUPEFILTER_MODE": "bloom"}, ""},
		{map[string]any{"DUPEFILTER_MODE": "bloom", "DUPEFILTER_ERROR_RATE": 1e-6, "DUPEFILTER_CAPACITY": 1000}, ""},
		{map[string]any{"DUPEFILTER_MODE": "cuckoo"}, "DUPEFILTER_MODE"},
		{map[string]any{"DUPEFILTER_MODE": "bloom", "DUPEFILTER_ERROR_RATE": 0.5}, "DUPEFILTER_ERROR_RATE"},
		{map[string]any{"DUPEFILTER_MODE": "bloom", "DUPEFILTER_ERROR_RATE": 0}, "DUPEFILTER_ERROR_RATE"},
		{map[string]any{"DUPEFILTER_MODE": "bloom", "DUPEFILTER_CAPACITY": 0}, "DUPEFILTER_CAPACITY"},
		{map[string]any{"DUPEFILTER_MODE": "bloom", "DUPEFILTER_CAPACITY": 20000000}, "DUPEFILTER_CAPACITY"},
	} {
		_, err := scheduler.ConfigFromSettings(harness.LoadSettings(t, group, tc.set), "link")
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%v: got %v, want an error naming %q", tc.set, err, tc.want)
		}
	}
}
