package spider_test

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
)

func quickStartResponse(t *testing.T) *spider.Response {
	t.Helper()
	req, err := crawlrequest.Decode([]byte(`{"url":"http://dmoztools.net/","appid":"testapp","crawlid":"09876abc","maxdepth":0}`))
	if err != nil {
		t.Fatal(err)
	}
	return &spider.Response{
		Request:    req,
		URL:        "http://dmoztools.net/",
		Status:     200,
		StatusText: "OK",
		Header: http.Header{
			"Content-Type": {"text/html; charset=utf-8"},
			"Set-Cookie":   {"a=1", "b=2"},
		},
		RequestHeader: http.Header{
			"Accept-Language": {"en"},
			"Accept-Encoding": {"gzip,deflate"},
			"Accept":          {"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"},
			"User-Agent":      {"Scrapy/1.0.4 (+http://scrapy.org)"},
			"Cookie":          {"x=1", "y=2"},
		},
		Body: []byte("<html><body>Hello <b>world</b></body></html>"),
	}
}

// TestPageJSONHasTheQuickStartsFields checks the crawl result against the
// spec's Kafka Monitor Quick Start example, field by field.
func TestPageJSONHasTheQuickStartsFields(t *testing.T) {
	page := spider.NewPage(quickStartResponse(t))
	page.Timestamp = "2016-01-22T04:22:35.976672"
	b, err := json.Marshal(page)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"body":     "<html><body>Hello <b>world</b></body></html>",
		"crawlid":  "09876abc",
		"appid":    "testapp",
		"encoding": "utf-8",
		"response_headers": map[string]any{
			"Content-Type": []any{"text/html; charset=utf-8"},
			"Set-Cookie":   []any{"a=1", "b=2"},
		},
		"response_url": "http://dmoztools.net/",
		"url":          "http://dmoztools.net/",
		"status_code":  200.0,
		"status_msg":   "OK",
		"links":        []any{},
		// The spec's example prints each request header as one string; the
		// original's crawler writes Scrapy's Headers, a list per name, as
		// response_headers are. A mixed cluster needs one type: lists.
		"request_headers": map[string]any{
			"Accept-Language": []any{"en"},
			"Accept-Encoding": []any{"gzip,deflate"},
			"Accept":          []any{"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"},
			"User-Agent":      []any{"Scrapy/1.0.4 (+http://scrapy.org)"},
			"Cookie":          []any{"x=1", "y=2"},
		},
		"attrs":     nil,
		"timestamp": "2016-01-22T04:22:35.976672",
	}
	if !slices.Equal(slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want))) {
		t.Fatalf("keys %v, want %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
	for k, w := range want {
		if !reflect.DeepEqual(got[k], w) {
			t.Errorf("%s = %#v, want %#v", k, got[k], w)
		}
	}
	if !bytes.Contains(b, []byte(`"links":[]`)) || !bytes.Contains(b, []byte(`"attrs":null`)) {
		t.Errorf("links must be [] and attrs null: %s", b)
	}
}

func TestNewPageUsesTheRequestURLAndTheFinalURL(t *testing.T) {
	resp := quickStartResponse(t)
	resp.URL = "http://dmoztools.net/index.html" // after a redirect
	resp.Request.Attrs = json.RawMessage(`{"k":"v"}`)
	page := spider.NewPage(resp)
	if page.URL != "http://dmoztools.net/" || page.ResponseURL != "http://dmoztools.net/index.html" {
		t.Fatalf("url %q, response_url %q", page.URL, page.ResponseURL)
	}
	if string(page.Attrs) != `{"k":"v"}` || !bytes.Equal(page.RawBody, resp.Body) {
		t.Fatalf("attrs %s, raw body %q", page.Attrs, page.RawBody)
	}
	page.Attrs[2] = 'X' // the page's attrs are its own
	if string(resp.Request.Attrs) != `{"k":"v"}` {
		t.Fatal("NewPage shares the request's attrs")
	}
}

func TestStatusMsgIsTheReasonPhrase(t *testing.T) {
	tests := []struct {
		code int
		text string
		want string
	}{
		{404, "Not Found", "Not Found"},
		{404, "", "Not Found"},
		{500, "500 Internal Server Error", "Internal Server Error"},
		{200, "Okay Then", "Okay Then"},
		{599, "", ""},
	}
	for _, tc := range tests {
		resp := quickStartResponse(t)
		resp.Status, resp.StatusText = tc.code, tc.text
		if got := spider.NewPage(resp).StatusMsg; got != tc.want {
			t.Errorf("status %d %q: status_msg %q, want %q", tc.code, tc.text, got, tc.want)
		}
	}
}

func TestExtraFieldsAreAddedButNeverReplaceStandardOnes(t *testing.T) {
	page := spider.NewPage(quickStartResponse(t))
	page.Links = []spider.Link{{URL: "http://a.com/", Text: "A & <b>"}}
	page.Extra = map[string]any{"title": "Hello <World>", "url": "http://evil/", "body": 1, "count": 3}
	b, err := json.Marshal(page)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if got["title"] != "Hello <World>" || got["count"] != 3.0 || got["url"] != "http://dmoztools.net/" ||
		got["body"] != page.Body {
		t.Fatalf("got %v", got)
	}
	if n := bytes.Count(b, []byte(`"url":`)); n != 2 { // the page's and its link's
		t.Fatalf("%d url keys: %s", n, b)
	}
	links := got["links"].([]any)
	if len(links) != 1 || links[0].(map[string]any)["text"] != "A & <b>" {
		t.Fatalf("links %v", links)
	}
}

func TestMarshalJSONDoesNotEscapeHTML(t *testing.T) {
	page := spider.NewPage(quickStartResponse(t))
	b, err := page.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"body":"<html><body>Hello <b>world</b></body></html>"`)) {
		t.Fatalf("body escaped: %s", b)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(page); err != nil || !bytes.Contains(buf.Bytes(), []byte("<html>")) {
		t.Fatalf("an Encoder without HTML escaping keeps it: %v %s", err, buf.Bytes())
	}
}

func TestAZeroPageMarshalsWithEmptyCollections(t *testing.T) {
	b, err := json.Marshal(&spider.Page{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"links":[]`, `"attrs":null`, `"response_headers":{}`, `"request_headers":{}`} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("missing %s in %s", want, b)
		}
	}
}

// The page's header lists are copies of the response's, each its own:
// changing or growing one changes neither the response nor another list.
// A nil list stays null, an empty one [].
func TestNewPageHeadersAreCopiesOfTheirOwn(t *testing.T) {
	resp := &spider.Response{URL: "http://example.com/", Status: 200,
		Header:        http.Header{"A": {"1", "2"}, "B": {"3"}, "Nil": nil, "Empty": {}},
		RequestHeader: http.Header{"User-Agent": {"ua"}}}
	page := spider.NewPage(resp)
	want := map[string][]string{"A": {"1", "2"}, "B": {"3"}, "Nil": nil, "Empty": {}}
	if !reflect.DeepEqual(page.ResponseHeaders, want) {
		t.Fatalf("response_headers %#v, want %#v", page.ResponseHeaders, want)
	}
	page.ResponseHeaders["A"][0] = "changed"
	page.ResponseHeaders["A"] = append(page.ResponseHeaders["A"], "grown")
	page.RequestHeaders["User-Agent"][0] = "changed"
	if resp.Header["A"][0] != "1" || resp.RequestHeader["User-Agent"][0] != "ua" {
		t.Errorf("the response's headers changed with the page's: %v %v", resp.Header, resp.RequestHeader)
	}
	if !slices.Equal(page.ResponseHeaders["B"], []string{"3"}) {
		t.Errorf("growing one list changed another: B is %v", page.ResponseHeaders["B"])
	}
	got, err := json.Marshal(page)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(got, []byte(`"Empty":[]`)) || !bytes.Contains(got, []byte(`"Nil":null`)) {
		t.Errorf("empty and nil lists: %s", got)
	}
}
