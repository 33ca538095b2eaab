package settings

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

func TestDistanceCountsEditsAndTranspositions(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"QUEUE_HITS", "QUEUE_HITS", 0},
		{"QUEUE_HIT", "QUEUE_HITS", 1},
		{"QUEUE_HITS", "QUEUE_HIT", 1},
		{"QUEUE_HITX", "QUEUE_HITS", 1},
		{"REDIS_HOTS", "REDIS_HOST", 1},
		{"SCHEDULER_ITEM_RETRIES", "SCHEUDLER_ITEM_RETRIES", 1},
		{"LOG_LEVL", "LOG_LEVEL", 1},
		{"ab", "ba", 1},
		{"abc", "ca", 3},
		{"", "abc", 3},
		{"KITTEN", "SITTING", 3},
		{"PATH", "SPIDER", 5},
	}
	for _, tt := range tests {
		if got := distance(tt.a, tt.b); got != tt.want {
			t.Errorf("distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestBoundedDistanceStopsOnlyPastItsLimit(t *testing.T) {
	names := append(slices.Clone(clusterNames), "QUEUE_HIT", "REDIS_HOTS", "SCHEDULER_ITEM_RETRIES", "ab", "ba", "badc", "abcd", "")
	for _, a := range names {
		for _, b := range names {
			full := distance(a, b)
			for limit := range 4 {
				if got, want := boundedDistance(a, b, limit), min(full, limit+1); got != want {
					t.Fatalf("boundedDistance(%q, %q, %d) = %d, want %d", a, b, limit, got, want)
				}
			}
		}
	}
}

func TestTheClusterListIsSortedWithoutDuplicates(t *testing.T) {
	if !slices.IsSorted(clusterNames) {
		t.Error("clusterNames is not sorted: KnownToCluster searches it")
	}
	if len(slices.Compact(slices.Clone(clusterNames))) != len(clusterNames) {
		t.Error("clusterNames has duplicates")
	}
	for _, name := range notSettings {
		if !inFamily(name) {
			t.Errorf("notSettings lists %s, which is in no setting family and needs no exception", name)
		}
	}
}

// kafkaMonitorLike are defaults of a component that does not know the
// crawler's settings (QUEUE_HITS, SCHEDULER_QUEUE_REFRESH).
var kafkaMonitorLike = groupOf(map[string]any{"REDIS_HOST": "localhost", "REDIS_PORT": 6379, "LOG_LEVEL": "INFO", "KAFKA_HOSTS": "localhost:9092", "PLUGINS": map[string]int{}})

func TestUnknownNamesAreFoundInEachSourceWithTheirClosestName(t *testing.T) {
	tests := []struct {
		name     string
		defaults Group
		file     string
		env      []string
		flags    map[string]string
		want     []Unknown
	}{
		{"a close typo in the settings file", nil, "QUEUE_HIT: 5\n", nil, nil,
			[]Unknown{{Name: "QUEUE_HIT", Sources: []Source{FromFile}, Suggestion: "QUEUE_HITS"}}},
		{"a close typo in the environment", nil, "", []string{"QUEUE_HIT=5"}, nil,
			[]Unknown{{Name: "QUEUE_HIT", Sources: []Source{FromEnv}, Suggestion: "QUEUE_HITS"}}},
		{"a close typo with --set", nil, "", nil, map[string]string{"QUEUE_HIT": "5"},
			[]Unknown{{Name: "QUEUE_HIT", Sources: []Source{FromFlag}, Suggestion: "QUEUE_HITS"}}},
		{"a transposition", nil, "", []string{"REDIS_HOTS=redis"}, nil,
			[]Unknown{{Name: "REDIS_HOTS", Sources: []Source{FromEnv}, Suggestion: "REDIS_HOST"}}},
		{"the original's misspelt setting is suggested for the right spelling", nil, "", nil, map[string]string{"SCHEDULER_ITEM_RETRIES": "3"},
			[]Unknown{{Name: "SCHEDULER_ITEM_RETRIES", Sources: []Source{FromFlag}, Suggestion: "SCHEUDLER_ITEM_RETRIES"}}},
		{"a far typo gets no suggestion", nil, "QUEUE_XYZZY: 5\n", nil, map[string]string{"TOTALLY_NEW": "1"},
			[]Unknown{{Name: "QUEUE_XYZZY", Sources: []Source{FromFile}}, {Name: "TOTALLY_NEW", Sources: []Source{FromFlag}}}},
		{"a file key in lower case suggests the name in capitals", nil, "queue_hits: 5\n", nil, nil,
			[]Unknown{{Name: "queue_hits", Sources: []Source{FromFile}, Suggestion: "QUEUE_HITS"}}},
		{"a name given twice is named once with both sources", nil, "QUEUE_HIT: 5\n", []string{"QUEUE_HIT=6"}, map[string]string{"QUEUE_HIT": "7"},
			[]Unknown{{Name: "QUEUE_HIT", Sources: []Source{FromFile, FromEnv, FromFlag}, Suggestion: "QUEUE_HITS"}}},
		{"the component's own names win a tie", groupOf(map[string]any{"QUEUE_HITZ": 1}), "", nil, map[string]string{"QUEUE_HIT": "5"},
			[]Unknown{{Name: "QUEUE_HIT", Sources: []Source{FromFlag}, Suggestion: "QUEUE_HITZ"}}},
		{"an env variable of a setting family is named", kafkaMonitorLike, "", []string{"SCHEDULER_NEW_THING=1", "SC_LOG_FORMAT=x", "REDIS_URL=redis://x"}, nil,
			[]Unknown{{Name: "REDIS_URL", Sources: []Source{FromEnv}}, {Name: "SCHEDULER_NEW_THING", Sources: []Source{FromEnv}}, {Name: "SC_LOG_FORMAT", Sources: []Source{FromEnv}}}},
		{"an env variable outside the families is named when close to a setting", nil, "", []string{"SCHEUDLER_PERSIST=true", "SPIDR=link"}, nil,
			[]Unknown{{Name: "SCHEUDLER_PERSIST", Sources: []Source{FromEnv}, Suggestion: "SCHEDULER_PERSIST"}, {Name: "SPIDR", Sources: []Source{FromEnv}, Suggestion: "SPIDER"}}},
		{"settings other components know are fine in a shared file and environment", kafkaMonitorLike,
			"QUEUE_HITS: 5\n", []string{"SCHEDULER_QUEUE_REFRESH=10", "SC_LOG_LEVEL=DEBUG", "FLASK_PORT=5343", "LEDGER_TTL=60"}, nil, nil},
		{"with --set a setting only other components use is named", kafkaMonitorLike, "", nil, map[string]string{"QUEUE_HITS": "5"},
			[]Unknown{{Name: "QUEUE_HITS", Sources: []Source{FromFlag}, Elsewhere: true}}},
		{"unrelated environment is left alone", nil, "", []string{
			"PATH=/usr/bin", "HOME=/root", "USER=sc", "SHELL=/bin/sh", "TERM=xterm", "LANG=C.UTF-8", "PWD=/", "OLDPWD=/",
			"HOSTNAME=crawler-1", "LOGNAME=sc", "TZ=UTC", "CI=true", "GOFLAGS=-mod=mod", "GOPATH=/go", "http_proxy=http://p:3128",
			"HTTPS_PROXY=http://p:3128", "NO_PROXY=localhost", "SC_IMAGE=x", "SC_TAG=dev", "SC_HOSTNAME_PREFIX=sc", "DEBUG=1",
			"KAFKA_IMAGE=apache/kafka", "REDIS_IMAGE=redis", "ZOOKEEPER_IMAGE=zk", "KAFKA_EXTERNAL_HOST=h", "ZOOKEEPER_JAR=/z.jar",
			"KUBERNETES_SERVICE_HOST=10.0.0.1", "KUBERNETES_PORT=tcp://10.0.0.1:443", "KUBERNETES_PORT_443_TCP_ADDR=10.0.0.1",
			"REDIS_SERVICE_HOST=10.0.0.2", "REDIS_SERVICE_PORT=6379", "REDIS_SERVICE_PORT_CLIENT=6379", "REDIS_PORT_6379_TCP=tcp://10.0.0.2:6379",
			"REDIS_PORT_6379_TCP_PROTO=tcp", "REDIS_PORT_6379_TCP_PORT=6379", "KAFKA_PORT=tcp://10.0.0.3:9092", "ZOOKEEPER_PORT=tcp://10.0.0.4:2181",
		}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defaults := groupOf(map[string]any{"QUEUE_HITS": 10, "SPIDER": "link"})
			if tt.defaults != nil {
				defaults = tt.defaults
			}
			opts := Options{Environ: tt.env, Flags: tt.flags}
			if opts.Environ == nil {
				opts.Environ = []string{}
			}
			if tt.file != "" {
				opts.File = filepath.Join(t.TempDir(), "local.yaml")
				if err := os.WriteFile(opts.File, []byte(tt.file), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			s, err := Load(defaults, opts)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Unknown(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Unknown() =\n %+v\nwant\n %+v", got, tt.want)
			}
		})
	}
}

func TestValuesOfUnknownNamesAreKept(t *testing.T) {
	// Plugins and spiders may read settings of their own that no default names.
	s, err := Load(groupOf(map[string]any{"QUEUE_HITS": 10}), Options{Environ: []string{}, Flags: map[string]string{"MY_PLUGIN_TOKEN": "abc"}})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := s.Get("MY_PLUGIN_TOKEN"); !ok || v != "abc" {
		t.Errorf("MY_PLUGIN_TOKEN = %v, %v", v, ok)
	}
	if len(s.Unknown()) != 1 {
		t.Errorf("Unknown() = %v, want MY_PLUGIN_TOKEN named", s.Unknown())
	}
}

func TestNoEnvLooksAtNoEnvironment(t *testing.T) {
	t.Setenv("QUEUE_HIT", "5")
	s, err := Load(groupOf(map[string]any{"QUEUE_HITS": 10}), Options{NoEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	if u := s.Unknown(); len(u) != 0 {
		t.Errorf("Unknown() = %v with NoEnv", u)
	}
}

func TestUnknownWarningsReadAsSentences(t *testing.T) {
	tests := []struct {
		u    Unknown
		want string
	}{
		{Unknown{Name: "QUEUE_HIT", Sources: []Source{FromFlag}, Suggestion: "QUEUE_HITS"}, "Unknown setting QUEUE_HIT (from --set); did you mean QUEUE_HITS?"},
		{Unknown{Name: "QUEUE_HIT", Sources: []Source{FromFile}, Suggestion: "QUEUE_HITS"}, "Unknown setting QUEUE_HIT (from the settings file); did you mean QUEUE_HITS?"},
		{Unknown{Name: "REDIS_URL", Sources: []Source{FromEnv}}, "Unknown setting REDIS_URL (from the environment)"},
		{Unknown{Name: "X", Sources: []Source{FromFile, FromEnv}}, "Unknown setting X (from the settings file and the environment)"},
		{Unknown{Name: "QUEUE_HITS", Sources: []Source{FromFlag}, Elsewhere: true}, "Unknown setting QUEUE_HITS (from --set); only other components use it"},
	}
	for _, tt := range tests {
		if got := tt.u.String(); got != tt.want {
			t.Errorf("got  %q\nwant %q", got, tt.want)
		}
	}
}

func BenchmarkLoadWithUnknownNames(b *testing.B) {
	defaults := Group{}
	for _, name := range clusterNames {
		defaults[name] = Decl{Name: name, Default: ""}
	}
	env := os.Environ()
	for range 50 - min(len(env), 50) {
		env = append(env, "SOME_UNRELATED_VARIABLE_OF_A_CONTAINER=1")
	}
	for b.Loop() {
		if _, err := Load(defaults, Options{Environ: env}); err != nil {
			b.Fatal(err)
		}
	}
}
