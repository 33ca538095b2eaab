package harness

import (
	"io"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
)

// QuietLogger is a Log Factory logger with the default configuration at
// level ERROR, for a component under test that should log its errors only.
func QuietLogger(tb testing.TB) *logfactory.Logger {
	tb.Helper()
	cfg := logfactory.DefaultConfig()
	cfg.Level = "ERROR"
	log, err := logfactory.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return log
}

// Logger is the logger cfg configures (logfactory.New) writing to out
// instead of where cfg says; it fails tb when cfg is not valid.
func Logger(tb testing.TB, cfg logfactory.Config, out io.Writer) *logfactory.Logger {
	tb.Helper()
	cfg.Output = out
	log, err := logfactory.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return log
}
