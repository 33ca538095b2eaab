package scheduler_test

import (
	"strings"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/fetch"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/scheduler"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// DUPEFILTER_MODE, the compact filter's settings and the scheduler's
// times are checked at start: a wrong one is refused with its name and the
// reason (a bound by the settings' Load, the mode by ConfigFromSettings).
func TestTheSchedulerSettingsAreChecked(t *testing.T) {
	group := settings.Join(scheduler.Settings(), fetch.Settings(), ledger.Settings())
	for _, tc := range []struct {
		set  map[string]string
		want string // "" for accepted
	}{
		{map[string]string{}, ""},
		{map[string]string{"DUPEFILTER_MODE": "bloom"}, ""},
		{map[string]string{"DUPEFILTER_MODE": "bloom", "DUPEFILTER_ERROR_RATE": "1e-6", "DUPEFILTER_CAPACITY": "1000"}, ""},
		{map[string]string{"DUPEFILTER_MODE": "cuckoo"}, `setting DUPEFILTER_MODE: "cuckoo" is neither`},
		{map[string]string{"DUPEFILTER_MODE": "bloom", "DUPEFILTER_ERROR_RATE": "0.5"}, "setting DUPEFILTER_ERROR_RATE from flag: must be from 0.000000001 to 0.1, got 0.5"},
		{map[string]string{"DUPEFILTER_MODE": "bloom", "DUPEFILTER_ERROR_RATE": "0"}, "setting DUPEFILTER_ERROR_RATE from flag: must be from"},
		{map[string]string{"DUPEFILTER_MODE": "bloom", "DUPEFILTER_CAPACITY": "0"}, "setting DUPEFILTER_CAPACITY from flag: must be from 1 to 10000000, got 0"},
		{map[string]string{"DUPEFILTER_MODE": "bloom", "DUPEFILTER_CAPACITY": "20000000"}, "setting DUPEFILTER_CAPACITY from flag: must be from 1 to 10000000"},
		{map[string]string{"DUPEFILTER_TIMEOUT": "0"}, "setting DUPEFILTER_TIMEOUT from flag: must be positive"},
		{map[string]string{"SCHEDULER_QUEUE_REFRESH": "-1"}, "setting SCHEDULER_QUEUE_REFRESH from flag: must be positive"},
		{map[string]string{"LEASE_TIMEOUT": "0.5"}, "setting LEASE_TIMEOUT from flag: must be at least 1, got 0.5"},
		{map[string]string{"LEASE_REAP_INTERVAL": "0"}, "setting LEASE_REAP_INTERVAL from flag: must be positive"},
		{map[string]string{"QUEUE_HITS": "0"}, "setting QUEUE_HITS from flag: must be at least 1"},
		{map[string]string{"QUEUE_WINDOW": "0"}, "setting QUEUE_WINDOW from flag: must be positive"},
		{map[string]string{"CONCURRENT_REQUESTS": "0"}, "setting CONCURRENT_REQUESTS from flag: must be at least 1"},
		{map[string]string{"CONCURRENT_REQUESTS_PER_DOMAIN": "0"}, "setting CONCURRENT_REQUESTS_PER_DOMAIN from flag: must be at least 1"},
	} {
		s, err := settings.Load(group, settings.Options{NoEnv: true, Flags: tc.set})
		if err == nil {
			_, err = scheduler.ConfigFromSettings(s, "link")
		}
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%v: got %v, want an error with %q", tc.set, err, tc.want)
		}
	}
}
