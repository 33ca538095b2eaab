package cli_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/cli"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisconn"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

func run(t *testing.T, declared settings.Group, args ...string) (string, error) {
	t.Helper()
	root := &cobra.Command{Use: "x", SilenceUsage: true, SilenceErrors: true}
	f := cli.AddSettingsFlags(root)
	root.PersistentFlags().Int("redis-port", 0, "")
	f.Bind("redis-port", "REDIS_PORT")
	root.AddCommand(cli.SettingsCommand(declared, f))
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

func TestSettingsCommandShowsValuesAndSources(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "local.yaml")
	if err := os.WriteFile(file, []byte("REDIS_HOST: from-file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LOG_JSON", "true")
	declared := settings.Join(
		redisconn.Settings(), logfactory.Settings("").Group("x", "x.log"),
		settings.Declare(redisconn.Port.WithDefault(7000), settings.Map("PLUGINS", map[string]any{"a": 1}, "plugins")),
	)
	out, err := run(t, declared, "settings", "--settings", file, "--redis-port", "7001",
		"--log-level", "DEBUG", "--log-file", "--set", "PLUGINS={b: 2}")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"REDIS_HOST: from-file  # file", "REDIS_PORT: 7001  # flag", "LOG_LEVEL: DEBUG  # flag",
		"LOG_JSON: true  # env", "LOG_STDOUT: false  # flag", "PLUGINS:  # flag\n    a: 1\n    b: 2",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestBadSettingValueFailsTheCommand(t *testing.T) {
	_, err := run(t, redisconn.Settings(), "settings", "--set", "REDIS_PORT=x")
	if err == nil || !strings.Contains(err.Error(), "REDIS_PORT") {
		t.Fatalf("err = %v", err)
	}
}

func TestLogPrefixRebindsTheLogFlags(t *testing.T) {
	log := logfactory.Settings("SC_")
	declared := log.Group("sc-crawler", "sc_crawler.log")
	root, flags := cli.NewRoot("crawler", "short", "long", declared)
	flags.SetLogPrefix("SC_")
	var got *settings.Settings
	root.RunE = func(*cobra.Command, []string) error {
		var err error
		got, err = flags.Load(declared)
		return err
	}
	root.SetArgs([]string{"--log-level", "DEBUG", "--log-json", "--log-file"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if cfg := log.Config(got); cfg.Level != "DEBUG" || !cfg.JSON || cfg.Stdout {
		t.Fatalf("SC_LOG_LEVEL %q SC_LOG_JSON %v SC_LOG_STDOUT %v", cfg.Level, cfg.JSON, cfg.Stdout)
	}
	if usage := root.PersistentFlags().Lookup("log-file").Usage; !strings.Contains(usage, "SC_LOG_DIR/SC_LOG_FILE") || !strings.Contains(usage, "setting SC_LOG_STDOUT=false") {
		t.Fatalf("usage %q", usage)
	}
}
