package pipeline

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
)

func testPipeline(t testing.TB, b64 bool, maxBytes int) *Pipeline {
	t.Helper()
	p := New(nil, harness.QuietLogger(t), b64, maxBytes)
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

// Timestamp writes what time.Format writes with the layouts it stands for,
// in and around the years it writes itself, in any zone (written as UTC).
func TestTimestampIsTimeFormatsLayout(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	zone := time.FixedZone("x", -7*3600-1800)
	for _, year := range []int{-1, 0, 1, 999, 1970, 2026, 9999, 10000} {
		for i := range 200 {
			nsec := rng.IntN(1e9)
			if i%4 == 0 {
				nsec %= 1000 // a whole second, and nanoseconds below a microsecond
			}
			at := time.Date(year, time.Month(1+rng.IntN(12)), 1+rng.IntN(31), rng.IntN(24), rng.IntN(60), rng.IntN(60), nsec, zone)
			layout := "2006-01-02T15:04:05.000000"
			if at.Nanosecond() < 1000 {
				layout = "2006-01-02T15:04:05"
			}
			if got, want := Timestamp(at), at.UTC().Format(layout); got != want {
				t.Fatalf("Timestamp(%v) = %q, want %q", at, got, want)
			}
		}
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
		// The 1 MB message, once, and the small rest; not the 60 MB the
		// body escapes to.
		if allocated := after.TotalAlloc - before.TotalAlloc; allocated > 3<<20 {
			t.Fatalf("base64 %v: encoding a message of 1 MB allocated %d MB", b64, allocated>>20)
		}
	}
}

func TestAResultWithAHugeURLIsSentReducedWithAFlagAndAnError(t *testing.T) {
	for _, b64 := range []bool{false, true} {
		long := "http://a.com/?q=" + strings.Repeat("x", 900_000)
		page := &spider.Page{
			URL: long, ResponseURL: long, StatusCode: 200, AppID: "app", CrawlID: "c1",
			ResponseHeaders: map[string][]string{"Content-Type": {"text/html"}}, RequestHeaders: map[string][]string{"User-Agent": {"x"}},
			Links: []spider.Link{{URL: long, Text: "self"}}, Body: "<p>body</p>", RawBody: []byte("<p>body</p>"),
			Attrs: json.RawMessage(`{"keep":"me"}`),
		}
		p := testPipeline(t, b64, 1<<20)
		msg, cut, err := p.encode(page)
		if err != nil || !cut {
			t.Fatalf("base64 %v: cut %v, %v", b64, cut, err)
		}
		if len(msg) > 1<<20-overhead {
			t.Fatalf("base64 %v: a %d-byte message", b64, len(msg))
		}
		var got map[string]any
		if err := json.Unmarshal(msg, &got); err != nil {
			t.Fatal(err)
		}
		if got["url_truncated"] != true || !strings.HasPrefix(long, got["url"].(string)) || len(got["url"].(string)) != urlKeep ||
			got["response_url"] != got["url"] || got["crawlid"] != "c1" || got["attrs"].(map[string]any)["keep"] != "me" {
			t.Fatalf("base64 %v: reduced result %.300v", b64, got)
		}
		if len(got["response_headers"].(map[string]any)) != 0 || len(got["links"].([]any)) != 0 {
			t.Fatalf("base64 %v: headers or links kept", b64)
		}
		if e, _ := got["error"].(string); !strings.Contains(e, "headers dropped") || !strings.Contains(e, "url and response_url cut") {
			t.Fatalf("base64 %v: error %q", b64, got["error"])
		}
		if page.URL != long {
			t.Fatal("the caller's page was changed")
		}
	}
}

func TestAResultThatCannotFitEvenReducedIsTooLarge(t *testing.T) {
	page := &spider.Page{URL: "http://a.com/", Attrs: json.RawMessage(`"` + strings.Repeat("a", 5000) + `"`), Body: "x"}
	_, err := testPipeline(t, false, 4096).Encode(page)
	if !errors.Is(err, ErrTooLarge) || DropReason(err) != "too_large" {
		t.Fatalf("err %v, reason %q", err, DropReason(err))
	}
}

// BenchmarkEncode encodes a page of the test site's size (2 KiB of HTML,
// a dozen links, the usual headers), as the crawler does once per page.
func BenchmarkEncode(b *testing.B) {
	p := testPipeline(b, false, 1<<20)
	body := strings.Repeat(`<li><a href="/page/1/2/3">page "1/2/3"</a></li>`+"\n", 40)
	page := &spider.Page{
		URL: "http://127.0.0.1:8000/page/1/2", ResponseURL: "http://127.0.0.1:8000/page/1/2", StatusCode: 200, StatusMsg: "OK",
		ResponseHeaders: map[string][]string{"Content-Type": {"text/html; charset=utf-8"}, "Date": {"Tue, 25 Nov 2026 03:04:05 GMT"}, "Content-Length": {"2040"}},
		RequestHeaders:  map[string][]string{"Accept": {"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}, "Accept-Language": {"en"}, "User-Agent": {"Scrapy/1.0.4 (+http://scrapy.org)"}},
		Body:            body, Encoding: "utf-8", AppID: "bench", CrawlID: "cost-0", Attrs: json.RawMessage(`{"n":1}`),
	}
	for i := range 12 {
		page.Links = append(page.Links, spider.Link{URL: "http://127.0.0.1:8000/page/1/2/" + strconv.Itoa(i), Text: "page " + strconv.Itoa(i)})
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Encode(page); err != nil {
			b.Fatal(err)
		}
	}
}

// TestPageLinesAreTheLinesOfTheirMap: the fields of a page's two INFO
// lines are written as the map of fields they were before (the same
// keys, kinds and values), in text and JSON, with and without attrs, with
// URLs cut.
func TestPageLinesAreTheLinesOfTheirMap(t *testing.T) {
	pages := []*spider.Page{
		{URL: "http://127.0.0.1/page/1", ResponseURL: "http://127.0.0.1/page/1", StatusCode: 200, StatusMsg: "OK",
			AppID: "bench", CrawlID: "c 1", Encoding: "utf-8"},
		{URL: "http://a.com/" + strings.Repeat("é", 1500), ResponseURL: "http://a.com/x y", StatusCode: 404,
			StatusMsg: "Not Found", AppID: "app=x", CrawlID: "", Attrs: json.RawMessage(`{"k": ["v", 1]}`), Encoding: "cp1252"},
	}
	for _, jsonLines := range []bool{false, true} {
		for _, page := range pages {
			var want, got strings.Builder
			cfg := logfactory.Config{JSON: jsonLines, TextFields: true, Now: func() time.Time { return time.Unix(1e9, 0) }}
			cfg.Output = &want
			viaMap, _ := logfactory.New(cfg)
			cfg.Output = &got
			viaFields, _ := logfactory.New(cfg)
			p := &Pipeline{log: viaFields}

			// The map Publish logged before.
			fields := logfactory.Extra{
				"url": logURL(page.URL), "response_url": logURL(page.ResponseURL), "status_code": page.StatusCode, "status_msg": page.StatusMsg,
				"appid": page.AppID, "crawlid": page.CrawlID, "attrs": page.Attrs, "encoding": page.Encoding,
				"action": "emit", "spiderid": "link",
			}
			viaMap.Info("Scraped page", fields)
			fields["action"], fields["success"] = "ack", true
			viaMap.Info("Sent page to Kafka", fields)

			var array [pageFields + 1]logfactory.Field
			list := p.logFields(array[:0], page, "link")
			viaFields.LogFields(logfactory.LevelInfo, "Scraped page", list)
			list[actionField] = logfactory.String("action", "ack")
			viaFields.LogFields(logfactory.LevelInfo, "Sent page to Kafka", append(list, logfactory.Bool("success", true)))
			if got.String() != want.String() || strings.Count(want.String(), "\n") != 2 {
				t.Fatalf("json %v:\nfields %q\nmap    %q", jsonLines, got.String(), want.String())
			}
		}
	}
}

// BenchmarkTimestamp formats a result's timestamp (once per page).
func BenchmarkTimestamp(b *testing.B) {
	at := time.Date(2026, 11, 29, 6, 17, 35, 976672123, time.UTC)
	for b.Loop() {
		_ = Timestamp(at)
	}
}
