package fetch

import (
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestConnKeyIsJoinHostPorts: the pool key and the address to dial are
// what net.JoinHostPort of the URL's host and port (the scheme's when it
// has none) gives, lower-cased for the key, whether or not the host was
// taken as it is.
func TestConnKeyIsJoinHostPorts(t *testing.T) {
	for _, raw := range []string{"http://127.0.0.1:8080/page/1", "http://Example.COM/", "https://a.com", "https://a.com:443/x",
		"http://[::1]:80/", "http://[::1]/", "http://[fe80::1%25en0]:8080/", "http://a.com:/", "HTTP://A.com:81",
		"http://a.com:0080/", "https://xn--bcher-kva.example:8443/", "http://h:1", "http://:80/", "http://1.2.3.4:65535"} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		key, hostport := connKey(&http.Request{URL: u})
		scheme, port := strings.ToLower(u.Scheme), u.Port()
		if port == "" {
			port = map[string]string{"http": "80", "https": "443"}[scheme]
		}
		want := net.JoinHostPort(u.Hostname(), port)
		if hostport != want || key != (poolKey{scheme: scheme, hostport: strings.ToLower(want)}) {
			t.Errorf("%s: key %+v, hostport %q; want %q", raw, key, hostport, want)
		}
	}
}

// TestPrintsAsItselfOnlyWhenParsingAndPrintingGiveItBack: every URL the
// shortcut takes as it is prints as itself once parsed, on listed and
// generated URLs; and it takes the test site's.
func TestPrintsAsItselfOnlyWhenParsingAndPrintingGiveItBack(t *testing.T) {
	urls := []string{"http://127.0.0.1:8080/page/1/2", "https://a.com", "http://a.com/", "http://a.com:/", "http://a.com:80",
		"http://A.com/", "HTTP://a.com/", "http://a.com//x", "http://a.com/a:b", "http://a.com/%41", "http://a.com/?q",
		"http://a.com/#f", "http://u@a.com/", "http:///x", "http://a.com:8x/", "http://[::1]:80/", " http://a.com/", "http://a.com/ "}
	var r uint64 = 1
	next := func(n int) int { // a small LCG: the same URLs each run
		r = r*6364136223846793005 + 1442695040888963407
		return int((r >> 33) % uint64(n))
	}
	hostChars, pathChars, odd := "ab9.-", "aZ09/-._~", "A:?#%@[] "
	for range 20000 {
		b := []byte([]string{"http://", "https://"}[next(2)])
		for range next(6) {
			b = append(b, hostChars[next(len(hostChars))])
		}
		if next(2) == 0 {
			b = append(b, ':')
			for range next(4) {
				b = append(b, "80x"[next(3)])
			}
		}
		for range next(12) {
			b = append(b, pathChars[next(len(pathChars))])
		}
		if next(4) == 0 { // and one character the shortcut does not take
			at := next(len(b) + 1)
			b = append(b[:at], append([]byte{odd[next(len(odd))]}, b[at:]...)...)
		}
		urls = append(urls, string(b))
	}
	took := 0
	for _, s := range urls {
		if !printsAsItself(s) {
			continue
		}
		took++
		u, err := url.Parse(s)
		if err != nil || u.String() != s {
			t.Fatalf("%q taken as it is; parsed and printed: %v, %v", s, u, err)
		}
	}
	if !printsAsItself(urls[0]) || took < 100 {
		t.Fatalf("the shortcut took %d of %d URLs (the test site's: %v)", took, len(urls), printsAsItself(urls[0]))
	}
}
