package testsite

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"compress/zlib"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

const htmlType = "text/html; charset=utf-8"

// maxSlow bounds /slow/<ms>.
const maxSlow = 5 * time.Minute

// serve answers the built-in pages.
func (s *Site) serve(w http.ResponseWriter, r *http.Request) {
	if s.shaped(w, r) || s.scriptPage(w, r) {
		return
	}
	path := r.URL.Path
	if loc, ok := s.redirectTarget(path, r.URL.Query()); ok {
		s.redirect(w, r, loc)
		return
	}
	if f, ok := fixedBody(path); ok {
		w.Header().Set("Content-Type", f.contentType)
		_, _ = io.WriteString(w, f.body)
		return
	}
	if s.misbehave(w, r) {
		return
	}
	s.content(w, r)
}

// redirect answers a redirect to loc, with ?code= (302 by default); one
// from /set-cookie sets its cookie too.
func (s *Site) redirect(w http.ResponseWriter, r *http.Request, loc string) {
	if r.URL.Path == "/set-cookie" {
		s.setCookie(w, r)
	}
	code := http.StatusFound
	if c, err := strconv.Atoi(r.URL.Query().Get("code")); err == nil && c >= 300 && c <= 308 {
		code = c
	}
	// Location as given (relative ones stay relative: clients resolve them).
	w.Header().Set("Location", loc)
	w.WriteHeader(code)
}

// oddEncodings are the special pages in odd encodings, served as written.
var oddEncodings = []fixedFile{
	{"/malformed", htmlType, malformedBody},
	{"/latin1", "text/html; charset=ISO-8859-1", latin1Body},
	{"/meta-charset", "text/html", metaCharsetBody},
	{"/shift-jis", "text/html", shiftJISBody},
	{"/binary", htmlType, binaryBody},
}

// fixedBody is what path answers as it is written: one of the files "/"
// links to or of the pages in odd encodings.
func fixedBody(path string) (fixedFile, bool) {
	for _, table := range [][]fixedFile{files, oddEncodings} {
		for _, f := range table {
			if path == f.path {
				return f, true
			}
		}
	}
	return fixedFile{}, false
}

// misbehave answers the pages that misbehave on the wire (hang, stall,
// reset, crawl along, grow huge or bombs, bad encodings), and is false for
// any other path.
func (s *Site) misbehave(w http.ResponseWriter, r *http.Request) bool {
	path := r.URL.Path
	switch {
	case path == "/hang":
		s.hang(r.Context())
	case path == "/hang-body":
		w.Header().Set("Content-Type", htmlType)
		w.Header().Set("Content-Length", "1000")
		_, _ = io.WriteString(w, "<html><bo")
		http.NewResponseController(w).Flush()
		s.hang(r.Context())
	case path == "/truncated-body":
		hijack(w, func(conn net.Conn, rw *bufio.ReadWriter) {
			_, _ = fmt.Fprintf(rw, "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: 1000\r\n\r\n%s", htmlType, strings.Repeat("x", 100))
			_ = rw.Flush()
		})
	case path == "/reset":
		hijack(w, func(conn net.Conn, _ *bufio.ReadWriter) {
			if tcp, ok := conn.(*net.TCPConn); ok {
				_ = tcp.SetLinger(0) // close sends RST
			}
		})
	case strings.HasPrefix(path, "/slow/"):
		d, ok := slowDelay(path)
		if !ok {
			http.Error(w, "want /slow/<milliseconds> up to 300000", http.StatusBadRequest)
			break
		}
		if !s.wait(r.Context(), d) {
			panic(http.ErrAbortHandler) // closing: drop the connection unanswered
		}
		s.page(w, path, http.StatusOK, "Slow page", fmt.Sprintf("This page took %v.", d))
	case strings.HasPrefix(path, "/huge/"):
		s.huge(w, r)
	case strings.HasPrefix(path, "/bomb/"):
		s.bomb(w, r)
	case strings.HasPrefix(path, "/links/"):
		s.links(w, r)
	case path == "/drip":
		s.drip(w, r)
	case path == "/gzip", path == "/deflate":
		s.compressed(w, path)
	case path == "/bad-gzip":
		w.Header().Set("Content-Type", htmlType)
		w.Header().Set("Content-Encoding", "gzip")
		_, _ = io.WriteString(w, BadGzipBody)
	default:
		return false
	}
	return true
}

// content answers robots.txt, the status, cookie and echo pages, and the
// site's HTML pages (404 for an unknown path).
func (s *Site) content(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	switch {
	case path == "/robots.txt":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(s.opts.robotsStatus)
		_, _ = io.WriteString(w, s.opts.robotsBody)
	case strings.HasPrefix(path, "/status/"):
		code, ok := statusCode(path)
		if !ok {
			http.Error(w, "want /status/<code> with code 200-599", http.StatusBadRequest)
			return
		}
		if code == http.StatusNoContent || code == http.StatusNotModified {
			w.WriteHeader(code)
			return
		}
		s.page(w, path, code, fmt.Sprintf("%d %s", code, http.StatusText(code)), "A page answered with this status.")
	case path == "/set-cookie":
		s.setCookie(w, r)
		s.page(w, path, http.StatusOK, "Cookie set", "This response set a cookie.")
	case path == "/meta-refresh":
		s.metaRefresh(w, r)
	case path == "/echo-headers":
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(Echo{Method: r.Method, Host: r.Host, Path: r.URL.RequestURI(), Header: r.Header})
	case path == "/":
		s.page(w, path, http.StatusOK, "Test site", "The root of a deterministic test site.")
	case path == "/special":
		s.page(w, path, http.StatusOK, "Special pages", "Pages that misbehave; crawling them is slow.")
	case path == "/redirect-chain/0":
		s.page(w, path, http.StatusOK, "End of the redirect chain", "The redirects ended here.")
	default:
		if idx, ok := s.treeIndices(path); ok {
			s.page(w, path, http.StatusOK, "Page "+strings.Trim(strings.ReplaceAll(treePath(idx)[len("/page"):], "/", "."), "."),
				fmt.Sprintf("A tree page at level %d.", len(idx)))
			return
		}
		if _, ok := s.hrefs(path); ok { // allow/deny/private leaves
			s.page(w, path, http.StatusOK, "Leaf "+path, "A leaf page.")
			return
		}
		s.page(w, path, http.StatusNotFound, "404 Not Found", "No such page.")
	}
}

// page writes an HTML page with path's links (none for unknown paths).
func (s *Site) page(w http.ResponseWriter, path string, status int, title, text string) {
	var b strings.Builder
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>%s</title></head>\n<body id=\"top\">\n<h1>%s</h1>\n<p>%s</p>\n",
		html.EscapeString(title), html.EscapeString(title), html.EscapeString(text))
	if hrefs, ok := s.hrefs(path); ok {
		b.WriteString("<ul>\n")
		for _, h := range hrefs {
			fmt.Fprintf(&b, "<li><a href=\"%s\">%s</a></li>\n", html.EscapeString(h), html.EscapeString(h))
		}
		b.WriteString("</ul>\n")
	}
	b.WriteString("</body></html>\n")
	w.Header().Set("Content-Type", htmlType)
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	w.WriteHeader(status)
	_, _ = io.WriteString(w, b.String())
}

// metaRefresh answers /meta-refresh: a page whose <meta http-equiv="refresh">
// sends browsers to ?to= after ?delay= seconds (default 0).
func (s *Site) metaRefresh(w http.ResponseWriter, r *http.Request) {
	to, delay := r.URL.Query().Get("to"), cmp.Or(r.URL.Query().Get("delay"), "0")
	if _, err := strconv.ParseFloat(delay, 64); err != nil || to == "" {
		http.Error(w, "want /meta-refresh?to=<url>[&delay=<seconds>]", http.StatusBadRequest)
		return
	}
	body := fmt.Sprintf("<!DOCTYPE html>\n<html><head><meta http-equiv=\"refresh\" content=\"%s; url=%s\"><title>Moved</title></head>\n"+
		"<body><p>This page moved.</p></body></html>\n", delay, html.EscapeString(to))
	w.Header().Set("Content-Type", htmlType)
	_, _ = io.WriteString(w, body)
}

// Echo is what /echo-headers answers.
type Echo struct {
	Method string      `json:"method"`
	Host   string      `json:"host"`
	Path   string      `json:"path"` // with the query
	Header http.Header `json:"headers"`
}

// The cookie /set-cookie sets unless ?name= and ?value= say otherwise.
const (
	CookieName  = "session"
	CookieValue = "testsite"
)

func (s *Site) setCookie(w http.ResponseWriter, r *http.Request) {
	name, value := r.URL.Query().Get("name"), r.URL.Query().Get("value")
	if name == "" {
		name = CookieName
	}
	if value == "" {
		value = CookieValue
	}
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: "/"})
}

// hugePattern repeats through every /huge body.
const hugePattern = "<p>0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ</p>\n"

// HugePrefix returns the first n bytes of any /huge/<size> body with size >= n.
func HugePrefix(n int) []byte {
	out := make([]byte, n)
	for i := 0; i < n; i += len(hugePattern) {
		copy(out[i:], hugePattern)
	}
	return out
}

// huge streams /huge/<bytes> without holding it in memory.
func (s *Site) huge(w http.ResponseWriter, r *http.Request) {
	n, err := strconv.ParseInt(strings.TrimPrefix(r.URL.Path, "/huge/"), 10, 64)
	if err != nil || n < 0 {
		http.Error(w, "want /huge/<bytes>", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", htmlType)
	if r.URL.Query().Get("chunked") == "" {
		w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
	}
	chunk := HugePrefix(64 * len(hugePattern)) // a whole number of patterns
	for n > 0 {
		part := chunk[:min(int64(len(chunk)), n)]
		if _, err := w.Write(part); err != nil {
			return // the client went away
		}
		n -= int64(len(part))
		select {
		case <-s.closing:
			return
		default:
		}
	}
}

// CompressedPageText is the text the /gzip and /deflate pages hold.
const CompressedPageText = "This page was sent compressed."

func (s *Site) compressed(w http.ResponseWriter, path string) {
	page := fmt.Sprintf("<!DOCTYPE html>\n<html><head><title>Compressed</title></head><body><p>%s</p><a href=\"/page/1\">page 1</a></body></html>\n",
		CompressedPageText)
	var buf bytes.Buffer
	var zw io.WriteCloser
	if path == "/gzip" {
		zw = gzip.NewWriter(&buf)
		w.Header().Set("Content-Encoding", "gzip")
	} else {
		zw = zlib.NewWriter(&buf)
		w.Header().Set("Content-Encoding", "deflate")
	}
	_, _ = io.WriteString(zw, page)
	_ = zw.Close()
	w.Header().Set("Content-Type", htmlType)
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	_, _ = w.Write(buf.Bytes())
}

// hijack takes the connection over, runs f and closes the connection.
func hijack(w http.ResponseWriter, f func(net.Conn, *bufio.ReadWriter)) {
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		http.Error(w, "cannot hijack: "+err.Error(), http.StatusInternalServerError)
		return
	}
	defer conn.Close()
	f(conn, rw)
}

// The hand-written bodies. Their links must match specialLinks.
const (
	malformedBody = "<html><head><title>Malformed</title>\n" +
		"<body><div><p>unclosed paragraph <b>bold <i>italic</b> crossed</i>\n" +
		"<table><tr><td><a href=/page/1>unquoted href</td></tr>\n" +
		"<a HREF='/page/2' class=x>single quotes, upper case<a>\n" +
		"<p>stray < and > and & signs</div></div></span>\n" +
		"<a href=\"/allow/1\"\n>attribute on its own line</a>\n" +
		"<!-- an unclosed comment at the end hides nothing above <a href=\"/deny/1\">hidden</a>\n"

	// "Café crème" in ISO-8859-1.
	latin1Body = "<html><head><title>Caf\xe9</title></head><body><p>Caf\xe9 cr\xe8me, na\xefve fa\xe7ade</p>" +
		"<a href=\"/page/1\">caf\xe9</a></body></html>\n"

	// windows-1252: curly quotes and the euro sign, charset only in a <meta> tag.
	metaCharsetBody = "<html><head><meta http-equiv=\"Content-Type\" content=\"text/html; charset=windows-1252\">" +
		"<title>Quotes</title></head><body><p>\x93Smart quotes\x94 cost \x8020</p><a href=\"/page/1\">na\xefve</a></body></html>\n"

	// Shift_JIS: 日本語 (Japanese), charset only in <meta charset>.
	shiftJISBody = "<html><head><meta charset=\"Shift_JIS\"><title>Shift_JIS</title></head><body><p>\x93\xfa\x96\x7b\x8c\xea</p>" +
		"<a href=\"/page/1\">\x93\xfa\x96\x7b</a></body></html>\n"

	// Invalid UTF-8 (a lone continuation byte, a truncated sequence, an
	// encoded surrogate, NUL) around a link.
	binaryBody = "<html><body><p>\xff\xfe\x00bad \xc3\x28 \x80\x81</p><a href=\"/page/1\">link \xed\xa0\x80</a></body></html>\n"
)

// The texts the charset pages hold, decoded to UTF-8.
const (
	Latin1Text      = "Café crème, naïve façade"
	MetaCharsetText = "“Smart quotes” cost €20"
	ShiftJISText    = "日本語"
)

// BadGzipBody is /bad-gzip's body: plain HTML under Content-Encoding gzip.
const BadGzipBody = "<html><body><p>Not compressed at all.</p></body></html>\n"
