// Package pipeline publishes crawl results: what the original's
// LoggingBeforePipeline and KafkaPipeline do. Each Page gets its timestamp
// (UTC, ISO 8601 as Python's isoformat), its body as UTF-8 text or, with
// KAFKA_BASE_64_ENCODE, the raw bytes in base64, and goes to
// <prefix>.crawled_firehose (and <prefix>.crawled_<appid> with
// KAFKA_APPID_TOPICS). Publish returns once Kafka has acknowledged it, so
// the crawler acknowledges the request only then.
//
// A result larger than KAFKA_PRODUCER_MAX_REQUEST_SIZE would be refused by
// Kafka (the original dropped such pages); its body is cut to fit and the
// result carries "truncated": true.
package pipeline

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/kafkaclient"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
)

// Pipeline publishes pages.
type Pipeline struct {
	pub      *kafkaclient.Publisher
	log      *logfactory.Logger
	base64   bool
	maxBytes int
	now      func() time.Time
}

// New returns a pipeline publishing through pub. maxBytes is the largest
// message Kafka takes (KAFKA_PRODUCER_MAX_REQUEST_SIZE); base64 is
// KAFKA_BASE_64_ENCODE.
func New(pub *kafkaclient.Publisher, log *logfactory.Logger, base64 bool, maxBytes int) *Pipeline {
	return &Pipeline{pub: pub, log: log, base64: base64, maxBytes: maxBytes, now: time.Now}
}

// Timestamp formats t as Python's datetime.utcnow().isoformat() does
// ("2016-01-22T04:22:35.976672"; no fraction when it is zero).
func Timestamp(t time.Time) string {
	t = t.UTC()
	if t.Nanosecond()/1000 == 0 {
		return t.Format("2006-01-02T15:04:05")
	}
	return t.Format("2006-01-02T15:04:05.000000")
}

// overhead is room left for the Kafka record around the value.
const overhead = 512

// Encode returns the message for page: timestamp set, body encoded, cut to
// fit the maximum message size. The message is sized before it is built: a
// body may be far larger than a message can be (DOWNLOAD_MAXSIZE is ten
// times KAFKA_PRODUCER_MAX_REQUEST_SIZE by default) and grows when escaped,
// so only what fits is ever encoded.
func (p *Pipeline) Encode(page *spider.Page) ([]byte, error) {
	page.Timestamp = Timestamp(p.now())
	text := page.Body
	if p.maxBytes <= 0 {
		page.Body = p.body(page, text, -1)
		return marshalPage(page)
	}
	limit := p.maxBytes - overhead
	page.Body = ""
	rest, err := marshalPage(page)
	if err != nil {
		return nil, err
	}
	if p.fits(page, text, limit-len(rest)) {
		page.Body = p.body(page, text, -1)
		return marshalPage(page)
	}
	// Cut the body to what fits beside the other fields, and mark it.
	if page.Extra == nil {
		page.Extra = map[string]any{}
	}
	page.Extra["truncated"] = true
	if rest, err = marshalPage(page); err != nil {
		return nil, err
	}
	room := limit - len(rest)
	if room < 0 {
		return nil, fmt.Errorf("page %s: result of %d bytes exceeds %d without its body", page.URL, len(rest), limit)
	}
	page.Body = p.body(page, text, room)
	msg, err := marshalPage(page)
	if err != nil {
		return nil, err
	}
	p.log.Warning("Cut a page's body to fit the Kafka message size", logfactory.Extra{"url": page.URL, "max_bytes": p.maxBytes})
	return msg, nil
}

// fits reports whether the whole body takes at most room bytes encoded.
func (p *Pipeline) fits(page *spider.Page, text string, room int) bool {
	if p.base64 {
		return base64.StdEncoding.EncodedLen(len(page.RawBody)) <= room
	}
	return room >= 0 && len(prefixFitting(text, room)) == len(text)
}

// body is the body field: text, or with KAFKA_BASE_64_ENCODE the raw
// bytes in base64; cut to take at most room bytes encoded (-1: whole).
func (p *Pipeline) body(page *spider.Page, text string, room int) string {
	if !p.base64 {
		if room < 0 {
			return text
		}
		return prefixFitting(text, room)
	}
	raw := page.RawBody
	if room >= 0 {
		raw = raw[:min(len(raw), room/4*3)] // whole base64 quanta: it still decodes
	}
	return base64.StdEncoding.EncodeToString(raw)
}

func marshalPage(page *spider.Page) ([]byte, error) {
	msg, err := marshal(page)
	if err != nil {
		return nil, fmt.Errorf("encode page %s: %w", page.URL, err)
	}
	return msg, nil
}

// marshal encodes a page without HTML-escaping (bodies keep their < > &),
// as Page.MarshalJSON writes it; calling it directly spares the copy
// json.Encoder makes to check its output.
func marshal(page *spider.Page) ([]byte, error) { return page.MarshalJSON() }

// prefixFitting is the longest prefix of s whose JSON string encoding
// (as marshal writes it) takes at most room bytes. It reads no further
// into s than that.
func prefixFitting(s string, room int) string {
	used, end := 0, 0
	for i, r := range s {
		n := utf8.RuneLen(r)
		switch {
		case r == utf8.RuneError && n == 3 && !strings.HasPrefix(s[i:], "\uFFFD"):
			n = 6 // invalid bytes become \ufffd
		case r == '"' || r == '\\' || r == '\n' || r == '\r' || r == '\t' || r == '\b' || r == '\f':
			n = 2
		case r < 0x20 || r == '\u2028' || r == '\u2029':
			n = 6
		}
		if used+n > room {
			break
		}
		used += n
		end = i + len(string(r))
		if r == utf8.RuneError {
			end = i + 1
		}
	}
	return s[:end]
}

// Publish logs and sends one page; it returns once Kafka acknowledged it, or
// with ctx's error, or with an error for a page that can never be sent.
func (p *Pipeline) Publish(ctx context.Context, spiderID string, page *spider.Page) error {
	p.log.Info("Scraped page", p.logFields(page, spiderID, "emit"))
	msg, err := p.Encode(page)
	if err != nil {
		return err
	}
	if err := p.pub.Publish(ctx, page.AppID, msg); err != nil {
		fields := p.logFields(page, spiderID, "ack")
		fields["success"], fields["exception"] = false, err.Error()
		p.log.Error("Failed to send page to Kafka", fields)
		return err
	}
	fields := p.logFields(page, spiderID, "ack")
	fields["success"] = true
	p.log.Info("Sent page to Kafka", fields)
	return nil
}

// logFields are the page's fields the original logs (no body, links or headers).
func (p *Pipeline) logFields(page *spider.Page, spiderID, action string) logfactory.Extra {
	if !p.log.Enabled(logfactory.LevelInfo) {
		return logfactory.Extra{}
	}
	return logfactory.Extra{
		"url": page.URL, "response_url": page.ResponseURL, "status_code": page.StatusCode, "status_msg": page.StatusMsg,
		"appid": page.AppID, "crawlid": page.CrawlID, "attrs": page.Attrs, "encoding": page.Encoding,
		"action": action, "spiderid": spiderID,
	}
}
