package pipeline

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"runtime"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
)

func testPipeline(t *testing.T, b64 bool, maxBytes int) *Pipeline {
	t.Helper()
	cfg := logfactory.DefaultConfig()
	cfg.Level = "ERROR"
	log, err := logfactory.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := New(nil, log, b64, maxBytes)
	p.now = func() time.Time { return time.Date(2016, 1, 22, 4, 22, 35, 976672000, time.UTC) }
	return p
}

func TestTimestampIsPythonsIsoformat(t *testing.T) {
	if got := Timestamp(time.Date(2016, 1, 22, 4, 22, 35, 976672123, time.UTC)); got != "2016-01-22T04:22:35.976672" {
		t.Fatal(got)
	}
	if got := Timestamp(time.Date(2016, 1, 22, 4, 22, 35, 0, time.UTC)); got != "2016-01-22T04:22:35" {
		t.Fatal(got)
	}
}

func TestEncodeSetsTimestampAndBody(t *testing.T) {
	page := &spider.Page{URL: "http://a.com", Body: "héllo", RawBody: []byte("h\xe9llo"), AppID: "testapp", CrawlID: "c"}
	msg, err := testPipeline(t, false, 1<<20).Encode(&spider.Page{URL: "http://a.com", Body: "<p>a & b</p>"})
	if err != nil || !strings.Contains(string(msg), `"body":"<p>a & b</p>"`) {
		t.Fatalf("HTML in the body is escaped: %s, %v", msg, err)
	}
	msg, err = testPipeline(t, false, 1<<20).Encode(page)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(msg, &got); err != nil {
		t.Fatal(err)
	}
	if got["timestamp"] != "2016-01-22T04:22:35.976672" || got["body"] != "héllo" {
		t.Fatalf("encoded %s", msg)
	}
	page.Body = ""
	msg, _ = testPipeline(t, true, 1<<20).Encode(page)
	_ = json.Unmarshal(msg, &got)
	raw, _ := base64.StdEncoding.DecodeString(got["body"].(string))
	if string(raw) != "h\xe9llo" {
		t.Fatalf("base64 body %q", got["body"])
	}
}

func TestEncodeCutsAnOversizeBodyToFit(t *testing.T) {
	for _, b64 := range []bool{false, true} {
		body := strings.Repeat("é<\"x", 200_000) // escaping and multi-byte runes
		page := &spider.Page{URL: "http://a.com", Body: body, RawBody: []byte(body), AppID: "testapp", CrawlID: "c"}
		msg, err := testPipeline(t, b64, 100_000).Encode(page)
		if err != nil {
			t.Fatal(err)
		}
		if len(msg) > 100_000-overhead {
			t.Fatalf("base64 %v: message of %d bytes", b64, len(msg))
		}
		var got map[string]any
		if err := json.Unmarshal(msg, &got); err != nil {
			t.Fatal(err)
		}
		if got["truncated"] != true || len(got["body"].(string)) < 20_000 {
			t.Fatalf("base64 %v: truncated %v, body of %d bytes", b64, got["truncated"], len(got["body"].(string)))
		}
		if b64 {
			if _, err := base64.StdEncoding.DecodeString(got["body"].(string)); err != nil {
				t.Fatalf("cut base64 body does not decode: %v", err)
			}
		}
	}
}

func TestPrefixFittingIsTheLongestPrefixTheEncoderFitsInRoom(t *testing.T) {
	s := "a\x00\b\f\n\r\t\"\\é\u2028\xff<>&z"
	empty, _ := marshal(&spider.Page{})
	encodedLen := func(body string) int {
		msg, err := marshal(&spider.Page{Body: body})
		if err != nil {
			t.Fatal(err)
		}
		return len(msg) - len(empty)
	}
	for room := 0; room <= encodedLen(s); room++ {
		prefix := prefixFitting(s, room)
		if !strings.HasPrefix(s, prefix) || encodedLen(prefix) > room {
			t.Fatalf("room %d: prefix %q takes %d bytes", room, prefix, encodedLen(prefix))
		}
		if rest := s[len(prefix):]; rest != "" {
			_, size := utf8.DecodeRuneInString(rest)
			if longer := s[:len(prefix)+size]; encodedLen(longer) <= room {
				t.Fatalf("room %d: %q fits too, not only %q", room, longer, prefix)
			}
		}
	}
	if got := prefixFitting(s, encodedLen(s)); got != s {
		t.Fatalf("the whole string fits in its own length, got %q", got)
	}
}

func TestEncodeOnlyEncodesWhatFits(t *testing.T) {
	// 10 MB of NUL bytes escape to 60 MB; a message holds 1 MB.
	body := strings.Repeat("\x00", 10<<20)
	page := &spider.Page{URL: "http://a.com", Body: body, RawBody: []byte(body)}
	for _, b64 := range []bool{false, true} {
		p := testPipeline(t, b64, 1<<20)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		page.Body, page.Extra = body, nil
		msg, err := p.Encode(page)
		runtime.ReadMemStats(&after)
		if err != nil || len(msg) > 1<<20 || page.Extra["truncated"] != true {
			t.Fatalf("base64 %v: %d bytes, %v", b64, len(msg), err)
		}
		// A few copies of the 1 MB message, not of the 60 MB the body
		// escapes to.
		if allocated := after.TotalAlloc - before.TotalAlloc; allocated > 10<<20 {
			t.Fatalf("base64 %v: encoding a message of 1 MB allocated %d MB", b64, allocated>>20)
		}
	}
}
