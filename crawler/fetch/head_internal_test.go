package fetch

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// headCases are response heads (and bodies, and what follows) readHead
// reads itself (plain) or leaves to http.ReadResponse.
var headCases = []struct {
	name   string
	method string
	raw    string
	plain  bool
}{
	{"test site page", "GET", "HTTP/1.1 200 OK\r\nContent-Length: 12\r\nContent-Type: text/html; charset=utf-8\r\nDate: Sat, 28 Nov 2026 23:00:00 GMT\r\n\r\n<html></html", true},
	{"body and the next response", "GET", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcHTTP/1.1 200 OK\r\n", true},
	{"short body", "GET", "HTTP/1.1 200 OK\r\nContent-Length: 30\r\n\r\nabc", true},
	{"empty body", "GET", "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", true},
	{"HEAD", "HEAD", "HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n", true},
	{"no reason", "GET", "HTTP/1.1 200\r\nContent-Length: 1\r\n\r\nx", true},
	{"unknown status", "GET", "HTTP/1.1 599 Whatever It Is\r\nContent-Length: 1\r\n\r\nx", true},
	{"reason with tabs", "GET", "HTTP/1.1 200 O\tK \r\nContent-Length: 1\r\n\r\nx", true},
	{"lower-case names", "GET", "HTTP/1.1 200 OK\r\ncontent-length: 1\r\nx-a-b: c\r\nCONTENT-TYPE: text/plain\r\n\r\nx", true},
	{"duplicate headers", "GET", "HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nContent-Length: 1\r\nset-cookie: b=2\r\nSet-Cookie:c=3\r\n\r\nx", true},
	{"values trimmed", "GET", "HTTP/1.1 200 OK\r\nContent-Length:   2 \t\r\nX-Empty:\r\nX-Spaces: \t \r\nX-In: a  b\tc \r\n\r\nxy", true},
	{"connection close", "GET", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\nx", true},
	{"connection keep-alive, close", "GET", "HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\nContent-Length: 1\r\n\r\nx", true},
	{"connection upgrade", "GET", "HTTP/1.1 200 OK\r\nConnection: upgrade\r\nContent-Length: 1\r\n\r\nx", true},
	{"pragma", "GET", "HTTP/1.1 200 OK\r\nPragma: no-cache\r\nContent-Length: 1\r\n\r\nx", true},
	{"pragma and cache-control", "GET", "HTTP/1.1 200 OK\r\nPragma: no-cache\r\nCache-Control: max-age=1\r\nContent-Length: 1\r\n\r\nx", true},
	{"trailer without chunks", "GET", "HTTP/1.1 200 OK\r\nTrailer: X-A\r\nContent-Length: 1\r\n\r\nx", true},
	{"a long name", "GET", "HTTP/1.1 200 OK\r\n" + strings.Repeat("x", 64) + ": 1\r\nContent-Length: 1\r\n\r\nx", true},
	{"a redirect", "GET", "HTTP/1.1 301 Moved Permanently\r\nLocation: /b\r\nContent-Length: 0\r\n\r\n", true},
	{"a name too long for the fast path", "GET", "HTTP/1.1 200 OK\r\n" + strings.Repeat("x", 65) + ": 1\r\nContent-Length: 1\r\n\r\nx", false},
	{"chunked", "GET", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n", false},
	{"chunked and length", "GET", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n1\r\nx\r\n0\r\n\r\n", false},
	{"no length", "GET", "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end", false},
	{"two lengths", "GET", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx", false},
	{"two different lengths", "GET", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nxy", false},
	{"bad length", "GET", "HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\nx", false},
	{"signed length", "GET", "HTTP/1.1 200 OK\r\nContent-Length: +1\r\n\r\nx", false},
	{"empty length", "GET", "HTTP/1.1 200 OK\r\nContent-Length: \r\n\r\nx", false},
	{"huge length", "GET", "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\nx", false},
	{"HTTP/1.0", "GET", "HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx", false},
	{"HTTP/2", "GET", "HTTP/2.0 200 OK\r\nContent-Length: 1\r\n\r\nx", false},
	{"204", "GET", "HTTP/1.1 204 No Content\r\nContent-Length: 1\r\n\r\nx", false},
	{"304", "GET", "HTTP/1.1 304 Not Modified\r\n\r\n", false},
	{"100 then 200", "GET", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx", false},
	{"status of two digits", "GET", "HTTP/1.1 20 OK\r\nContent-Length: 1\r\n\r\nx", false},
	{"status of four digits", "GET", "HTTP/1.1 2000 OK\r\nContent-Length: 1\r\n\r\nx", false},
	{"status and a tab", "GET", "HTTP/1.1 200\tOK\r\nContent-Length: 1\r\n\r\nx", false},
	{"two spaces", "GET", "HTTP/1.1  200 OK\r\nContent-Length: 1\r\n\r\nx", false},
	{"bare LF", "GET", "HTTP/1.1 200 OK\nContent-Length: 1\n\nx", false},
	{"a bare LF inside", "GET", "HTTP/1.1 200 OK\r\nContent-Length: 1\nX: y\r\n\r\nx", false},
	{"a bare LF ending the head", "GET", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\nx\r\n\r\n", false},
	{"a CR inside", "GET", "HTTP/1.1 200 OK\r\nX: a\rb\r\nContent-Length: 1\r\n\r\nx", false},
	{"folded", "GET", "HTTP/1.1 200 OK\r\nX-A: a\r\n b\r\nContent-Length: 1\r\n\r\nx", false},
	{"leading space", "GET", "HTTP/1.1 200 OK\r\n X-A: a\r\nContent-Length: 1\r\n\r\nx", false},
	{"space before colon", "GET", "HTTP/1.1 200 OK\r\nX-A : a\r\nContent-Length: 1\r\n\r\nx", false},
	{"no colon", "GET", "HTTP/1.1 200 OK\r\nX-A a\r\nContent-Length: 1\r\n\r\nx", false},
	{"empty name", "GET", "HTTP/1.1 200 OK\r\n: a\r\nContent-Length: 1\r\n\r\nx", false},
	{"non-ASCII value", "GET", "HTTP/1.1 200 OK\r\nX-A: caf\xc3\xa9\r\nContent-Length: 1\r\n\r\nx", false},
	{"control in a value", "GET", "HTTP/1.1 200 OK\r\nX-A: a\x01b\r\nContent-Length: 1\r\n\r\nx", false},
	{"head not all here", "GET", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n", false},
	{"nothing", "GET", "", false},
	{"garbage", "GET", "hello\r\n\r\n", false},
}

// TestReadHeadAsReadResponse: readHead reads the plain heads as
// http.ReadResponse does, and leaves the others untouched to it.
func TestReadHeadAsReadResponse(t *testing.T) {
	for _, tc := range headCases {
		t.Run(tc.name, func(t *testing.T) {
			plain := compareHead(t, []byte(tc.raw), tc.method, 0)
			if plain != tc.plain {
				t.Errorf("plain = %v, want %v", plain, tc.plain)
			}
			for _, chunk := range []int{1, 5, 17} { // the head coming in pieces
				compareHead(t, []byte(tc.raw), tc.method, chunk)
			}
		})
	}
}

// FuzzReadHeadAsReadResponse: on any bytes, whatever readHead reads it
// reads as http.ReadResponse does.
func FuzzReadHeadAsReadResponse(f *testing.F) {
	for _, tc := range headCases {
		f.Add([]byte(tc.raw), tc.method == "HEAD", uint8(0))
	}
	f.Fuzz(func(t *testing.T, raw []byte, head bool, chunk uint8) {
		method := "GET"
		if head {
			method = "HEAD"
		}
		compareHead(t, raw, method, int(chunk))
	})
}

// compareHead reads raw (coming chunk bytes at a time; 0: at once) with
// readHead and with http.ReadResponse, compares the responses, their
// bodies read in small pieces and what is left after them, and reports
// whether readHead read it itself.
func compareHead(t *testing.T, raw []byte, method string, chunk int) bool {
	t.Helper()
	source := func() *bufio.Reader {
		var r io.Reader = bytes.NewReader(raw)
		if chunk > 0 {
			r = &chunkReader{r: r, n: chunk}
		}
		return bufio.NewReaderSize(r, connBufferSize)
	}
	req := &http.Request{Method: method}
	br := source()
	got, plain, err := readHead(br, req)
	ref := source()
	want, wantErr := http.ReadResponse(ref, req)
	switch {
	case err != nil:
		if wantErr == nil || err.Error() != wantErr.Error() {
			t.Fatalf("readHead: %v; ReadResponse: %v", err, wantErr)
		}
		return false
	case !plain:
		// Nothing taken: ReadResponse on the same reader reads the same.
		again, againErr := http.ReadResponse(br, req)
		if (againErr == nil) != (wantErr == nil) || againErr != nil && againErr.Error() != wantErr.Error() {
			t.Fatalf("ReadResponse after readHead: %v; on its own: %v", againErr, wantErr)
		}
		if againErr == nil {
			sameResponse(t, again, want, br, ref)
		}
		return false
	case wantErr != nil:
		t.Fatalf("readHead read %q, which ReadResponse refuses: %v", raw, wantErr)
	}
	sameResponse(t, got, want, br, ref)
	return true
}

// sameResponse compares two responses, their bodies and what follows them
// in their readers.
func sameResponse(t *testing.T, got, want *http.Response, br, ref *bufio.Reader) {
	t.Helper()
	if got.Status != want.Status || got.StatusCode != want.StatusCode || got.Proto != want.Proto ||
		got.ProtoMajor != want.ProtoMajor || got.ProtoMinor != want.ProtoMinor || got.ContentLength != want.ContentLength ||
		got.Close != want.Close || got.Uncompressed != want.Uncompressed || got.Request != want.Request ||
		!reflect.DeepEqual(got.TransferEncoding, want.TransferEncoding) || !reflect.DeepEqual(got.Trailer, want.Trailer) {
		t.Fatalf("response\n got %+v\nwant %+v", got, want)
	}
	if !reflect.DeepEqual(got.Header, want.Header) {
		t.Fatalf("header\n got %#v\nwant %#v", got.Header, want.Header)
	}
	if (got.Body == http.NoBody) != (want.Body == http.NoBody) {
		t.Fatalf("body: NoBody %v, want %v", got.Body == http.NoBody, want.Body == http.NoBody)
	}
	for i := 0; ; i++ { // the same reads: bytes and errors, the EOF with the last bytes
		var g, w [7]byte
		gn, gerr := got.Body.Read(g[:])
		wn, werr := want.Body.Read(w[:])
		if gn != wn || !bytes.Equal(g[:gn], w[:wn]) || !sameError(gerr, werr) {
			t.Fatalf("body read %d: %d %q %v, want %d %q %v", i, gn, g[:gn], gerr, wn, w[:wn], werr)
		}
		if gerr != nil {
			break
		}
	}
	restGot, _ := io.ReadAll(br)
	restWant, _ := io.ReadAll(ref)
	if !bytes.Equal(restGot, restWant) {
		t.Fatalf("after the body: %q, want %q", restGot, restWant)
	}
}

// sameError: both nil, or the same error (by its text: each reader makes
// its own).
func sameError(a, b error) bool {
	return a == nil && b == nil || a != nil && b != nil && (errors.Is(a, b) || a.Error() == b.Error())
}

// chunkReader reads at most n bytes at a time.
type chunkReader struct {
	r io.Reader
	n int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	return c.r.Read(p[:min(len(p), c.n)])
}

// BenchmarkReadHead reads the test site's response head and body with
// readHead and with http.ReadResponse.
func BenchmarkReadHead(b *testing.B) {
	raw := []byte("HTTP/1.1 200 OK\r\nContent-Length: 600\r\nContent-Type: text/html; charset=utf-8\r\nDate: Sat, 28 Nov 2026 23:00:00 GMT\r\n\r\n" +
		strings.Repeat("x", 600))
	req := &http.Request{Method: "GET"}
	for _, name := range []string{"readHead", "ReadResponse"} {
		b.Run(name, func(b *testing.B) {
			src := bytes.NewReader(raw)
			br := bufio.NewReaderSize(src, connBufferSize)
			body := make([]byte, 1024)
			b.ReportAllocs()
			for b.Loop() {
				src.Reset(raw)
				br.Reset(src)
				var resp *http.Response
				var err error
				if name == "readHead" {
					resp, _, err = readHead(br, req)
				} else {
					resp, err = http.ReadResponse(br, req)
				}
				if err != nil || resp == nil {
					b.Fatalf("%v %v", resp, err)
				}
				if n, _ := io.ReadFull(resp.Body, body[:600]); n != 600 {
					b.Fatal(n)
				}
			}
		})
	}
}
