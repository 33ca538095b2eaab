package recrawl

import (
	"bytes"
	"compress/flate"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// The page memory's settings (the crawlers').
var (
	PagesTTL = settings.Seconds("RECRAWL_PAGES_TTL", 30*24*3600,
		"seconds a scheduled crawl's remembered pages (validators, body fingerprints, links) live after their bucket's last write").Ours().AtLeast(time.Second)
	AdaptiveMax = settings.Int("RECRAWL_ADAPTIVE_MAX", 16,
		"with `recrawl.adaptive`, the most runs between two checks of a page that does not change").Ours().AtLeast(1)
)

// PageSettings are the page memory's settings, for the crawler's settings.Group.
func PageSettings() settings.Group { return settings.Declare(PagesTTL, AdaptiveMax) }

// Buckets is how many hashes a spider's remembered pages are spread over:
// each stays small enough for Redis's compact encoding (a listpack up to
// hash-max-listpack-entries, 128 by default, fields and values up to
// hash-max-listpack-value, 64 bytes), up to 4096 × 128 = 524,288 pages a
// spider; beyond that the buckets turn into hash tables, about twice the
// bytes a page.
const Buckets = 4096

// Page is what the cluster remembers of a page of a scheduled crawl
// (per spider and URL): the validators of its last 200 response, a
// fingerprint of its body and, with adaptive revisits, how often to check it.
type Page struct {
	// ETag is the response's ETag ("" none; one over MaxETag bytes is not kept).
	ETag string
	// LastModified is the response's Last-Modified (zero: none).
	LastModified time.Time
	// Body is a 64-bit FNV-1a fingerprint of the body.
	Body uint64
	// Interval is, with adaptive revisits, how many runs apart the page is
	// checked (1: every run); NextRun the first run to check it in.
	Interval uint16
	NextRun  uint32
}

// Schedule sets when to check the page next, after run checked it
// (prev: what was remembered before, nil for none): every run without
// adaptive revisits, and after a change; a page that did not change is
// checked half as often each time, up to most runs apart (Nutch's
// adaptive fetch schedule, counted in runs).
func (p *Page) Schedule(prev *Page, run int, changed, adaptive bool, most int) {
	interval := uint16(1)
	if adaptive && !changed && prev != nil {
		interval = min(max(prev.Interval, 1)*2, uint16(min(max(most, 1), 1<<15)))
	}
	p.Interval, p.NextRun = interval, uint32(run)+uint32(interval)
}

// Due reports whether an adaptive re-run checks the page in run.
func (p *Page) Due(run int) bool { return p == nil || uint32(run) >= p.NextRun }

// MaxETag is the longest ETag kept: a longer one would make the page's
// record too large for a compact hash (the page is then known by its
// Last-Modified and body fingerprint alone).
const MaxETag = 40

// BodyPrint is the fingerprint of a body.
func BodyPrint(body []byte) uint64 {
	h := fnv.New64a()
	h.Write(body) //nolint:errcheck // never fails
	return h.Sum64()
}

// Validators are the conditional request headers for p: If-None-Match
// with its ETag, If-Modified-Since with its Last-Modified (nil when it
// has neither).
func (p *Page) Validators() http.Header {
	if p == nil || (p.ETag == "" && p.LastModified.IsZero()) {
		return nil
	}
	h := http.Header{}
	if p.ETag != "" {
		h.Set("If-None-Match", p.ETag)
	}
	if !p.LastModified.IsZero() {
		h.Set("If-Modified-Since", p.LastModified.UTC().Format(http.TimeFormat))
	}
	return h
}

// encode packs p: body fingerprint (8 bytes), Last-Modified (4, epoch
// seconds, 0 none), interval (2), next run (4), then the ETag.
func (p *Page) encode() []byte {
	b := make([]byte, 18, 18+len(p.ETag))
	binary.BigEndian.PutUint64(b, p.Body)
	if !p.LastModified.IsZero() {
		binary.BigEndian.PutUint32(b[8:], uint32(p.LastModified.Unix()))
	}
	binary.BigEndian.PutUint16(b[12:], p.Interval)
	binary.BigEndian.PutUint32(b[14:], p.NextRun)
	return append(b, p.ETag...)
}

func decodePage(b []byte) (*Page, bool) {
	if len(b) < 18 {
		return nil, false
	}
	p := &Page{Body: binary.BigEndian.Uint64(b), Interval: binary.BigEndian.Uint16(b[12:]),
		NextRun: binary.BigEndian.Uint32(b[14:]), ETag: string(b[18:])}
	if s := binary.BigEndian.Uint32(b[8:]); s != 0 {
		p.LastModified = time.Unix(int64(s), 0).UTC()
	}
	return p, true
}

// Memory remembers pages of scheduled crawls in Redis, per spider and URL:
// a page's record (Page, about 20 bytes and its ETag) is a field of one of
// Buckets hashes "recrawl:<spiderid>:pages:<bucket>", named by 8 bytes of
// the SHA-256 of its URL; the links of a page below its crawl's maxdepth
// are kept apart, flate-compressed, in "recrawl:<spiderid>:links:<hash>"
// (a string), so that a 304 does not cut the crawl short below it. Every
// write sets its key to expire PagesTTL later.
type Memory struct {
	rdb redis.Cmdable
	ttl time.Duration
}

// NewMemory returns the page memory in rdb; ttl is RECRAWL_PAGES_TTL.
func NewMemory(rdb redis.Cmdable, ttl time.Duration) *Memory { return &Memory{rdb: rdb, ttl: ttl} }

// urlKey is the 8-byte field and bucket of a URL.
func urlKey(spiderID, url string) (key, field string, sum []byte) {
	s := sha256.Sum256([]byte(url))
	bucket := int(binary.BigEndian.Uint16(s[:2])) % Buckets
	return fmt.Sprintf("recrawl:%s:pages:%03x", spiderID, bucket), string(s[2:10]), s[2:10]
}

// PagesKey is the bucket hash a spider remembers url in (for benchmarks
// and tests).
func PagesKey(spiderID, url string) string {
	k, _, _ := urlKey(spiderID, url)
	return k
}

// LinksKey is where the links of a spider's page at url are kept.
func LinksKey(spiderID, url string) string {
	_, _, sum := urlKey(spiderID, url)
	return "recrawl:" + spiderID + ":links:" + hex.EncodeToString(sum)
}

// Get returns what is remembered of url (nil: nothing).
func (m *Memory) Get(ctx context.Context, spiderID, url string) (*Page, error) {
	key, field, _ := urlKey(spiderID, url)
	v, err := m.rdb.HGet(ctx, key, field).Bytes()
	if err == redis.Nil {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the remembered page %s: %w", url, err)
	}
	p, ok := decodePage(v)
	if !ok {
		return nil, nil
	}
	return p, nil
}

// Put remembers p for url, and links when they are not nil (the page is
// below its crawl's maxdepth), in one round trip.
func (m *Memory) Put(ctx context.Context, spiderID, url string, p *Page, links []string) error {
	if len(p.ETag) > MaxETag {
		p.ETag = ""
	}
	key, field, _ := urlKey(spiderID, url)
	pipe := m.rdb.Pipeline()
	pipe.HSet(ctx, key, field, p.encode())
	pipe.Expire(ctx, key, m.ttl)
	if links != nil {
		pipe.Set(ctx, LinksKey(spiderID, url), packLinks(links), m.ttl)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("remember the page %s: %w", url, err)
	}
	return nil
}

// Links returns the links kept for url; ok is false when none are kept
// (never stored, or expired).
func (m *Memory) Links(ctx context.Context, spiderID, url string) (links []string, ok bool, err error) {
	v, err := m.rdb.Get(ctx, LinksKey(spiderID, url)).Bytes()
	if err == redis.Nil {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read the links of %s: %w", url, err)
	}
	links, err = unpackLinks(v)
	if err != nil {
		return nil, false, nil // unreadable: fetched in full instead
	}
	return links, true, nil
}

func packLinks(links []string) []byte {
	var buf bytes.Buffer
	w, _ := flate.NewWriter(&buf, flate.BestSpeed)
	io.WriteString(w, strings.Join(links, "\n")) //nolint:errcheck // a bytes.Buffer
	w.Close()                                    //nolint:errcheck // a bytes.Buffer
	return buf.Bytes()
}

func unpackLinks(b []byte) ([]string, error) {
	text, err := io.ReadAll(flate.NewReader(bytes.NewReader(b)))
	if err != nil {
		return nil, err
	}
	if len(text) == 0 {
		return []string{}, nil
	}
	return strings.Split(string(text), "\n"), nil
}
