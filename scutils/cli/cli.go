// Package cli gives every Scrapy Cluster binary the same command-line
// surface for settings: --settings FILE (YAML, the localsettings.py role),
// repeatable --set NAME=VALUE, the log flags (--log-level, --log-json,
// --log-file), and a `settings` sub-command that prints the effective
// settings and where each came from.
package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/kafkaclient"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisconn"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// SettingsFlags holds the settings-related flags of one command tree.
type SettingsFlags struct {
	logPrefix string
	logStderr bool
	file      string
	set       settings.SetFlag
	bindings  map[string]string // flag name -> setting name
	cmd       *cobra.Command
}

// AddSettingsFlags adds --settings, --set and the log flags to cmd as
// persistent flags, so every sub-command has them.
func AddSettingsFlags(cmd *cobra.Command) *SettingsFlags {
	f := &SettingsFlags{set: settings.SetFlag{}, bindings: map[string]string{}, cmd: cmd}
	pf := cmd.PersistentFlags()
	pf.StringVarP(&f.file, "settings", "s", "", "YAML settings file overriding the built-in defaults (environment variables and flags override it)")
	pf.Var(f.set, "set", "override any setting, e.g. --set REDIS_HOST=redis (repeatable; lists as a,b or JSON)")
	pf.String("log-level", "", "log level: DEBUG, INFO, WARNING, ERROR or CRITICAL (setting LOG_LEVEL)")
	pf.Bool("log-json", false, "write logs as JSON lines (setting LOG_JSON)")
	pf.Bool("log-file", false, "write logs to the rotating file LOG_DIR/LOG_FILE instead of stdout (setting LOG_STDOUT=false)")
	f.bindLogFlags()
	return f
}

// bindLogFlags makes --log-level and --log-json set the log settings of
// the prefix.
func (f *SettingsFlags) bindLogFlags() {
	log := logfactory.Settings(f.logPrefix)
	f.Bind("log-level", log.Level.Name())
	f.Bind("log-json", log.JSON.Name())
}

// SetLogPrefix makes the log flags set <prefix>LOG_* settings, for a
// component whose log settings are named so (the crawler's SC_LOG_LEVEL...).
func (f *SettingsFlags) SetLogPrefix(prefix string) {
	f.logPrefix = prefix
	f.bindLogFlags()
	for _, name := range []string{"log-level", "log-json", "log-file"} {
		if fl := f.cmd.PersistentFlags().Lookup(name); fl != nil {
			fl.Usage = strings.ReplaceAll(fl.Usage, "setting LOG_", "setting "+prefix+"LOG_")
			fl.Usage = strings.ReplaceAll(fl.Usage, "LOG_DIR/LOG_FILE", prefix+"LOG_DIR/"+prefix+"LOG_FILE")
		}
	}
}

// LogToStderr makes Open's logger write to standard error where the
// settings say stdout, for a tool whose stdout is its output (kafkadump).
func (f *SettingsFlags) LogToStderr() { f.logStderr = true }

// Bind makes flag (already defined on the command) override setting.
func (f *SettingsFlags) Bind(flag, setting string) { f.bindings[flag] = setting }

// Open is how a command starts: it loads the settings (Load), opens the
// logger they describe (the <prefix>LOG_* settings, see SetLogPrefix; named
// by <prefix>LOGGER_NAME, or after the root command when the component has
// no such setting), and logs a WARNING for each setting nobody knows
// (settings.Unknown):
//
//	Unknown setting QUEUE_HIT (from --set); did you mean QUEUE_HITS?
//
// Unknown names are not an error: the original accepted anything, the
// settings file and environment are shared by every component, and plugins
// and spiders may read settings of their own. The caller closes the logger.
func (f *SettingsFlags) Open(declared settings.Group) (*settings.Settings, *logfactory.Logger, error) {
	s, err := f.Load(declared)
	if err != nil {
		return nil, nil, err
	}
	cfg := logfactory.Settings(f.logPrefix).Config(s)
	if cfg.Name == "" {
		cfg.Name = f.cmd.Root().Name()
	}
	if f.logStderr && cfg.Stdout {
		cfg.Output = f.cmd.ErrOrStderr()
	}
	log, err := logfactory.New(cfg)
	if err != nil {
		return nil, nil, err
	}
	for _, u := range s.Unknown() {
		log.Warning(u.String())
	}
	return s, log, nil
}

// Load loads a component's settings with the file, environment and flags
// the user gave. Commands that run start with Open, which also names
// unknown settings.
func (f *SettingsFlags) Load(declared settings.Group) (*settings.Settings, error) {
	flags := settings.FlagValues(f.cmd.Flags(), f.bindings)
	if lf := f.cmd.Flags().Lookup("log-file"); lf != nil && lf.Changed {
		toFile, _ := strconv.ParseBool(lf.Value.String())
		flags[logfactory.Settings(f.logPrefix).Stdout.Name()] = strconv.FormatBool(!toFile)
	}
	for name, value := range f.set {
		if _, bound := flags[name]; !bound {
			flags[name] = value
		}
	}
	return settings.Load(declared, settings.Options{File: f.file, Flags: flags})
}

// SettingsCommand returns a `settings` sub-command printing the effective
// settings as YAML, each with its source, so an operator can see what a
// process will run with.
func SettingsCommand(declared settings.Group, f *SettingsFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "settings",
		Short: "Print the effective settings and where each value comes from",
		Long: "Print every setting as YAML with the source of its value (default, file, env or flag).\n" +
			"The output is a valid settings file: edit it and pass it back with --settings.\n" +
			"Settings no component knows (typos) are named on standard error, with the closest known name.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := f.Load(declared)
			if err != nil {
				return err
			}
			// On stderr, so that stdout stays a valid settings file.
			for _, u := range s.Unknown() {
				fmt.Fprintln(cmd.ErrOrStderr(), "WARNING:", u)
			}
			return PrintSettings(cmd.OutOrStdout(), s)
		},
	}
}

// PrintSettings writes s as YAML with a comment naming each value's source.
func PrintSettings(w io.Writer, s *settings.Settings) error {
	for _, name := range s.Names() {
		v, _ := s.Get(name)
		out, err := yaml.Marshal(map[string]any{name: v})
		if err != nil {
			return fmt.Errorf("print setting %s: %w", name, err)
		}
		text := strings.TrimRight(string(out), "\n")
		lines := strings.Split(text, "\n")
		lines[0] += "  # " + string(s.Source(name))
		if _, err := fmt.Fprintln(w, strings.Join(lines, "\n")); err != nil {
			return err
		}
	}
	return nil
}

// ComponentSettings are the settings every component shares: REDIS_*,
// KAFKA_* and LOGGER_NAME and LOG_*, with loggerName and logFile as the
// defaults of LOGGER_NAME and LOG_FILE. A component joins its own settings
// to them (settings.Join).
func ComponentSettings(loggerName, logFile string) settings.Group {
	return settings.Join(redisconn.Settings(), kafkaclient.Settings(), logfactory.Settings("").Group(loggerName, logFile))
}
