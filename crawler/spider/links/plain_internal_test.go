package links

import (
	"math/rand/v2"
	"mime"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider"
)

// TestResolvePlainIsResolve: resolvePlain gives what resolve and String
// give, URL and all, for the hrefs it takes, on generated hrefs against
// several bases; and it takes some and leaves some.
func TestResolvePlainIsResolve(t *testing.T) {
	bases := []string{"http://example.com/dir/page", "https://Example.COM:8443/", "http://user:pw@example.com/a?q=1#f",
		"http://127.0.0.1:8080/page/3", "http://[::1]:8080/x", "http://b\u00fccher.example/", "http://example.com"}
	pieces := []string{"/", "a", "Z", "0", "-", ".", "_", "~", "..", "%41", "%2F", "?q=1", "#f", " ", "é", ":", ";", "//", "\t"}
	rng := rand.New(rand.NewPCG(3, 4))
	took, left := 0, 0
	for _, raw := range bases {
		base, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		prefix := plainPrefix(base)
		for range 20_000 {
			var b strings.Builder
			for range rng.IntN(8) {
				if rng.IntN(4) == 0 {
					b.WriteString(pieces[rng.IntN(len(pieces))])
				} else {
					b.WriteString(pieces[rng.IntN(8)])
				}
			}
			href := b.String()
			u, abs, ok := resolvePlain(base, prefix, href)
			if !ok {
				left++
				continue
			}
			took++
			want, wok := resolve(base, href)
			if !wok {
				t.Fatalf("resolvePlain(%q, %q) = %q, resolve refuses it", raw, href, abs)
			}
			if abs != want.String() || !reflect.DeepEqual(u, want) {
				t.Fatalf("resolvePlain(%q, %q) = %q %#v, resolve %q %#v", raw, href, abs, u, want.String(), want)
			}
		}
	}
	if took < 1000 || left < 1000 {
		t.Fatalf("%d hrefs resolved plainly, %d not: the test does not try both", took, left)
	}
}

// TestIsCollapsedIsCollapse: a text isCollapsed passes is its own collapse.
func TestIsCollapsedIsCollapse(t *testing.T) {
	pieces := []string{"a", "b", " ", "  ", "\t", "\n", "\u00a0", "\u0085", "é", "\xff", "\v", "\f", "\r"}
	rng := rand.New(rand.NewPCG(5, 6))
	took := 0
	for range 50_000 {
		var b strings.Builder
		for range rng.IntN(6) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		s := b.String()
		if isCollapsed(s) {
			took++
			if got := strings.ToValidUTF8(strings.Join(strings.Fields(s), " "), "\uFFFD"); got != s {
				t.Fatalf("isCollapsed(%q), but it collapses to %q", s, got)
			}
		}
	}
	if took < 1000 {
		t.Fatalf("only %d collapsed texts", took)
	}
}

// TestIsMarkupWithoutParseMediaType: isMarkup decides as it did with
// mime.ParseMediaType (its media type when it parses, the text before
// ";" otherwise), on awkward Content-Types.
func TestIsMarkupWithoutParseMediaType(t *testing.T) {
	old := func(ct string) bool {
		media, _, err := mime.ParseMediaType(ct)
		if err != nil {
			media, _, _ = strings.Cut(strings.ToLower(strings.TrimSpace(ct)), ";")
		}
		if media == "" {
			media = "text/plain" // the body below sniffs as text
		}
		return strings.HasPrefix(media, "text/") || strings.Contains(media, "html") || strings.Contains(media, "xml")
	}
	for _, ct := range []string{"text/html", "TEXT/HTML; charset=utf-8", " text/html ; charset=utf-8", "text/html; charset",
		"application/xhtml+xml", "application/json", "image/png; x=\"a;b\"", ";", " ; text/html", "\u00a0text/plain\u00a0;",
		"text", "html", "application/octet-stream; html", "application/x-html ;", "", "  ", "a/b c; d=e", "multipart/x; boundary=\"\""} {
		page := &spider.Page{ResponseHeaders: map[string][]string{"Content-Type": {ct}}, RawBody: []byte("plain text")}
		if got, want := isMarkup(page), old(ct); got != want {
			t.Errorf("isMarkup(%q) = %v, with ParseMediaType %v", ct, got, want)
		}
	}
}
