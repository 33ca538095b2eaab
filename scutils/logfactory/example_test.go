package logfactory_test

import (
	"fmt"
	"os"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
)

// A fixed clock keeps the examples' output stable; real loggers leave Now nil.
func exampleClock() time.Time { return time.Date(2017, 2, 1, 15, 27, 48, 814000000, time.Local) }

// JSON timestamps are UTC; a UTC clock keeps them independent of TZ.
func exampleUTCClock() time.Time { return time.Date(2017, 2, 1, 20, 29, 24, 548895000, time.UTC) }

func Example() {
	cfg := logfactory.DefaultConfig()
	cfg.Level = "DEBUG"
	cfg.IncludeExtra = true
	cfg.Output = os.Stdout // instead of Stdout/the file, and without the "Logging to" line
	cfg.Now = exampleClock
	logger, err := logfactory.New(cfg)
	if err != nil {
		panic(err)
	}
	defer logger.Close()

	logger.Debug("debug output 1")
	logger.Warn("warn output", logfactory.Extra{"key": "value", "key2": "value2"})
	logger.Critical("critical fault, closing") // logs; never exits
	// Output:
	// 2017-02-01 15:27:48,814 [scrapy-cluster] DEBUG: debug output 1
	// 2017-02-01 15:27:48,814 [scrapy-cluster] WARNING: warn output {'key': 'value', 'key2': 'value2'}
	// 2017-02-01 15:27:48,814 [scrapy-cluster] CRITICAL: critical fault, closing
}

func Example_json() {
	logger, err := logfactory.New(logfactory.Config{
		Name:   "kafka-monitor",
		JSON:   true,
		Output: os.Stdout,
		Now:    exampleUTCClock,
	})
	if err != nil {
		panic(err)
	}
	logger.Debug("not written at INFO")
	logger.Info("Info output closing.", logfactory.Extra{"sum": 4, "level": "mine"})
	// Output:
	// {"message": "Info output closing.", "logger": "kafka-monitor", "timestamp": "2017-02-01T20:29:24.548895Z", "level": "INFO", "fields.level": "mine", "sum": 4}
}

// The spec's example_lf.py at DEBUG: the DEBUG callback runs three times and
// the WARN callback once, for the line whose extras match its criteria.
func ExampleLogger_RegisterCallback() {
	logger, err := logfactory.New(logfactory.Config{Level: "DEBUG", Output: os.Stdout, Now: exampleClock})
	if err != nil {
		panic(err)
	}
	myVar := 1
	_ = logger.RegisterCallback("DEBUG", func(string, map[string]any) { myVar += 5 }, nil)
	_ = logger.RegisterCallback("WARN", func(string, map[string]any) { myVar *= 2 }, map[string]any{"key": "value"})

	logger.Debug("debug output 1")
	logger.Warn("warn output", logfactory.Extra{"key": "value", "key2": "value2"})
	logger.Warn("warn output 2")
	logger.Debug("debug output 2")
	logger.Critical("critical fault, closing")
	logger.Debug("debug output 3")
	fmt.Println("my_var =", myVar)
	// Output:
	// 2017-02-01 15:27:48,814 [scrapy-cluster] DEBUG: debug output 1
	// 2017-02-01 15:27:48,814 [scrapy-cluster] WARNING: warn output
	// 2017-02-01 15:27:48,814 [scrapy-cluster] WARNING: warn output 2
	// 2017-02-01 15:27:48,814 [scrapy-cluster] DEBUG: debug output 2
	// 2017-02-01 15:27:48,814 [scrapy-cluster] CRITICAL: critical fault, closing
	// 2017-02-01 15:27:48,814 [scrapy-cluster] DEBUG: debug output 3
	// my_var = 22
}

func ExampleLogger_With() {
	root, err := logfactory.New(logfactory.Config{JSON: true, Output: os.Stdout, Now: exampleUTCClock})
	if err != nil {
		panic(err)
	}
	crawler := root.Named("sc-crawler").With(logfactory.Extra{"spiderid": "link"})
	crawler.Info("Crawled page", logfactory.Extra{"status_code": 200})
	// Output:
	// {"message": "Crawled page", "logger": "sc-crawler", "timestamp": "2017-02-01T20:29:24.548895Z", "level": "INFO", "spiderid": "link", "status_code": 200}
}

// Text lines end with their extra fields as logfmt key=value pairs (setting
// LOG_TEXT_FIELDS, on by default): the well-known keys first, quoted where
// needed.
func Example_textFields() {
	logger, err := logfactory.New(logfactory.Config{Name: "sc-crawler", TextFields: true, Output: os.Stdout, Now: exampleClock})
	if err != nil {
		panic(err)
	}
	logger.Error("Gave up retrying the request; dropped", logfactory.Extra{
		"url": "http://example.com/a", "appid": "testapp", "crawlid": "abc123", "spiderid": "link",
		"error": "dial tcp 127.0.0.1:9: connect: connection refused", "retry_times": 3,
	})
	// Output:
	// 2017-02-01 15:27:48,814 [sc-crawler] ERROR: Gave up retrying the request; dropped url=http://example.com/a appid=testapp crawlid=abc123 spiderid=link error="dial tcp 127.0.0.1:9: connect: connection refused" retry_times=3
}
