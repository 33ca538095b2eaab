package logfactory

import "github.com/scrapycluster/scrapy-cluster-go/scutils/settings"

// LogSettings are the log settings every component has, under one prefix:
// LOGGER_NAME, LOG_LEVEL, ... for all but the crawler, whose are
// SC_LOGGER_NAME, SC_LOG_LEVEL, ..., as in the original.
type LogSettings struct {
	LoggerName, Level, Dir, File settings.Setting[string]
	JSON, TextFields, Stdout     settings.Setting[bool]
	MaxBytes, Backups            settings.Setting[int]
}

// Settings declares the log settings under prefix ("" or the crawler's
// "SC_"). A component declares them with Group, giving its logger name and
// log file.
func Settings(prefix string) LogSettings {
	return LogSettings{
		LoggerName: settings.String(prefix+"LOGGER_NAME", DefaultName, "logger name (the `logger` field of JSON lines)"),
		Level:      settings.String(prefix+"LOG_LEVEL", LevelInfo.String(), "DEBUG, INFO, WARNING, ERROR or CRITICAL (`--log-level`)"),
		JSON:       settings.Bool(prefix+"LOG_JSON", false, "JSON lines instead of text (`--log-json`)"),
		TextFields: settings.Bool(prefix+"LOG_TEXT_FIELDS", true, "text lines end with their fields as `key=value`; false: the message alone, as the original ([logs](production.md#logs))").Ours(),
		Stdout:     settings.Bool(prefix+"LOG_STDOUT", true, "log to stdout; false: to the rotating file "+prefix+"LOG_DIR/"+prefix+"LOG_FILE (`--log-file`)"),
		Dir:        settings.String(prefix+"LOG_DIR", DefaultDir, "directory of the log file"),
		File:       settings.String(prefix+"LOG_FILE", DefaultFile, "name of the log file"),
		MaxBytes:   settings.Int(prefix+"LOG_MAX_BYTES", DefaultMaxBytes, "size at which the log file is rotated"),
		Backups:    settings.Int(prefix+"LOG_BACKUPS", DefaultBackups, "rotated files kept"),
	}
}

// Group declares the settings with name and file as the defaults of the
// logger name and the log file (e.g. "kafka-monitor", "kafka_monitor.log").
func (l LogSettings) Group(name, file string) settings.Group {
	return settings.Declare(l.LoggerName.WithDefault(name), l.Level, l.JSON, l.TextFields, l.Stdout, l.Dir,
		l.File.WithDefault(file), l.MaxBytes, l.Backups)
}

// Config reads the settings. When the component has no logger name
// setting, Name is "" (New's default).
func (l LogSettings) Config(s *settings.Settings) Config {
	name, _ := l.LoggerName.Lookup(s)
	return Config{
		Name:       name,
		Level:      l.Level.From(s),
		JSON:       l.JSON.From(s),
		TextFields: l.TextFields.From(s),
		Stdout:     l.Stdout.From(s),
		Dir:        l.Dir.From(s),
		File:       l.File.From(s),
		MaxBytes:   int64(l.MaxBytes.From(s)),
		Backups:    l.Backups.From(s),
	}
}
