// Package pipeline publishes crawl results: what the original's
// LoggingBeforePipeline and KafkaPipeline do. Each Page gets its timestamp
// (UTC, ISO 8601 as Python's isoformat), its body as UTF-8 text or, with
// KAFKA_BASE_64_ENCODE, the raw bytes in base64, and goes to
// <prefix>.crawled_firehose (and <prefix>.crawled_<appid> with
// KAFKA_APPID_TOPICS). PublishThen tells its caller once Kafka has
// acknowledged it, so the crawler acknowledges the request only then.
//
// A result larger than KAFKA_PRODUCER_MAX_REQUEST_SIZE would be refused by
// Kafka (the original dropped such pages); its body is cut to fit and the
// result carries "truncated": true. One that still does not fit (a huge
// URL) is sent reduced, with "url_truncated" and "error" (see Encode); one
// that cannot be sent at all is logged at ERROR and reported (DropReason).
package pipeline

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/kafkaclient"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/textcut"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/wirejson"
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
// Written digit by digit (time.Format reads its layout every time, about
// 1% of the crawler's CPU per page); years outside 0 to 9999 by Format.
func Timestamp(t time.Time) string {
	t = t.UTC()
	micro := t.Nanosecond() / 1000
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		if micro == 0 {
			return t.Format("2006-01-02T15:04:05")
		}
		return t.Format("2006-01-02T15:04:05.000000")
	}
	hour, minute, second := t.Clock()
	var b [len("2006-01-02T15:04:05.000000")]byte
	digits(b[0:4], year)
	b[4] = '-'
	digits(b[5:7], int(month))
	b[7] = '-'
	digits(b[8:10], day)
	b[10] = 'T'
	digits(b[11:13], hour)
	b[13] = ':'
	digits(b[14:16], minute)
	b[16] = ':'
	digits(b[17:19], second)
	if micro == 0 {
		return string(b[:19])
	}
	b[19] = '.'
	digits(b[20:26], micro)
	return string(b[:])
}

// digits writes n, 0 <= n < 10^len(dst), in dst's width with leading zeros.
func digits(dst []byte, n int) {
	for i := len(dst) - 1; i >= 0; i-- {
		dst[i] = byte('0' + n%10)
		n /= 10
	}
}

// overhead is room left for the Kafka record around the value.
const overhead = 512

// ErrTooLarge: a result that cannot fit in a Kafka message even reduced
// (its fields other than the body, headers, links and URLs are too large:
// attrs, a custom spider's extra fields).
var ErrTooLarge = errors.New("result too large for a Kafka message")

// urlKeep is how much of an oversize URL a reduced result keeps.
const urlKeep = 2048

// Encode returns the message for page: timestamp set, body encoded, cut to
// fit the maximum message size (and then marked "truncated"). The message
// is sized before its body is encoded: a body may be far larger than a
// message can be (DOWNLOAD_MAXSIZE is ten times
// KAFKA_PRODUCER_MAX_REQUEST_SIZE by default) and grows when escaped, so
// only what fits is ever encoded.
//
// A result whose other fields alone do not fit is sent reduced: its
// headers and links dropped, url and response_url cut to their first
// 2048 bytes (with "url_truncated": true), an "error" field saying what
// was cut, and as much of the body as then fits. When even that does not
// fit, Encode fails with ErrTooLarge.
func (p *Pipeline) Encode(page *spider.Page) ([]byte, error) {
	msg, _, err := p.encode(page)
	return msg, err
}

// encode is Encode, also reporting whether anything was cut.
func (p *Pipeline) encode(page *spider.Page) (msg []byte, cut bool, err error) {
	page.Timestamp = Timestamp(p.now())
	text := page.Body
	page.Body = ""
	defer func() { page.Body = text }()
	rest, err := marshalPage(page) // everything but the body
	if err != nil {
		return nil, false, err
	}
	room, over := -1, false // no limit
	if p.maxBytes > 0 {
		room = p.maxBytes - overhead - len(rest)
		over, room = room < 0, max(room, 0)
	}
	if !over {
		msg, cut, err := p.withBody(rest, page, text, room)
		if err != nil || !cut {
			release(rest)
			return msg, false, err
		}
	}
	release(rest)
	// Cut the body to what fits beside the other fields, and mark it.
	out := *page
	out.Extra = maps.Clone(page.Extra)
	if out.Extra == nil {
		out.Extra = map[string]any{}
	}
	out.Extra["truncated"] = true
	if rest, err = marshalPage(&out); err != nil {
		return nil, false, err
	}
	if room = p.maxBytes - overhead - len(rest); room < 0 {
		release(rest)
		if rest, err = p.reduce(&out); err != nil {
			return nil, false, err
		}
		room = p.maxBytes - overhead - len(rest)
	} else {
		p.log.Warning("Cut a page's body to fit the Kafka message size", logfactory.Extra{"url": logURL(page.URL), "max_bytes": p.maxBytes})
	}
	page.Extra = out.Extra // the caller sees the flags, as before
	msg, _, err = p.withBody(rest, &out, text, room)
	release(rest)
	return msg, true, err
}

// reduce drops out's headers and links and cuts its URLs, with an "error"
// field saying so, and returns it encoded without its body; ErrTooLarge
// when that does not fit either.
func (p *Pipeline) reduce(out *spider.Page) ([]byte, error) {
	full := len(out.URL)
	var what []string
	if len(out.ResponseHeaders) > 0 || len(out.RequestHeaders) > 0 {
		out.ResponseHeaders, out.RequestHeaders = nil, nil
		what = append(what, "headers dropped")
	}
	if len(out.Links) > 0 {
		out.Links = nil
		what = append(what, "links dropped")
	}
	if len(out.URL) > urlKeep || len(out.ResponseURL) > urlKeep {
		out.URL, out.ResponseURL = textcut.UTF8(out.URL, urlKeep), textcut.UTF8(out.ResponseURL, urlKeep)
		out.Extra["url_truncated"] = true
		what = append(what, fmt.Sprintf("url and response_url cut to %d bytes", urlKeep))
	}
	what = append(what, "body cut")
	out.Extra["error"] = "result too large for a Kafka message: " + strings.Join(what, ", ")
	rest, err := marshalPage(out)
	if err != nil {
		return nil, err
	}
	if len(rest) > p.maxBytes-overhead {
		release(rest)
		return nil, fmt.Errorf("%w: %d bytes without its body, headers and links, more than %d (url of %d bytes)",
			ErrTooLarge, len(rest), p.maxBytes-overhead, full)
	}
	p.log.Warning("Reduced a result to fit the Kafka message size", logfactory.Extra{
		"url": logURL(out.URL), "appid": out.AppID, "crawlid": out.CrawlID, "max_bytes": p.maxBytes, "error": out.Extra["error"]})
	return rest, nil
}

// logURLMax bounds the URL in log lines.
const logURLMax = 2048

// logURL is u as log lines show it: its first 2048 bytes, "..." after a cut.
func logURL(u string) string {
	if len(u) <= logURLMax {
		return u
	}
	return textcut.UTF8(u, logURLMax) + "..."
}

// emptyBody is the body field of a page encoded without its body. The first
// occurrence in a message is the field itself: the fields before it are
// strings, whose quotes are escaped, and header maps, whose values are lists.
const emptyBody = `"body":""`

// withBody returns rest, a page encoded with an empty body, with the body
// in its body field: the text, escaped, or with KAFKA_BASE_64_ENCODE the
// raw bytes in base64 (cut at whole base64 quanta, so it still decodes), at
// most what takes room bytes encoded (room < 0: no limit), and whether that
// was less than the whole body. The body is encoded once, straight into a
// buffer of about the message's size.
func (p *Pipeline) withBody(rest []byte, page *spider.Page, text string, room int) (msg []byte, cut bool, err error) {
	at := bytes.Index(rest, []byte(emptyBody))
	if at < 0 {
		return nil, false, fmt.Errorf("encode page: no %s in %.200s", emptyBody, rest)
	}
	at += len(emptyBody) - 1 // before the closing quote
	if p.base64 {
		raw := page.RawBody
		if room >= 0 && base64.StdEncoding.EncodedLen(len(raw)) > room {
			raw, cut = raw[:room/4*3], true
		}
		msg = make([]byte, 0, len(rest)+base64.StdEncoding.EncodedLen(len(raw)))
		msg = append(msg, rest[:at]...)
		msg = base64.StdEncoding.AppendEncode(msg, raw)
		return append(msg, rest[at:]...), cut, nil
	}
	size := len(text) + len(text)/8 + 64 // and room for some escapes
	if room >= 0 {
		size = min(size, room)
	}
	msg = make([]byte, 0, len(rest)+size)
	msg = append(msg, rest[:at]...)
	msg, taken := wirejson.AppendText(msg, text, room, wirejson.Go)
	return append(msg, rest[at:]...), taken < len(text), nil
}

// marshalPage encodes page into a buffer of the pool: release it when its
// bytes are copied.
func marshalPage(page *spider.Page) ([]byte, error) {
	buf := scratch.Get().(*[]byte)
	msg, err := page.AppendJSON((*buf)[:0]) // no HTML escaping: bodies keep their < > &
	if err != nil {
		scratch.Put(buf)
		return nil, fmt.Errorf("encode page %s: %w", page.URL, err)
	}
	return msg, nil
}

// scratch holds the buffers pages are encoded in without their body.
var scratch = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// release returns a buffer of marshalPage to the pool, unless it is huge.
func release(b []byte) {
	if cap(b) <= 64<<10 {
		scratch.Put(&b)
	}
}

// PublishThen logs and sends one page. It returns once the page's result
// is encoded and handed to the publisher (kafkaclient.Publisher.PublishThen,
// which may wait for room), calling held (unless nil) once the result
// counts in what the publisher holds: PublishThen keeps nothing of page
// from then on, so once the caller drops it too its body is garbage while
// its result waits for Kafka. then is told, exactly once, what became of
// the page: nil once Kafka acknowledged it (cut: the result was truncated
// or reduced to fit), ctx's error, or an error for a page that can never
// be sent: ErrTooLarge, or kafkaclient.ErrPermanent (Kafka refused it for
// good); DropReason names it. Those are logged at ERROR with the crawl and
// the start of the URL. then is called by the goroutine that read Kafka's
// answer, or before PublishThen returns when the page cannot be sent; it
// must not wait for anything.
//
// The two INFO lines of a page ("Scraped page", then "Sent page to
// Kafka") share one list of fields, changed between them
// (logfactory.LogFields: the lines a map of those fields would give,
// without the map, which was the crawler's largest allocation per page).
func (p *Pipeline) PublishThen(ctx context.Context, spiderID string, page *spider.Page, held func(), then func(cut bool, err error)) {
	fields := p.logFields(make([]logfactory.Field, 0, pageFields+1), page, spiderID)
	p.log.LogFields(logfactory.LevelInfo, "Scraped page", fields)
	who := identify(page)
	msg, cut, err := p.encode(page)
	if err != nil {
		p.log.Error("Dropped a result that cannot be sent to Kafka", p.failFields(who, spiderID, err))
		then(false, err)
		return
	}
	p.pub.PublishThen(ctx, who.appID, msg, held, func(err error) {
		if err != nil {
			if ctx.Err() == nil {
				p.log.Error("Failed to send page to Kafka", p.failFields(who, spiderID, err))
			}
			then(false, err)
			return
		}
		if len(fields) > 0 { // INFO enabled
			fields[actionField] = logfactory.String("action", "ack")
			fields = append(fields, logfactory.Bool("success", true))
		}
		p.log.LogFields(logfactory.LevelInfo, "Sent page to Kafka", fields)
		then(cut, nil)
	})
}

// pageID is what a failure's log line says of its page: no body.
type pageID struct{ url, appID, crawlID string }

func identify(page *spider.Page) pageID {
	return pageID{url: page.URL, appID: page.AppID, crawlID: page.CrawlID}
}

// DropReason is the crawl ledger's reason for a page PublishThen could not
// send: ledger.DroppedTooLarge or ledger.DroppedUnpublished.
func DropReason(err error) ledger.Reason {
	if errors.Is(err, ErrTooLarge) {
		return ledger.DroppedTooLarge
	}
	return ledger.DroppedUnpublished
}

// failFields are what a failure's log line says, at any log level.
func (p *Pipeline) failFields(page pageID, spiderID string, err error) logfactory.Extra {
	return logfactory.Extra{
		"url": logURL(page.url), "url_bytes": len(page.url), "appid": page.appID, "crawlid": page.crawlID,
		"spiderid": spiderID, "action": "ack", "success": false, "exception": err.Error(), "reason": string(DropReason(err)),
	}
}

// pageFields is how many fields logFields gives; actionField is where
// "action" is among them.
const pageFields, actionField = 10, 8

// logFields appends to dst the page's fields the original logs (no body,
// links or headers), "action": "emit" among them; none when INFO is off.
func (p *Pipeline) logFields(dst []logfactory.Field, page *spider.Page, spiderID string) []logfactory.Field {
	if !p.log.Enabled(logfactory.LevelInfo) {
		return dst
	}
	return append(dst,
		logfactory.String("url", logURL(page.URL)), logfactory.String("response_url", logURL(page.ResponseURL)),
		logfactory.Int("status_code", page.StatusCode), logfactory.String("status_msg", page.StatusMsg),
		logfactory.String("appid", page.AppID), logfactory.String("crawlid", page.CrawlID),
		logfactory.Any("attrs", page.Attrs), logfactory.String("encoding", page.Encoding),
		logfactory.String("action", "emit"), logfactory.String("spiderid", spiderID))
}
