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
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
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
// fit the maximum message size (and then marked "truncated"). The message
// is sized before it is built: a body may be far larger than a message can
// be (DOWNLOAD_MAXSIZE is ten times KAFKA_PRODUCER_MAX_REQUEST_SIZE by
// default) and grows when escaped, so only what fits is ever encoded, once,
// into a message of its size.
func (p *Pipeline) Encode(page *spider.Page) ([]byte, error) {
	page.Timestamp = Timestamp(p.now())
	text := page.Body
	page.Body = ""
	defer func() { page.Body = text }()
	rest, err := marshalPage(page) // everything but the body
	if err != nil {
		return nil, err
	}
	room := -1 // no limit
	if p.maxBytes > 0 {
		room = p.maxBytes - overhead - len(rest)
	}
	body := p.bodyField(page, text, room)
	if body.cut {
		// Cut the body to what fits beside the other fields, and mark it.
		if page.Extra == nil {
			page.Extra = map[string]any{}
		}
		page.Extra["truncated"] = true
		if rest, err = marshalPage(page); err != nil {
			return nil, err
		}
		room = p.maxBytes - overhead - len(rest)
		if room < 0 {
			return nil, fmt.Errorf("page %s: result of %d bytes exceeds %d without its body", page.URL, len(rest), p.maxBytes-overhead)
		}
		body = p.bodyField(page, text, room)
		p.log.Warning("Cut a page's body to fit the Kafka message size", logfactory.Extra{"url": page.URL, "max_bytes": p.maxBytes})
	}
	return withBody(rest, body)
}

// bodyPart is what goes in the body field: text, escaped, or raw bytes in
// base64 (KAFKA_BASE_64_ENCODE); size is its encoded length.
type bodyPart struct {
	text string
	raw  []byte
	b64  bool
	size int
	cut  bool // less than the whole body
}

// bodyField is the body field: the text, or the raw bytes in base64 (cut
// at whole base64 quanta, so it still decodes), at most what takes room
// bytes encoded (room < 0: no limit).
func (p *Pipeline) bodyField(page *spider.Page, text string, room int) bodyPart {
	if p.base64 {
		raw, cut := page.RawBody, false
		if room >= 0 && base64.StdEncoding.EncodedLen(len(raw)) > room {
			raw, cut = raw[:room/4*3], true
		}
		return bodyPart{raw: raw, b64: true, size: base64.StdEncoding.EncodedLen(len(raw)), cut: cut}
	}
	_, n, size := jsonString(nil, text, room)
	return bodyPart{text: text[:n], size: size, cut: n < len(text)}
}

// emptyBody is the body field of a page encoded without its body. The first
// occurrence in a message is the field itself: the fields before it are
// strings, whose quotes are escaped, and header maps, whose values are lists.
const emptyBody = `"body":""`

// withBody returns msg, a page encoded with an empty body, with body in
// its body field, built in one buffer of the message's size.
func withBody(msg []byte, body bodyPart) ([]byte, error) {
	at := bytes.Index(msg, []byte(emptyBody))
	if at < 0 {
		return nil, fmt.Errorf("encode page: no %s in %.200s", emptyBody, msg)
	}
	at += len(emptyBody) - 1 // before the closing quote
	out := make([]byte, 0, len(msg)+body.size)
	out = append(out, msg[:at]...)
	if body.b64 {
		out = base64.StdEncoding.AppendEncode(out, body.raw)
	} else {
		out, _, _ = jsonString(out, body.text, -1)
	}
	return append(out, msg[at:]...), nil
}

func marshalPage(page *spider.Page) ([]byte, error) {
	msg, err := page.MarshalJSON() // no HTML escaping: bodies keep their < > &
	if err != nil {
		return nil, fmt.Errorf("encode page %s: %w", page.URL, err)
	}
	return msg, nil
}

// jsonString escapes s as encoding/json does inside a string, without HTML
// escaping: '"', '\\' and control characters escaped (\b \f \n \r \t
// short, others \u00xx), U+2028 and U+2029 as \u2028 and \u2029, invalid
// UTF-8 as \ufffd. It stops before the first character that would take the
// escaped text past room bytes (room < 0: no limit) and returns dst with
// the escaped text appended (dst nil: only measured), how many bytes of s
// it took and how many it wrote.
func jsonString(dst []byte, s string, room int) (out []byte, taken, size int) {
	plain := 0 // start of the run of bytes written as they are
	flush := func(end int) {
		if dst != nil {
			dst = append(dst, s[plain:end]...)
		}
	}
	i := 0
	for i < len(s) {
		c, width, esc := s[i], 1, ""
		if c < utf8.RuneSelf {
			switch c {
			case '"':
				esc = `\"`
			case '\\':
				esc = `\\`
			case '\b':
				esc = `\b`
			case '\f':
				esc = `\f`
			case '\n':
				esc = `\n`
			case '\r':
				esc = `\r`
			case '\t':
				esc = `\t`
			default:
				if c < 0x20 {
					esc = `\u00` + string(lowerHex[c>>4]) + string(lowerHex[c&0xf])
				}
			}
		} else {
			var r rune
			r, width = utf8.DecodeRuneInString(s[i:])
			switch {
			case r == utf8.RuneError && width == 1:
				esc = `\ufffd`
			case r == '\u2028':
				esc = `\u2028`
			case r == '\u2029':
				esc = `\u2029`
			}
		}
		n := width
		if esc != "" {
			n = len(esc)
		}
		if room >= 0 && size+n > room {
			break
		}
		if esc != "" {
			flush(i)
			if dst != nil {
				dst = append(dst, esc...)
			}
			plain = i + width
		}
		size += n
		i += width
	}
	flush(i)
	return dst, i, size
}

const lowerHex = "0123456789abcdef"

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
