package logfactory

import "github.com/scrapycluster/scrapy-cluster-go/scutils/settings"

// Defaults are the LOG_* settings every component shares, with file as the
// component's LOG_FILE (e.g. "kafka_monitor.log"):
//
//	LOG_LEVEL      "INFO"
//	LOG_JSON       false
//	LOG_STDOUT     true    false writes to LOG_DIR/LOG_FILE, rotated
//	LOG_DIR        "logs"
//	LOG_FILE       file
//	LOG_MAX_BYTES  10 MiB
//	LOG_BACKUPS    5
func Defaults(file string) settings.Defaults {
	return settings.Defaults{
		"LOG_LEVEL":     LevelInfo.String(),
		"LOG_JSON":      false,
		"LOG_STDOUT":    true,
		"LOG_DIR":       DefaultDir,
		"LOG_FILE":      file,
		"LOG_MAX_BYTES": DefaultMaxBytes,
		"LOG_BACKUPS":   DefaultBackups,
	}
}

// ConfigFromSettings returns the Config for the LOG_* settings, with name as
// the logger name (e.g. "kafka-monitor").
func ConfigFromSettings(s *settings.Settings, name string) Config {
	return Config{
		Name:     name,
		Level:    s.String("LOG_LEVEL"),
		JSON:     s.Bool("LOG_JSON"),
		Stdout:   s.Bool("LOG_STDOUT"),
		Dir:      s.String("LOG_DIR"),
		File:     s.String("LOG_FILE"),
		MaxBytes: int64(s.Int("LOG_MAX_BYTES")),
		Backups:  s.Int("LOG_BACKUPS"),
	}
}
