package settings_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// The settings of the tests, declared as a component declares its own.
var (
	name         = settings.String("NAME", "Bill", "a name")
	family       = settings.Map("FAMILY", map[string]any{"Friends": []any{"Joe", "Mark"}, "Sister": "Kathy"}, "a family")
	redisPort    = settings.Int("REDIS_PORT", 6379, "a port")
	logStdout    = settings.Bool("LOG_STDOUT", true, "a switch")
	sleepTime    = settings.Seconds("SLEEP_TIME", 0.5, "a time in seconds")
	lingerMS     = settings.Millis("LINGER_MS", 25, "a time in milliseconds")
	statsTimes   = settings.Strings("STATS_TIMES", []string{"SECONDS_15_MINUTE", "SECONDS_1_HOUR"}, "a list")
	queueWindows = settings.Ints("QUEUE_WINDOWS", []int{60, 3600}, "a list of numbers")
	headers      = settings.StringMap("HEADERS", map[string]string{"Accept": "text/html"}, "a map of texts")
	ratio        = settings.Float("RATIO", 0.25, "a number")
)

// plugins is a rank map (map[string]int) and anything a setting without a
// typed default: the loader takes both, though no component declares one.
var (
	plugins  = settings.Decl{Name: "PLUGINS", Default: map[string]int{"scraper": 100, "action": 200}}
	anything = settings.Decl{Name: "ANYTHING"}
)

func defaults() settings.Group {
	return settings.Declare(name, family, redisPort, logStdout, sleepTime, lingerMS, statsTimes, queueWindows, headers, ratio, plugins, anything)
}

func intMap(t *testing.T, s *settings.Settings, name string) map[string]int {
	t.Helper()
	m, err := settings.Lookup[map[string]int](s, name)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestDefaultsAloneAreReturnedUnchanged(t *testing.T) {
	s, err := settings.Load(defaults(), settings.Options{NoEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	if name.From(s) != "Bill" || redisPort.From(s) != 6379 || !logStdout.From(s) {
		t.Fatalf("got %v", s.All())
	}
	if got := statsTimes.From(s); strings.Join(got, ",") != "SECONDS_15_MINUTE,SECONDS_1_HOUR" {
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
	if name.From(s) != "Joe" {
		t.Errorf("NAME = %q, want Joe", name.From(s))
	}
	fam := family.From(s)
	if fam["Sister"] != "Kim" {
		t.Errorf("FAMILY.Sister = %v, want Kim", fam["Sister"])
	}
	if friends, ok := fam["Friends"].([]any); !ok || len(friends) != 2 {
		t.Errorf("FAMILY.Friends lost in merge: %v", fam["Friends"])
	}
	if v, ok := s.Get("HOUSE"); !ok || v != true {
		t.Errorf("HOUSE (no default) = %v, %v", v, ok)
	}
	if redisPort.From(s) != 6380 || s.Source("REDIS_PORT") != settings.FromFile {
		t.Errorf("REDIS_PORT = %d from %s", redisPort.From(s), s.Source("REDIS_PORT"))
	}
	if got := statsTimes.From(s); len(got) != 1 || got[0] != "SECONDS_1_HOUR" {
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
	if redisPort.From(s) != 7000 || s.Source("REDIS_PORT") != settings.FromEnv {
		t.Errorf("REDIS_PORT = %d from %s, want 7000 from env", redisPort.From(s), s.Source("REDIS_PORT"))
	}
	if logStdout.From(s) {
		t.Error("LOG_STDOUT=False from env not applied")
	}
	if name.From(s) != "Flag" || s.Source("NAME") != settings.FromFlag {
		t.Errorf("NAME = %q from %s, want Flag from flag", name.From(s), s.Source("NAME"))
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
	if got := statsTimes.From(s); strings.Join(got, "|") != "SECONDS_1_DAY|SECONDS_1_WEEK" {
		t.Errorf("STATS_TIMES = %q", got)
	}
	if got := queueWindows.From(s); len(got) != 2 || got[0] != 5 || got[1] != 10 {
		t.Errorf("QUEUE_WINDOWS = %v", got)
	}
	plugins := intMap(t, s, "PLUGINS")
	if plugins["stats"] != 300 || plugins["scraper"] != 100 {
		t.Errorf("PLUGINS not merged one level deep: %v", plugins)
	}
	if family.From(s)["Sister"] != "Ann" || family.From(s)["Friends"] == nil {
		t.Errorf("FAMILY = %v", family.From(s))
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
	if got := statsTimes.From(s); got == nil || len(got) != 0 {
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
}

func TestDeclarationsReadTheirValuesTyped(t *testing.T) {
	s, err := settings.Load(defaults(), settings.Options{Environ: []string{"SLEEP_TIME=0.25", "LINGER_MS=5", "RATIO=2", `HEADERS={"X-A": "b"}`}})
	if err != nil {
		t.Fatal(err)
	}
	if got := sleepTime.From(s); got != 250*time.Millisecond {
		t.Errorf("SLEEP_TIME = %v, want 250ms", got)
	}
	if got := lingerMS.From(s); got != 5*time.Millisecond {
		t.Errorf("LINGER_MS = %v, want 5ms", got)
	}
	if got := ratio.From(s); got != 2 {
		t.Errorf("RATIO = %v, want 2", got)
	}
	if got := headers.From(s); len(got) != 2 || got["X-A"] != "b" || got["Accept"] != "text/html" {
		t.Errorf("HEADERS = %v, want both headers (maps merge)", got)
	}
	s.Set("REDIS_PORT", 7000.0) // Set stores any value; From converts it
	if got := redisPort.From(s); got != 7000 {
		t.Errorf("REDIS_PORT after Set = %v", got)
	}
}

func TestADeclarationNeedsTheComponentToDeclareIt(t *testing.T) {
	s, err := settings.Load(settings.Declare(name), settings.Options{NoEnv: true, Flags: map[string]string{"REDIS_PORT": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := redisPort.Lookup(s); ok {
		t.Errorf("Lookup of an undeclared setting = %v, true (a value given under its name is no declaration)", v)
	}
	if v, ok := name.Lookup(s); !ok || v != "Bill" {
		t.Errorf("Lookup(NAME) = %q, %v", v, ok)
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "REDIS_PORT") {
			t.Errorf("From of an undeclared setting: recovered %v, want a panic naming it", r)
		}
	}()
	redisPort.From(s)
}

func TestWithDefaultAndOursChangeACopy(t *testing.T) {
	addr := settings.String("ADMIN_ADDR", "", "the admin endpoint")
	mine := addr.WithDefault(":9412").Ours()
	if addr.Default() != "" || addr.Decl().Ours {
		t.Errorf("the declaration changed: %+v", addr.Decl())
	}
	if d := mine.Decl(); d.Default != ":9412" || !d.Ours || d.Doc != "the admin endpoint" || d.Name != "ADMIN_ADDR" {
		t.Errorf("WithDefault(...).Ours() = %+v", d)
	}
	whole := settings.Seconds("HEARTBEAT_TIMEOUT", 120, "").WithDefault(time.Minute)
	if d := whole.Decl().Default; d != 60 {
		t.Errorf("an int seconds setting's new default is stored as %#v, want int 60", d)
	}
	frac := settings.Seconds("SLEEP_TIME", 0.1, "").WithDefault(250 * time.Millisecond)
	if d := frac.Decl().Default; d != 0.25 {
		t.Errorf("a float seconds setting's new default is stored as %#v, want 0.25", d)
	}
	defer func() {
		if recover() == nil {
			t.Error("a fraction of a second as the default of an int seconds setting did not panic")
		}
	}()
	settings.Seconds("HEARTBEAT_TIMEOUT", 120, "").WithDefault(1500 * time.Millisecond)
}

func TestJoinTakesTheLastDeclarationOfAName(t *testing.T) {
	addr := settings.String("ADMIN_ADDR", "", "the admin endpoint")
	g := settings.Join(settings.Declare(addr, name), settings.Declare(addr.WithDefault(":9410")))
	if len(g) != 2 || g["ADMIN_ADDR"].Default != ":9410" {
		t.Errorf("Join = %+v", g)
	}
	if got := g.Names(); len(got) != 2 || got[0] != "ADMIN_ADDR" || got[1] != "NAME" {
		t.Errorf("Names() = %q", got)
	}
	defer func() {
		if recover() == nil {
			t.Error("Declare took one name twice")
		}
	}()
	settings.Declare(addr, addr.WithDefault("x"))
}

func TestReturnedListsAndMapsAreCopies(t *testing.T) {
	s, err := settings.Load(defaults(), settings.Options{NoEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	statsTimes.From(s)[0] = "changed"
	family.From(s)["Sister"] = "changed"
	headers.From(s)["Accept"] = "changed"
	if statsTimes.From(s)[0] != "SECONDS_15_MINUTE" || family.From(s)["Sister"] != "Kathy" || headers.From(s)["Accept"] != "text/html" {
		t.Fatal("callers can change loaded settings through returned values")
	}
	if statsTimes.Default()[0] != "SECONDS_15_MINUTE" || family.Default()["Sister"] != "Kathy" {
		t.Fatal("Load or From changed the declared defaults")
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

func TestBoundedSettingsRefuseValuesOutOfBoundFromEverySource(t *testing.T) {
	hits := settings.Int("QUEUE_HITS", 10, "").AtLeast(1)
	lock := settings.Seconds("LOCK_TIME", 6.0, "").AtLeast(100 * time.Millisecond)
	wait := settings.Millis("KAFKA_CONSUMER_TIMEOUT", 50, "").Positive()
	ratio := settings.Float("RATIO", 0.5, "").Positive()
	port := settings.Int("FLASK_PORT", 5343, "").Within(0, 65535)
	group := settings.Declare(hits, lock, wait, ratio, port)
	for _, tc := range []struct {
		name string
		opts settings.Options
		want []string
	}{
		{"an integer below its minimum in the environment", settings.Options{Environ: []string{"QUEUE_HITS=0"}},
			[]string{"setting QUEUE_HITS from env: must be at least 1, got 0"}},
		{"seconds below a fractional minimum as a flag", settings.Options{NoEnv: true, Flags: map[string]string{"LOCK_TIME": "0.05"}},
			[]string{"setting LOCK_TIME from flag: must be at least 0.1, got 0.05"}},
		{"zero milliseconds for a positive setting", settings.Options{Environ: []string{"KAFKA_CONSUMER_TIMEOUT=0"}},
			[]string{"setting KAFKA_CONSUMER_TIMEOUT from env: must be positive, got 0"}},
		{"a negative number for a positive setting", settings.Options{Environ: []string{"RATIO=-0.5"}},
			[]string{"setting RATIO", "must be positive, got -0.5"}},
		{"a number above its range in the file", settings.Options{NoEnv: true, File: "testdata/port.yaml"},
			[]string{"settings file testdata/port.yaml: setting FLASK_PORT from file: must be from 0 to 65535, got 70000"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := settings.Load(group, tc.opts)
			if err == nil {
				t.Fatal("Load accepted a value out of bound")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	s, err := settings.Load(group, settings.Options{Environ: []string{"QUEUE_HITS=1", "LOCK_TIME=0.1", "KAFKA_CONSUMER_TIMEOUT=1", "RATIO=0.01", "FLASK_PORT=65535"}})
	if err != nil {
		t.Fatalf("values on the bound: %v", err)
	}
	if hits.From(s) != 1 || lock.From(s) != 100*time.Millisecond || wait.From(s) != time.Millisecond || ratio.From(s) != 0.01 || port.From(s) != 65535 {
		t.Errorf("read %v %v %v %v %v", hits.From(s), lock.From(s), wait.From(s), ratio.From(s), port.From(s))
	}
	if b := hits.Decl().Bound; b != "at least 1" {
		t.Errorf("QUEUE_HITS's bound reads %q", b)
	}
}

func TestABoundTheDefaultBreaksOrATypeWithoutOrderPanics(t *testing.T) {
	for name, declare := range map[string]func(){
		"a default below the minimum":  func() { settings.Int("QUEUE_HITS", 0, "").AtLeast(1) },
		"a new default out of bound":   func() { settings.Int("QUEUE_HITS", 10, "").Positive().WithDefault(0) },
		"a bound on a text setting":    func() { settings.String("NAME", "x", "").Positive() },
		"a bound on a boolean setting": func() { settings.Bool("ON", true, "").Positive() },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			declare()
		})
	}
}
