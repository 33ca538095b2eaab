package spider

import (
	"encoding/json"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/extract"
)

// Page is one crawl result, published to <prefix>.crawled_firehose as the
// spec's crawl result JSON. The crawler's pipeline sets Timestamp and
// encodes Body (UTF-8 text, or base64 of RawBody with KAFKA_BASE_64_ENCODE).
type Page struct {
	URL             string              `json:"url"`
	ResponseURL     string              `json:"response_url"`
	StatusCode      int                 `json:"status_code"`
	StatusMsg       string              `json:"status_msg"`
	ResponseHeaders map[string][]string `json:"response_headers"`
	RequestHeaders  map[string][]string `json:"request_headers"`
	Body            string              `json:"body"`
	Encoding        string              `json:"encoding"`
	Links           []Link              `json:"links"`
	Attrs           json.RawMessage     `json:"attrs"`
	AppID           string              `json:"appid"`
	CrawlID         string              `json:"crawlid"`
	Timestamp       string              `json:"timestamp"`

	// RawBody is the body as fetched, for KAFKA_BASE_64_ENCODE.
	RawBody []byte `json:"-"`
	// Extra are fields a custom spider adds to its results; they cannot
	// replace the standard fields.
	Extra map[string]any `json:"-"`
	// Doc, when set (NewPage of a Response with ShareParse), is the Body
	// parsed once for both the links (package links) and the crawl's
	// extract rules, which release it.
	Doc *extract.Doc `json:"-"`
	// MaxLinks is the most links of the page a spider follows (the
	// Response's; links.Follow reads it); 0: no limit.
	MaxLinks int `json:"-"`
}

// Link is a link found on a page.
type Link struct {
	URL  string `json:"url"`
	Text string `json:"text"`
}
