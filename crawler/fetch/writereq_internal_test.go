package fetch

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"testing"
)

// TestWriteRequestWritesWhatRequestWriteWrites: writeRequest's bytes are
// Request.Write's, for the requests it writes itself and those it leaves
// to Request.Write; and it does write some itself.
func TestWriteRequestWritesWhatRequestWriteWrites(t *testing.T) {
	urls := []string{"http://example.com/", "http://example.com", "http://Example.com:8080/a/b?x=1&y=%20z",
		"https://example.com/p%C3%A9?q=\u00e9", "http://[::1]:8080/v6", "http://[fe80::1%25eth0]/zone", "http://b\u00fccher.example/",
		"http://example.com/a%2Fb;p?q#frag", "http://example.com/sp ace", "http://user:pw@example.com/"}
	headers := []http.Header{
		{"User-Agent": {"bot/1.0"}, "Accept": {"text/html"}, "Accept-Encoding": {"gzip,deflate"}, "Accept-Language": {"en"}},
		{"User-Agent": {"  spaced \t"}, "X-Multi": {"a", " b ", ""}, "Cookie": {"a=b; c=d"}, "Referer": {"http://r.example/"}},
		{"User-Agent": {""}, "Zeta": {"z"}, "Alpha": {"a"}, "alpha-lower": {"l"}},
		{"User-Agent": {"bot"}, "Host": {"other.example"}, "Content-Length": {"5"}, "Transfer-Encoding": {"chunked"}, "Trailer": {"X"}},
		{"User-Agent": {"bot"}, "X-Newline": {"a\r\nb", "c\nd\re"}},
		{"User-Agent": {"bot"}, "Bad Name": {"v"}},
		{"User-Agent": {}, "X": {"1"}},
		{"Accept": {"*/*"}}, // no User-Agent: Request.Write's default
	}
	mine := 0
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		for _, method := range []string{"GET", "HEAD", "POST", ""} {
			for hi, h := range headers {
				for _, closing := range []bool{false, true} {
					req := &http.Request{Method: method, URL: u, Header: h, Host: u.Host, Close: closing}
					if hi == 1 && closing {
						req.Close, req.ContentLength = false, 5 // without a body: Request.Write's error
					}
					var want, got bytes.Buffer
					wantErr := req.Write(&want)
					bw := bufio.NewWriter(&got)
					gotErr := writeRequest(bw, req)
					bw.Flush()
					if (gotErr == nil) != (wantErr == nil) || got.String() != want.String() {
						t.Errorf("%s %s, headers %d, close %v:\nwriteRequest %q, %v\nRequest.Write %q, %v",
							method, raw, hi, closing, got.String(), gotErr, want.String(), wantErr)
					}
					if wantErr == nil && (method == "GET" || method == "HEAD") && !closing && hi < 3 && u.Host == "example.com" {
						mine++
					}
				}
			}
		}
	}
	if mine == 0 {
		t.Fatal("no request was compared")
	}
	// A trace that wants the header fields gets them from Request.Write.
	var fields []string
	trace := &httptrace.ClientTrace{WroteHeaderField: func(k string, _ []string) { fields = append(fields, k) }}
	u, _ := url.Parse("http://example.com/")
	req := (&http.Request{Method: "GET", URL: u, Header: headers[0], Host: u.Host}).WithContext(httptrace.WithClientTrace(context.Background(), trace))
	var got bytes.Buffer
	bw := bufio.NewWriter(&got)
	if err := writeRequest(bw, req); err != nil {
		t.Fatal(err)
	}
	bw.Flush()
	if len(fields) == 0 {
		t.Error("the trace's WroteHeaderField was not called")
	}
}
