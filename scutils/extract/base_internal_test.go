package extract

import "testing"

// plainBaseAgrees fails t when plainBase takes u and sets other prefix or
// fragBase than baseURL does.
func plainBaseAgrees(t *testing.T, u string) bool {
	fast, slow := &page{url: u, text: "<p>x</p>"}, &page{url: u, text: "<p>x</p>"}
	defer fast.release()
	defer slow.release()
	if !fast.plainBase() {
		return false
	}
	slow.baseURL()
	if fast.prefix != slow.prefix || fast.fragBase != slow.fragBase {
		t.Fatalf("%q: plainBase gives prefix %q fragBase %q, baseURL %q %q", u, fast.prefix, fast.fragBase, slow.prefix, slow.fragBase)
	}
	return true
}

func TestPlainBaseIsBaseURLs(t *testing.T) {
	for _, u := range []string{"http://127.0.0.1:8080/page/1/2", "https://shop.example/list/", "http://shop.example", "http://Shop.Example:80/a?b=c&d",
		"http://a..b/x", "https://x-y.z/~a_b.c/?q=1"} {
		if !plainBaseAgrees(t, u) {
			t.Errorf("%q: not taken", u)
		}
	}
	for _, u := range []string{"HTTP://shop.example/", "http://shop.example/a#f", "http://u@h/", "http://h:/", "http://h/a/../b", "ftp://h/", "http://h/%41",
		"http://h//a", "/relative", ""} {
		if plainBaseAgrees(t, u) {
			t.Errorf("%q: taken, want it parsed", u)
		}
	}
	// A page with a <base href> resolves against it: never the fast way.
	p := &page{url: "http://shop.example/", text: `<base href="http://other.example/x/"><a href="/y">`}
	defer p.release()
	if p.plainBase() || p.resolve("href", "/y") != "http://other.example/y" {
		t.Errorf("a page with a base: plainBase %v, /y resolves to %s", p.plainBase(), p.resolve("href", "/y"))
	}
}

func FuzzPlainBase(f *testing.F) {
	for _, u := range []string{"http://127.0.0.1:8080/page/1/2", "https://shop.example/list/?a=b", "http://h", "http://a.b:1/~x"} {
		f.Add(u)
	}
	f.Fuzz(func(t *testing.T, u string) { plainBaseAgrees(t, u) })
}
