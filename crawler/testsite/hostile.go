package testsite

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// MaxBombMiB bounds /bomb/<encoding>/<mib>: 1 GiB inflated.
const MaxBombMiB = 1024

// bombKey names one compressed bomb.
type bombKey struct {
	encoding string
	mib      int
}

// bombs holds each bomb once it is built: a bomb of 1 GiB is about 1.3 MB
// compressed and takes half a second of CPU to build, so a test binary
// builds each at most once and never holds it inflated.
var bombs = struct {
	mu    sync.Mutex
	built map[bombKey]func() []byte
}{built: map[bombKey]func() []byte{}}

// Bomb returns the body /bomb/<encoding>/<mib> serves: mib MiB of zero
// bytes compressed with encoding ("gzip" or "deflate", zlib-wrapped as
// RFC 9110 says). It is built once per encoding and size, streamed through
// the compressor, never held inflated.
func Bomb(encoding string, mib int) []byte {
	key := bombKey{encoding, mib}
	bombs.mu.Lock()
	build, ok := bombs.built[key]
	if !ok {
		build = sync.OnceValue(func() []byte { return buildBomb(encoding, mib) })
		bombs.built[key] = build
	}
	bombs.mu.Unlock()
	return build()
}

func buildBomb(encoding string, mib int) []byte {
	var buf bytes.Buffer
	var zw io.WriteCloser
	if encoding == "gzip" {
		zw, _ = gzip.NewWriterLevel(&buf, flate.BestSpeed) // BestSpeed: 0.5 s per GiB, ratio about 800
	} else {
		zw, _ = zlib.NewWriterLevel(&buf, flate.BestSpeed)
	}
	zeros := make([]byte, 1<<20)
	for range mib {
		_, _ = zw.Write(zeros)
	}
	_ = zw.Close()
	return buf.Bytes()
}

// bomb serves /bomb/<gzip|deflate>/<mib> (see Bomb) as text/html with its
// Content-Encoding and the compressed Content-Length.
func (s *Site) bomb(w http.ResponseWriter, r *http.Request) {
	encoding, size, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/bomb/"), "/")
	mib, err := strconv.Atoi(size)
	if (encoding != "gzip" && encoding != "deflate") || err != nil || mib < 1 || mib > MaxBombMiB {
		http.Error(w, "want /bomb/<gzip|deflate>/<MiB, 1 to 1024>", http.StatusBadRequest)
		return
	}
	body := Bomb(encoding, mib)
	w.Header().Set("Content-Type", htmlType)
	w.Header().Set("Content-Encoding", encoding)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	_, _ = w.Write(body)
}

// MaxLinkBomb bounds /links/<n>: a page of a million links is about 38 MB.
const MaxLinkBomb = 1000000

// LinkBombHref is the href of the i-th link of /links/<n>: a small page.
func LinkBombHref(i int) string { return "/status/200?link=" + strconv.Itoa(i) }

// links serves /links/<n>: an HTML page of n distinct links
// (LinkBombHref), streamed.
func (s *Site) links(w http.ResponseWriter, r *http.Request) {
	n, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/links/"))
	if err != nil || n < 0 || n > MaxLinkBomb {
		http.Error(w, "want /links/<n, 0 to "+strconv.Itoa(MaxLinkBomb)+">", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", htmlType)
	buf := []byte("<!DOCTYPE html>\n<html><head><title>Links</title></head><body>\n")
	for i := range n {
		buf = append(buf, `<a href="`...)
		buf = append(buf, LinkBombHref(i)...)
		buf = append(buf, "\">x</a>\n"...)
		if len(buf) >= 32<<10 {
			if _, err := w.Write(buf); err != nil {
				return // the client went away
			}
			buf = buf[:0]
		}
	}
	buf = append(buf, "</body></html>\n"...)
	_, _ = w.Write(buf)
}

// maxDripEvery bounds /drip's ?every=.
const maxDripEvery = time.Minute

// drip serves /drip: headers at once, then one byte every ?every=<ms>
// milliseconds (default 50) without end, until the client goes away or the
// site closes. No Content-Length: the body never ends.
func (s *Site) drip(w http.ResponseWriter, r *http.Request) {
	every := 50 * time.Millisecond
	if v := r.URL.Query().Get("every"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms < 1 || time.Duration(ms)*time.Millisecond > maxDripEvery {
			http.Error(w, "want /drip?every=<milliseconds, 1 to 60000>", http.StatusBadRequest)
			return
		}
		every = time.Duration(ms) * time.Millisecond
	}
	w.Header().Set("Content-Type", htmlType)
	rc := http.NewResponseController(w)
	for {
		if _, err := io.WriteString(w, "."); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
		if !s.wait(r.Context(), every) {
			return
		}
	}
}
