package fetch

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strconv"

	"golang.org/x/net/http/httpguts"
)

// readHead reads the head of a plain response, the kind nearly every page
// gets, without http.ReadResponse: its textproto reader, its copies of
// each line and its header map's growth were about a third of the
// client's own CPU per fetch (pprof of BenchmarkCrawlCost). ok is false,
// with nothing consumed from br, for anything else, which the caller
// then gives to http.ReadResponse on the same bytes.
//
// Plain is: the whole head already in br's buffer (one read brought it,
// as it does for a small page); an "HTTP/1.1" status line with a
// three-digit status of 200 to 599 other than 204 and 304; every line
// ending in CRLF; header names of token characters and values of
// printable ASCII and tabs, no folded (continued) lines; one
// Content-Length of digits (no Transfer-Encoding). What it returns is
// what http.ReadResponse returns for those bytes, field for field and
// byte for byte of the body (TestReadHeadAsReadResponse,
// FuzzReadHeadAsReadResponse): canonical header names, values trimmed,
// "Connection: close" taken out of the header and into Close, Pragma:
// no-cache also as Cache-Control, a HEAD response's Content-Length
// reported and its body empty.
//
// An error is a read error (the connection failed or ended before a
// byte came), as http.ReadResponse reports it.
func readHead(br *bufio.Reader, req *http.Request) (resp *http.Response, ok bool, err error) {
	if _, err := br.Peek(1); err != nil { // the one read ReadResponse starts with
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, false, err
	}
	buf, _ := br.Peek(br.Buffered())
	end := bytes.Index(buf, []byte("\r\n\r\n"))
	if end < 0 {
		return nil, false, nil
	}
	head := buf[:end+2] // each line with its CRLF
	// The status line: "HTTP/1.1 200 OK".
	line, rest, ok := cutLine(head)
	if !ok || len(line) < len("HTTP/1.1 200") || string(line[:9]) != "HTTP/1.1 " || !printable(line[9:]) {
		return nil, false, nil
	}
	code := line[9:12]
	if code[0] < '2' || code[0] > '5' || !isDigit(code[1]) || !isDigit(code[2]) || len(line) > 12 && line[12] != ' ' {
		return nil, false, nil
	}
	status := int(code[0]-'0')*100 + int(code[1]-'0')*10 + int(code[2]-'0')
	if status == http.StatusNoContent || status == http.StatusNotModified {
		return nil, false, nil
	}
	// The header lines: counted first, their values then cut out of one
	// string of the whole head.
	n := bytes.Count(rest, []byte("\r\n"))
	text := string(head)
	values := make([]string, n)
	header := make(http.Header, n)
	var name [64]byte
	at := len(line) + 2 // where rest starts in text
	for i := range n {
		ln, next, ok := cutLine(rest)
		colon := bytes.IndexByte(ln, ':')
		if !ok || colon <= 0 || colon > len(name) {
			return nil, false, nil
		}
		key, ok := canonicalKey(name[:0], ln[:colon])
		if !ok || !printable(ln[colon+1:]) {
			return nil, false, nil
		}
		lo, hi := at+colon+1, at+len(ln)
		for lo < hi && (text[lo] == ' ' || text[lo] == '\t') {
			lo++
		}
		for hi > lo && (text[hi-1] == ' ' || text[hi-1] == '\t') {
			hi--
		}
		values[i] = text[lo:hi]
		if vv, seen := header[key]; seen {
			header[key] = append(vv, values[i])
		} else {
			header[key] = values[i : i+1 : i+1]
		}
		at += len(ln) + 2
		rest = next
	}
	if _, chunked := header["Transfer-Encoding"]; chunked {
		return nil, false, nil
	}
	cl := header["Content-Length"]
	if len(cl) != 1 {
		return nil, false, nil
	}
	size, perr := strconv.ParseUint(cl[0], 10, 63)
	if perr != nil {
		return nil, false, nil
	}
	// Pragma: no-cache is Cache-Control: no-cache (fixPragmaCacheControl).
	if hp := header["Pragma"]; len(hp) > 0 && hp[0] == "no-cache" {
		if _, cc := header["Cache-Control"]; !cc {
			header["Cache-Control"] = []string{"no-cache"}
		}
	}
	// HTTP/1.1: close only when asked, and the header then loses its
	// Connection (shouldClose).
	closing := httpguts.HeaderValuesContainsToken(header["Connection"], "close")
	if closing {
		delete(header, "Connection")
	}
	if _, err := br.Discard(end + 4); err != nil {
		return nil, false, err // cannot be: the bytes are buffered
	}
	resp = &http.Response{Status: text[9:len(line)], StatusCode: status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: header, ContentLength: int64(size), Close: closing, Request: req}
	switch {
	case req.Method == http.MethodHead || size == 0:
		resp.Body = http.NoBody
	default:
		resp.Body = &sizedBody{r: br, n: int64(size)}
	}
	return resp, true, nil
}

// cutLine cuts b at its first LF, which must follow a CR; ok is false
// otherwise. A lone CR left in line is refused by the callers' checks of
// its characters.
func cutLine(b []byte) (line, rest []byte, ok bool) {
	i := bytes.IndexByte(b, '\n')
	if i < 1 || b[i-1] != '\r' {
		return nil, nil, false
	}
	return b[:i-1], b[i+1:], true
}

// printable reports that b is printable ASCII or tabs.
func printable(b []byte) bool {
	for _, c := range b {
		if c < ' ' && c != '\t' || c >= 0x7f {
			return false
		}
	}
	return true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// canonicalKey is textproto's canonical form of the header name k, written
// in dst: ok is false for a name that is not all token characters.
// Common names come back as the constants net/http uses, without an
// allocation.
func canonicalKey(dst, k []byte) (string, bool) {
	upper := true
	for _, c := range k {
		if !httpguts.IsTokenRune(rune(c)) {
			return "", false
		}
		if upper && 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		} else if !upper && 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
		upper = c == '-'
	}
	if s, ok := commonKeys[string(dst)]; ok {
		return s, true
	}
	return string(dst), true
}

// commonKeys are the header names most responses carry.
var commonKeys = func() map[string]string {
	m := map[string]string{}
	for _, k := range []string{"Accept-Ranges", "Age", "Cache-Control", "Connection", "Content-Encoding",
		"Content-Language", "Content-Length", "Content-Location", "Content-Security-Policy", "Content-Type", "Date",
		"Etag", "Expires", "Keep-Alive", "Last-Modified", "Link", "Location", "Pragma", "Referrer-Policy", "Server",
		"Set-Cookie", "Strict-Transport-Security", "Vary", "Via", "X-Content-Type-Options", "X-Frame-Options",
		"X-Powered-By", "X-Xss-Protection", "Alt-Svc", "Cf-Ray", "Report-To", "Nel", "Transfer-Encoding", "Trailer"} {
		m[k] = k
	}
	return m
}()

// sizedBody is a body of Content-Length bytes, as net/http's is: its last
// bytes come with io.EOF, and an end of the connection before them is
// io.ErrUnexpectedEOF.
type sizedBody struct {
	r   *bufio.Reader
	n   int64 // bytes left
	eof bool
}

func (b *sizedBody) Read(p []byte) (int, error) {
	if b.eof {
		return 0, io.EOF
	}
	if b.n <= 0 {
		b.eof = true
		return 0, io.EOF
	}
	if int64(len(p)) > b.n {
		p = p[:b.n]
	}
	n, err := b.r.Read(p)
	b.n -= int64(n)
	switch {
	case err == io.EOF:
		b.eof = true
		if b.n > 0 {
			err = io.ErrUnexpectedEOF
		}
	case err == nil && n > 0 && b.n == 0:
		b.eof, err = true, io.EOF
	}
	return n, err
}

func (b *sizedBody) Close() error { return nil }
