package fingerprint

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestIsCanonicalAgreesWithEveryStep: every URL isCanonical passes comes
// out of the full steps unchanged, on URLs built from the characters and
// pieces that matter (case, escapes, ports, dots, params, queries,
// fragments, white space, IDNA); and both kinds occur.
func TestIsCanonicalAgreesWithEveryStep(t *testing.T) {
	schemes := []string{"http://", "https://", "HTTP://", "ftp://", "http:/", "//", ""}
	hosts := []string{"example.com", "Example.com", "a.b-c.d", "127.0.0.1", "xn--bcher-kva.example", "a..b", ".a", "a.",
		"b\u00fccher.example", "[::1]", "user@host", "h%41st", strings.Repeat("a", 63) + ".com", strings.Repeat("a", 64) + ".com",
		"", "a_b.com", "a b.com", "-a.com"}
	ports := []string{"", ":80", ":8080", ":", ":080", ":0", ":65535", ":65536", ":99999", ":123456", ":8a"}
	pieces := []string{"/", "a", "Z", "0", "-", ".", "_", "~", "%41", "%2f", "%", ";p", "?q=1", "?b=2&a=1", "#f", "#!s",
		" ", "\t", "|", "[", "'", "(", "\u00e9", "..", "//", "+", ",", "=", "@", ":", "&"}
	rng := rand.New(rand.NewPCG(1, 2))
	fast, slow := 0, 0
	for range 200_000 {
		var b strings.Builder
		b.WriteString(schemes[rng.IntN(len(schemes))])
		b.WriteString(hosts[rng.IntN(len(hosts))])
		b.WriteString(ports[rng.IntN(len(ports))])
		if rng.IntN(8) > 0 {
			b.WriteByte('/')
		}
		for range rng.IntN(6) {
			if rng.IntN(3) == 0 {
				b.WriteString(pieces[rng.IntN(len(pieces))])
			} else {
				b.WriteString(pieces[rng.IntN(8)]) // mostly plain ones
			}
		}
		u := b.String()
		if !isCanonical(u) {
			slow++
			continue
		}
		fast++
		if got := canonicalize(u); got != u {
			t.Fatalf("isCanonical(%q), but its canonical form is %q", u, got)
		}
	}
	if fast < 1000 || slow < 1000 {
		t.Fatalf("%d URLs took the fast path, %d the steps: the test does not try both", fast, slow)
	}
}
