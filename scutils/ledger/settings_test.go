package ledger_test

import (
	"strings"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// The ledger's settings declare their bounds: a value out of them is
// refused when the settings load, with the setting's name and the reason.
func TestTheLedgerSettingsRefuseValuesOutOfTheirBounds(t *testing.T) {
	for _, tc := range []struct {
		set  map[string]string
		want string // "" for accepted
	}{
		{map[string]string{}, ""},
		{map[string]string{"LEDGER_TTL": "1", "LEDGER_COMPLETE_INTERVAL": "0.1", "LEDGER_COMPLETE_QUIET": "0"}, ""},
		{map[string]string{"LEDGER_TTL": "0"}, "setting LEDGER_TTL from flag: must be at least 1, got 0"},
		{map[string]string{"LEDGER_COMPLETE_INTERVAL": "0"}, "setting LEDGER_COMPLETE_INTERVAL from flag: must be positive"},
		{map[string]string{"LEDGER_COMPLETE_QUIET": "-1"}, "setting LEDGER_COMPLETE_QUIET from flag: must be at least 0"},
	} {
		_, err := settings.Load(ledger.Settings(), settings.Options{NoEnv: true, Flags: tc.set})
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%v: got %v, want an error with %q", tc.set, err, tc.want)
		}
	}
}
