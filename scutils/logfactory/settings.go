package logfactory

import "github.com/scrapycluster/scrapy-cluster-go/scutils/settings"

// Defaults are the LOG_* settings every component shares, with file as the
// component's LOG_FILE (e.g. "kafka_monitor.log"):
//
//	LOG_LEVEL        "INFO"
//	LOG_JSON         false
//	LOG_TEXT_FIELDS  true    text lines end with their fields as key=value; false: the message alone
//	LOG_STDOUT       true    false writes to LOG_DIR/LOG_FILE, rotated
//	LOG_DIR          "logs"
//	LOG_FILE         file
//	LOG_MAX_BYTES    10 MiB
//	LOG_BACKUPS      5
func Defaults(file string) settings.Defaults { return PrefixedDefaults("", file) }

// PrefixedDefaults are Defaults with every name prefixed, for components
// whose settings name them so: the crawler's are SC_LOG_LEVEL, SC_LOG_FILE, ...
func PrefixedDefaults(prefix, file string) settings.Defaults {
	return settings.Defaults{
		prefix + "LOG_LEVEL":       LevelInfo.String(),
		prefix + "LOG_JSON":        false,
		prefix + "LOG_TEXT_FIELDS": true,
		prefix + "LOG_STDOUT":      true,
		prefix + "LOG_DIR":         DefaultDir,
		prefix + "LOG_FILE":        file,
		prefix + "LOG_MAX_BYTES":   DefaultMaxBytes,
		prefix + "LOG_BACKUPS":     DefaultBackups,
	}
}

// ConfigFromSettings returns the Config for the LOG_* settings, with name as
// the logger name (e.g. "kafka-monitor").
func ConfigFromSettings(s *settings.Settings, name string) Config {
	return PrefixedConfigFromSettings(s, "", name)
}

// PrefixedConfigFromSettings is ConfigFromSettings for PrefixedDefaults.
func PrefixedConfigFromSettings(s *settings.Settings, prefix, name string) Config {
	return Config{
		Name:       name,
		Level:      s.String(prefix + "LOG_LEVEL"),
		JSON:       s.Bool(prefix + "LOG_JSON"),
		TextFields: s.Bool(prefix + "LOG_TEXT_FIELDS"),
		Stdout:     s.Bool(prefix + "LOG_STDOUT"),
		Dir:        s.String(prefix + "LOG_DIR"),
		File:       s.String(prefix + "LOG_FILE"),
		MaxBytes:   int64(s.Int(prefix + "LOG_MAX_BYTES")),
		Backups:    s.Int(prefix + "LOG_BACKUPS"),
	}
}
