package registry_test

import (
	"strings"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/registry"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

func newTestRegistry() *registry.Registry[string] {
	r := registry.New[string]("plugin")
	for _, name := range []string{"a", "b", "c"} {
		r.Register(name, func() string { return "made " + name })
	}
	return r
}

func TestLoadSortsByRankAndSkipsNull(t *testing.T) {
	got, err := newTestRegistry().Load("PLUGINS", map[string]any{"a": 300, "b": nil, "c": 100.0})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Key != "c" || got[0].Rank != 100 || got[0].Plugin != "made c" || got[1].Key != "a" {
		t.Fatalf("got %+v", got)
	}
}

func TestLoadErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		enabled map[string]any
		want    string
	}{
		"unknown":     {map[string]any{"zzz": 1}, "setting PLUGINS: no plugin named zzz (registered: [a b c])"},
		"not integer": {map[string]any{"a": "high"}, "rank of a must be an integer or null"},
		"fraction":    {map[string]any{"a": 1.5}, "rank of a must be an integer or null"},
		"shared rank": {map[string]any{"a": 1, "b": 1}, "a and b share rank 1"},
	} {
		_, err := newTestRegistry().Load("PLUGINS", tc.enabled)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", name, err, tc.want)
		}
	}
}

func TestRegisterTwicePanics(t *testing.T) {
	r := newTestRegistry()
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	r.Register("a", func() string { return "" })
}

func TestNamesAndNew(t *testing.T) {
	r := newTestRegistry()
	if got := strings.Join(r.Names(), ","); got != "a,b,c" {
		t.Fatal(got)
	}
	if v, err := r.New("b"); err != nil || v != "made b" {
		t.Fatal(v, err)
	}
}

func TestLoadSettingNeedsOneEntryEnabled(t *testing.T) {
	plugins := settings.Map("PLUGINS", map[string]any{"a": 100, "b": nil}, "the enabled plugins")
	for _, tc := range []struct {
		name, flag, wantErr string
		want                int
	}{
		{"the default enables one", "", "", 1},
		{"a setting that disables it enables none", `{"a": null}`, "setting PLUGINS: no plugin enabled", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			flags := map[string]string{}
			if tc.flag != "" {
				flags["PLUGINS"] = tc.flag
			}
			s, err := settings.Load(settings.Declare(plugins), settings.Options{NoEnv: true, Flags: flags})
			if err != nil {
				t.Fatal(err)
			}
			got, err := newTestRegistry().LoadSetting(s, plugins)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || len(got) != tc.want {
				t.Fatalf("got %+v, %v", got, err)
			}
		})
	}
}
