package harness

import (
	"encoding/json"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// LoadSettings loads a test's settings: defaults with overrides, each
// value given as a flag would give it (a string as it is, anything else as
// JSON), and nothing from the environment. It fails tb on an error.
func LoadSettings(tb testing.TB, defaults settings.Defaults, overrides map[string]any) *settings.Settings {
	tb.Helper()
	flags := make(map[string]string, len(overrides))
	for k, v := range overrides {
		if s, ok := v.(string); ok {
			flags[k] = s
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			tb.Fatalf("setting %s: %v", k, err)
		}
		flags[k] = string(b)
	}
	s, err := settings.Load(defaults, settings.Options{NoEnv: true, Flags: flags})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}
