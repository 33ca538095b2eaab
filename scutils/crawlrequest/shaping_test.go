package crawlrequest_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/wirejson"
)

const shapedMember = `{"appid":"a","body":"user=me&pw=x","crawlid":"c","extract":{"t":{"css":"title"}},` +
	`"headers":{"x-token":"t1","User-Agent":"ua/2"},"method":"POST","session":true,"url":"http://example.com/login"}`

func TestShapeReadsMethodBodyHeadersAndSession(t *testing.T) {
	s, err := decode(t, shapedMember).Shape()
	if err != nil {
		t.Fatal(err)
	}
	want := http.Header{"X-Token": {"t1"}, "User-Agent": {"ua/2"}}
	if s.Method != "POST" || s.Body != "user=me&pw=x" || !s.Session || len(s.Header) != 2 ||
		s.Header.Get("X-Token") != want.Get("X-Token") || s.Header.Get("User-Agent") != "ua/2" {
		t.Errorf("got %+v", s)
	}
	plain, err := decode(t, `{"appid":"a","crawlid":"c","url":"http://example.com/"}`).Shape()
	if err != nil || plain.Method != "GET" || plain.Body != "" || plain.Header != nil || plain.Session {
		t.Errorf("a plain request: got %+v, %v", plain, err)
	}
}

func TestFollowedLinksAreGETsInheritingHeadersSessionAndExtract(t *testing.T) {
	link := decode(t, shapedMember).Follow("http://example.com/next")
	s, err := link.Shape()
	if err != nil {
		t.Fatal(err)
	}
	if s.Method != "GET" || s.Body != "" || s.Header.Get("X-Token") != "t1" || !s.Session {
		t.Errorf("got %+v", s)
	}
	if raw, ok := link.Extra(crawlrequest.FieldExtract); !ok || string(raw) != `{"t":{"css":"title"}}` {
		t.Errorf("extract: got %s, %v", raw, ok)
	}
	b, err := link.Encode()
	if err != nil || strings.Contains(string(b), `"method"`) || strings.Contains(string(b), `"body"`) {
		t.Errorf("encoded link: %s, %v", b, err)
	}
	// A retry is the same request again: method and body stay.
	if s, _ := decode(t, shapedMember).Retry().Shape(); s.Method != "POST" || s.Body == "" {
		t.Errorf("retry: got %+v", s)
	}
}

func TestShapeRefusesWhatCheckShapeRefuses(t *testing.T) {
	for _, tc := range []struct{ fields, want string }{
		{`"method":"BREW"`, "method: want one of GET, HEAD, POST"},
		{`"method":1`, "method: want one of"},
		{`"body":7`, "body: not a string"},
		{`"body":"` + strings.Repeat("x", crawlrequest.MaxBodyBytes+1) + `"`, "body: 65537 bytes, more than the limit of 65536"},
		{`"headers":{"host":"evil.example"}`, "headers: Host is the cluster's to send (the URL's host is sent)"},
		{`"headers":{"Content-Length":"3"}`, "headers: Content-Length is the cluster's to send"},
		{`"headers":{"Connection":"close","Transfer-Encoding":"chunked"}`, "headers: Connection is the cluster's to send (a hop-by-hop header, the connection's own); headers: Transfer-Encoding"},
		{`"headers":{"Accept-Encoding":"br"}`, "headers: Accept-Encoding is the cluster's to send (the fetcher asks for the encodings it decodes (gzip, deflate))"},
		{`"headers":{"bad name":"x"}`, `headers: "bad name" is not a valid header name`},
		{`"headers":{"X-A":"line\nbreak"}`, "headers: X-A: not a valid header value"},
		{`"headers":{"x-a":"1","X-A":"2"}`, "headers: X-A given twice"},
		{`"headers":["X-A"]`, "headers: not an object of strings"},
		{`"session":"yes"`, "session: not true or false"},
	} {
		member := `{"appid":"a","crawlid":"c","url":"http://example.com/",` + tc.fields + `}`
		_, err := decode(t, member).Shape()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%.80s: got %v, want %q", tc.fields, err, tc.want)
		}
		fed, derr := wirejson.Decode([]byte(member))
		if derr != nil {
			t.Fatal(derr)
		}
		errs := crawlrequest.CheckShape(fed.(map[string]any))
		if tc.fields == `"session":"yes"` { // the schema checks session's type
			continue
		}
		if len(errs) == 0 || !strings.Contains(errs[0].Error(), strings.SplitN(tc.want, ";", 2)[0]) {
			t.Errorf("CheckShape %.80s: got %v, want %q", tc.fields, errs, tc.want)
		}
	}
}

func TestTooManyHeadersAreRefused(t *testing.T) {
	fed := map[string]any{"headers": map[string]any{}}
	for i := range crawlrequest.MaxHeaders + 1 {
		fed["headers"].(map[string]any)["X-"+strings.Repeat("a", i+1)] = "v"
	}
	if errs := crawlrequest.CheckShape(fed); len(errs) != 1 || !strings.Contains(errs[0].Error(), "65 headers, more than the limit of 64") {
		t.Errorf("got %v", errs)
	}
}
