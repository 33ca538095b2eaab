package console

import (
	"errors"
	"fmt"

	"github.com/scrapycluster/scrapy-cluster-go/rest/access"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/domainconfig"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// The console's settings (all Go additions).
var (
	Enabled       = settings.Bool("UI_ENABLED", true, "serve the [console](console.md) under `/ui/`").Ours()
	ResultsBuffer = settings.Int("UI_RESULTS_BUFFER", 1000, "crawl results (url, status, ids, time; never bodies) each REST instance keeps for the console's Live and crawl pages").Ours().Within(1, maxResults)
	Refresh       = settings.Seconds("UI_REFRESH", 5.0, "seconds between refreshes of the console's Overview, Crawls and crawl pages; `0` never").Ours().AtLeast(0)
	LiveAtStart   = settings.Bool("UI_LIVE_AT_START", false, "read the crawled firehose for the console from start-up, not from the console's first use").Ours()
	AppID         = settings.String("UI_APPID", "console", "appid of the Zookeeper API requests the console's Domains page sends (3 to 40 characters)").Ours()
)

// Settings are the console's settings: its own, the access settings
// (package access) and the domain configuration's place (ZOOKEEPER_HOSTS,
// ZOOKEEPER_ASSIGN_PATH, ZOOKEEPER_ID, as the crawlers read them), for the
// Domains page.
func Settings() settings.Group {
	return settings.Join(settings.Declare(Enabled, ResultsBuffer, Refresh, LiveAtStart, AppID), access.Settings(), domainconfig.Settings())
}

// maxResults bounds UI_RESULTS_BUFFER: a result is at most about 2.5 KiB
// (its URL is cut at maxURL), so the buffer stays under 256 MiB.
const maxResults = 100000

// checkSettings rejects values the console cannot run with that the
// settings' bounds (which settings.Load enforces) allow, naming the setting.
func checkSettings(s *settings.Settings) error {
	var errs []error
	if id := AppID.From(s); len(id) < 3 || len(id) > 40 {
		errs = append(errs, fmt.Errorf("setting %s: must be 3 to 40 characters (an appid), got %q", AppID.Name(), id))
	}
	if _, err := domainconfig.PathFromSettings(s); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
