package settings_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

func defaults() settings.Defaults {
	return settings.Defaults{
		"NAME":          "Bill",
		"FAMILY":        map[string]any{"Friends": []any{"Joe", "Mark"}, "Sister": "Kathy"},
		"REDIS_PORT":    6379,
		"LOG_STDOUT":    true,
		"SLEEP_TIME":    0.5,
		"STATS_TIMES":   []string{"SECONDS_15_MINUTE", "SECONDS_1_HOUR"},
		"PLUGINS":       map[string]int{"scraper": 100, "action": 200},
		"QUEUE_WINDOWS": []int{60, 3600},
		"ANYTHING":      nil,
	}
}

func TestDefaultsAloneAreReturnedUnchanged(t *testing.T) {
	s, err := settings.Load(defaults(), settings.Options{NoEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	if s.String("NAME") != "Bill" || s.Int("REDIS_PORT") != 6379 || !s.Bool("LOG_STDOUT") {
		t.Fatalf("got %v", s.All())
	}
	if got := s.Strings("STATS_TIMES"); strings.Join(got, ",") != "SECONDS_15_MINUTE,SECONDS_1_HOUR" {
		t.Fatalf("STATS_TIMES = %v", got)
	}
	if s.Source("NAME") != settings.FromDefault {
		t.Fatalf("source = %s", s.Source("NAME"))
	}
}

func TestFileOverridesAndMergesMapsOneLevelDeep(t *testing.T) {
	s, err := settings.Load(defaults(), settings.Options{File: "testdata/local.yaml", NoEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	if s.String("NAME") != "Joe" {
		t.Errorf("NAME = %q, want Joe", s.String("NAME"))
	}
	fam := s.Map("FAMILY")
	if fam["Sister"] != "Kim" {
		t.Errorf("FAMILY.Sister = %v, want Kim", fam["Sister"])
	}
	if friends, ok := fam["Friends"].([]any); !ok || len(friends) != 2 {
		t.Errorf("FAMILY.Friends lost in merge: %v", fam["Friends"])
	}
	if v, ok := s.Get("HOUSE"); !ok || v != true {
		t.Errorf("HOUSE (no default) = %v, %v", v, ok)
	}
	if s.Int("REDIS_PORT") != 6380 || s.Source("REDIS_PORT") != settings.FromFile {
		t.Errorf("REDIS_PORT = %d from %s", s.Int("REDIS_PORT"), s.Source("REDIS_PORT"))
	}
	if got := s.Strings("STATS_TIMES"); len(got) != 1 || got[0] != "SECONDS_1_HOUR" {
		t.Errorf("lists are replaced, not merged: %v", got)
	}
}

func TestEnvironmentOverridesFileAndFlagsOverrideEnvironment(t *testing.T) {
	s, err := settings.Load(defaults(), settings.Options{
		File:    "testdata/local.yaml",
		Environ: []string{"REDIS_PORT=7000", "NAME=Env", "LOG_STDOUT=False", "UNRELATED=1"},
		Flags:   map[string]string{"NAME": "Flag"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if s.Int("REDIS_PORT") != 7000 || s.Source("REDIS_PORT") != settings.FromEnv {
		t.Errorf("REDIS_PORT = %d from %s, want 7000 from env", s.Int("REDIS_PORT"), s.Source("REDIS_PORT"))
	}
	if s.Bool("LOG_STDOUT") {
		t.Error("LOG_STDOUT=False from env not applied")
	}
	if s.String("NAME") != "Flag" || s.Source("NAME") != settings.FromFlag {
		t.Errorf("NAME = %q from %s, want Flag from flag", s.String("NAME"), s.Source("NAME"))
	}
	if s.Has("UNRELATED") {
		t.Error("environment variables without a setting must not become settings")
	}
}

func TestEnvironmentParsesListsAndMaps(t *testing.T) {
	s, err := settings.Load(defaults(), settings.Options{Environ: []string{
		"STATS_TIMES=SECONDS_1_DAY, SECONDS_1_WEEK",
		"QUEUE_WINDOWS=[5, 10]",
		`PLUGINS={"stats": 300}`,
		`FAMILY={"Sister": "Ann"}`,
		`ANYTHING={"x": [1, 2]}`,
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Strings("STATS_TIMES"); strings.Join(got, "|") != "SECONDS_1_DAY|SECONDS_1_WEEK" {
		t.Errorf("STATS_TIMES = %q", got)
	}
	if got := s.Ints("QUEUE_WINDOWS"); len(got) != 2 || got[0] != 5 || got[1] != 10 {
		t.Errorf("QUEUE_WINDOWS = %v", got)
	}
	plugins := s.IntMap("PLUGINS")
	if plugins["stats"] != 300 || plugins["scraper"] != 100 {
		t.Errorf("PLUGINS not merged one level deep: %v", plugins)
	}
	if s.Map("FAMILY")["Sister"] != "Ann" || s.Map("FAMILY")["Friends"] == nil {
		t.Errorf("FAMILY = %v", s.Map("FAMILY"))
	}
	if m, ok := mustGet(t, s, "ANYTHING").(map[string]any); !ok || m["x"] == nil {
		t.Errorf("ANYTHING = %#v", mustGet(t, s, "ANYTHING"))
	}
}

func TestSplitListDropsBlanksAndEmptyItems(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"localhost:9092", []string{"localhost:9092"}},
		{"scdev", []string{"scdev"}},
		{"zk1:2181,zk2:2181", []string{"zk1:2181", "zk2:2181"}},
		{"a:9092, b:9092", []string{"a:9092", "b:9092"}},
		{" zk1:2181 , ,zk2 ", []string{"zk1:2181", "zk2"}},
		{"", nil},
		{" , ", nil},
	} {
		if got := settings.SplitList(tc.in); !slices.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
			t.Errorf("SplitList(%q) = %#v, want %#v", tc.in, got, tc.want)
		}
	}
}

func TestAnEmptyListFromTheEnvironmentIsAnEmptyList(t *testing.T) {
	s, err := settings.Load(defaults(), settings.Options{Environ: []string{"STATS_TIMES= , "}})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Strings("STATS_TIMES"); got == nil || len(got) != 0 {
		t.Errorf("STATS_TIMES = %#v, want an empty list", got)
	}
}

func mustGet(t *testing.T, s *settings.Settings, name string) any {
	t.Helper()
	v, ok := s.Get(name)
	if !ok {
		t.Fatalf("%s missing", name)
	}
	return v
}

func TestWrongTypesAreClearErrors(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name    string
		file    string
		environ []string
		want    []string
	}{
		{name: "an integer setting given text in the environment", environ: []string{"REDIS_PORT=abc"},
			want: []string{"REDIS_PORT", "env", "want an integer", `"abc"`}},
		{name: "a boolean setting given a word in the file", file: "LOG_STDOUT: maybe\n",
			want: []string{"LOG_STDOUT", "file", "want a boolean"}},
		{name: "a map setting given a list", file: "FAMILY: [1, 2]\n",
			want: []string{"FAMILY", "want a map"}},
		{name: "a list setting given a map", file: "STATS_TIMES: {a: 1}\n",
			want: []string{"STATS_TIMES", "want a list"}},
		{name: "a rank map given a word", environ: []string{`PLUGINS={"x": "high"}`},
			want: []string{"PLUGINS", "key x", "want an integer"}},
		{name: "a number setting given text", environ: []string{"SLEEP_TIME=soon"},
			want: []string{"SLEEP_TIME", "want a number"}},
		{name: "a file that is not a mapping", file: "- just\n- a list\n",
			want: []string{"not a YAML mapping"}},
		{name: "a fractional integer", file: "REDIS_PORT: 6379.5\n",
			want: []string{"REDIS_PORT", "want an integer", "6379.5"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := settings.Options{Environ: tc.environ}
			if tc.environ == nil {
				opts.NoEnv = true
			}
			if tc.file != "" {
				opts.File = filepath.Join(dir, "s.yaml")
				if err := os.WriteFile(opts.File, []byte(tc.file), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err := settings.Load(defaults(), opts)
			if err == nil {
				t.Fatal("Load accepted a value of the wrong type")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestMissingSettingsFileIsAnError(t *testing.T) {
	_, err := settings.Load(defaults(), settings.Options{File: "testdata/nope.yaml", NoEnv: true})
	if err == nil || !strings.Contains(err.Error(), "nope.yaml") {
		t.Fatalf("err = %v", err)
	}
}

func TestLookupReportsMissingAndMistypedSettings(t *testing.T) {
	s, err := settings.Load(defaults(), settings.Options{NoEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := settings.Lookup[int](s, "NOPE"); err == nil {
		t.Error("Lookup of a missing setting succeeded")
	}
	if _, err := settings.Lookup[int](s, "NAME"); err == nil || !strings.Contains(err.Error(), "NAME") {
		t.Errorf("Lookup[int] of a string: %v", err)
	}
	if f, err := settings.Lookup[float64](s, "REDIS_PORT"); err != nil || f != 6379 {
		t.Errorf("ints read as floats: %v, %v", f, err)
	}
	if s.Seconds("SLEEP_TIME") != 500*time.Millisecond || s.Millis("REDIS_PORT") != 6379*time.Millisecond {
		t.Errorf("Seconds/Millis: %v %v", s.Seconds("SLEEP_TIME"), s.Millis("REDIS_PORT"))
	}
	defer func() {
		if recover() == nil {
			t.Error("Int of a string setting did not panic")
		}
	}()
	s.Int("NAME")
}

func TestReturnedListsAndMapsAreCopies(t *testing.T) {
	d := defaults()
	s, err := settings.Load(d, settings.Options{NoEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	s.Strings("STATS_TIMES")[0] = "changed"
	s.IntMap("PLUGINS")["scraper"] = 1
	if s.Strings("STATS_TIMES")[0] != "SECONDS_15_MINUTE" || s.IntMap("PLUGINS")["scraper"] != 100 {
		t.Fatal("callers can change loaded settings through returned values")
	}
	if d["STATS_TIMES"].([]string)[0] != "SECONDS_15_MINUTE" {
		t.Fatal("Load changed the defaults")
	}
}

func TestFlagValuesTakeOnlyFlagsTheUserGave(t *testing.T) {
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	fs.String("log-level", "INFO", "")
	fs.Bool("log-json", false, "")
	set := settings.SetFlag{}
	fs.Var(set, "set", "")
	if err := fs.Parse([]string{"--log-json", "--set", "REDIS_PORT=1234", "--set", "NAME=a=b"}); err != nil {
		t.Fatal(err)
	}
	got := settings.FlagValues(fs, map[string]string{"log-level": "LOG_LEVEL", "log-json": "LOG_JSON"})
	if len(got) != 1 || got["LOG_JSON"] != "true" {
		t.Fatalf("FlagValues = %v", got)
	}
	if set["REDIS_PORT"] != "1234" || set["NAME"] != "a=b" {
		t.Fatalf("--set = %v", set)
	}
	if err := set.Set("novalue"); err == nil {
		t.Fatal("--set without = accepted")
	}
}
