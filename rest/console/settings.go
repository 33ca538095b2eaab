package console

import (
	"errors"
	"fmt"
	"maps"

	"github.com/scrapycluster/scrapy-cluster-go/rest/access"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/domainconfig"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// The console's settings (all Go additions), with their defaults.
const (
	// SettingEnabled serves the console under /ui/ (default true).
	SettingEnabled = "UI_ENABLED"
	// SettingResults is how many crawl results the Live page's buffer
	// keeps, per REST instance (default 1000; only url, status, ids and
	// time, never the bodies).
	SettingResults = "UI_RESULTS_BUFFER"
	// SettingRefresh is how often the Overview, Crawls and crawl pages
	// refresh themselves, in seconds (default 5; 0 never).
	SettingRefresh = "UI_REFRESH"
	// SettingLiveAtStart starts reading the crawled firehose when the
	// service starts rather than when the console is first used (default
	// false).
	SettingLiveAtStart = "UI_LIVE_AT_START"
	// SettingAppID is the appid of the Zookeeper API requests the Domains
	// page sends (default "console").
	SettingAppID = "UI_APPID"
)

// Defaults are the console's settings with their defaults: its own, the
// access settings (package access) and the domain configuration's place
// (ZOOKEEPER_HOSTS, ZOOKEEPER_ASSIGN_PATH, ZOOKEEPER_ID, as the crawlers
// read them), for the Domains page.
//
//	UI_ENABLED        true       serve the console under /ui/
//	UI_RESULTS_BUFFER 1000       crawl results kept for the Live and crawl pages
//	UI_REFRESH        5          seconds between refreshes of the Overview, Crawls and crawl pages; 0 never
//	UI_LIVE_AT_START  false      read the crawled firehose from start-up, not from the console's first use
//	UI_APPID          "console"  appid of the domain changes the console sends
//	UI_AUTH_USER      ""         basic-auth user of the console ("" open; see access)
//	UI_AUTH_PASSWORD  ""         its password
//	API_TOKEN         ""         bearer token the API requires ("" open)
func Defaults() settings.Defaults {
	d := settings.Defaults{
		SettingEnabled:     true,
		SettingResults:     1000,
		SettingRefresh:     5.0,
		SettingLiveAtStart: false,
		SettingAppID:       "console",
	}
	maps.Copy(d, access.Defaults())
	maps.Copy(d, domainconfig.Defaults())
	return d
}

// maxResults bounds UI_RESULTS_BUFFER: a result is at most about 2.5 KiB
// (its URL is cut at maxURL), so the buffer stays under 256 MiB.
const maxResults = 100000

// checkSettings rejects values the console cannot run with, naming the setting.
func checkSettings(s *settings.Settings) error {
	var errs []error
	if n := s.Int(SettingResults); n < 1 || n > maxResults {
		errs = append(errs, fmt.Errorf("setting %s: must be from 1 to %d, got %d", SettingResults, maxResults, n))
	}
	if s.Float(SettingRefresh) < 0 {
		errs = append(errs, fmt.Errorf("setting %s: must not be negative, got %v", SettingRefresh, s.Float(SettingRefresh)))
	}
	if n := len(s.String(SettingAppID)); n < 3 || n > 40 {
		errs = append(errs, fmt.Errorf("setting %s: must be 3 to 40 characters (an appid), got %q", SettingAppID, s.String(SettingAppID)))
	}
	if _, err := domainconfig.PathFromSettings(s); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
