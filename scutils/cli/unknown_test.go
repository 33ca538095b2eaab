package cli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/cli"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// warnDefaults are a component's settings that include QUEUE_HITS.
func warnDefaults() settings.Group {
	return settings.Join(cli.ComponentSettings("thing", "x.log"), settings.Declare(settings.Int("QUEUE_HITS", 10, "hits")))
}

func TestOpenWarnsOfEachUnknownSettingWithItsSource(t *testing.T) {
	file := filepath.Join(t.TempDir(), "local.yaml")
	if err := os.WriteFile(file, []byte("REDIS_HOTS: redis\nMY_PLUGIN_TOKEN: abc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LOG_LEVL", "DEBUG")
	t.Setenv("SCHEDULER_QUEUE_REFRESH", "5") // another component's: no warning
	t.Setenv("KAFKA_HOST", "kafka:9092")
	defaults := warnDefaults()
	root, flags := cli.NewRoot("thing", "short", "long", defaults)
	flags.LogToStderr()
	var token any
	root.RunE = func(*cobra.Command, []string) error {
		s, log, err := flags.Open(defaults)
		if err != nil {
			return err
		}
		defer log.Close()
		token, _ = s.Get("MY_PLUGIN_TOKEN")
		return nil
	}
	var stderr bytes.Buffer
	root.SetErr(&stderr)
	root.SetArgs([]string{"--settings", file, "--set", "QUEUE_HIT=5", "--set", "TOTALLY_NEW=1"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"[thing] WARNING: Unknown setting KAFKA_HOST (from the environment); did you mean KAFKA_HOSTS?",
		"[thing] WARNING: Unknown setting LOG_LEVL (from the environment); did you mean LOG_LEVEL?",
		"[thing] WARNING: Unknown setting MY_PLUGIN_TOKEN (from the settings file)",
		"[thing] WARNING: Unknown setting QUEUE_HIT (from --set); did you mean QUEUE_HITS?",
		"[thing] WARNING: Unknown setting REDIS_HOTS (from the settings file); did you mean REDIS_HOST?",
		"[thing] WARNING: Unknown setting TOTALLY_NEW (from --set)",
	}
	// Only the names this test set: the environment it inherits is not its own.
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		_, msg, _ := strings.Cut(line, " [thing] ")
		for _, name := range []string{"KAFKA_HOST ", "LOG_LEVL", "MY_PLUGIN_TOKEN", "QUEUE_HIT ", "REDIS_HOTS", "TOTALLY_NEW", "SCHEDULER_", " PATH ", " HOME "} {
			if strings.Contains(msg, name) {
				got = append(got, "[thing] "+msg)
				break
			}
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if token != "abc" {
		t.Errorf("MY_PLUGIN_TOKEN = %v: an unknown setting's value must be kept", token)
	}
}

func TestRunServiceNamesUnknownSettingsInTheComponentsLog(t *testing.T) {
	dir := t.TempDir()
	defaults := warnDefaults()
	root, flags := cli.NewRoot("thing", "short", "long", defaults)
	root.RunE = func(cmd *cobra.Command, _ []string) error {
		return cli.RunService(cmd.Context(), flags, defaults, func(context.Context, *settings.Settings, *logfactory.Logger, redis.UniversalClient) (cli.Service, error) {
			return &fakeService{}, nil
		})
	}
	root.SetArgs([]string{"--log-file", "--set", "LOG_DIR=" + dir, "--set", "QUEUE_HIT=5"})
	_ = root.Execute() // the fake service stops with an error
	logged, err := os.ReadFile(filepath.Join(dir, "x.log"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "[thing] WARNING: Unknown setting QUEUE_HIT (from --set); did you mean QUEUE_HITS?\n"; !strings.Contains(string(logged), want) {
		t.Errorf("log lacks %q:\n%s", want, logged)
	}
}

func TestSettingsCommandNamesUnknownSettingsOnStderr(t *testing.T) {
	root, _ := cli.NewRoot("thing", "short", "long", warnDefaults())
	var stdout, stderr bytes.Buffer
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	root.SetArgs([]string{"settings", "--set", "QUEUE_HIT=5"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if want := "WARNING: Unknown setting QUEUE_HIT (from --set); did you mean QUEUE_HITS?\n"; stderr.String() != want {
		t.Errorf("stderr %q, want %q", stderr.String(), want)
	}
	if !strings.Contains(stdout.String(), "QUEUE_HIT: \"5\"  # flag") || strings.Contains(stdout.String(), "WARNING") {
		t.Errorf("stdout should be the settings alone:\n%s", stdout.String())
	}
}
