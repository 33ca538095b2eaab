package fingerprint_test

import (
	"crypto/sha1"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/fingerprint"
)

// goldens were computed with Scrapy 2.8.0 and w3lib 2.1.1 (Debian's
// python3-scrapy, Python 3.11): for each URL u,
// canonicalize_url(Request(u).url) and request_fingerprint(Request(u)), as
//
//	from scrapy import Request
//	from scrapy.utils.request import request_fingerprint
//	from w3lib.url import canonicalize_url
//	r = Request(u); print(canonicalize_url(r.url), request_fingerprint(r))
var goldens = []struct{ url, canonical, fingerprint string }{
	{"http://www.example.com/", "http://www.example.com/", "818492beabce92630298c5cc9d88fbe69a26be47"},
	{"http://www.example.com", "http://www.example.com/", "818492beabce92630298c5cc9d88fbe69a26be47"},
	{"http://www.example.com/do?c=3&b=5&b=2&a=50", "http://www.example.com/do?a=50&b=2&b=5&c=3", "34f3b3dbc18b05c892b686f3d33e1c7f5c2054ab"},
	{"http://www.example.com/résumé", "http://www.example.com/r%C3%A9sum%C3%A9", "261e61bade371b0ee42cbdb4199cfc9d4cd55ffd"},
	{"http://www.example.com/résumé?q=résumé", "http://www.example.com/r%C3%A9sum%C3%A9?q=r%C3%A9sum%C3%A9", "5da06dd4cc83f2c48edf110be9f475568c615397"},
	{"HTTP://WWW.EXAMPLE.COM/Path/To?Q=A", "http://www.example.com/Path/To?Q=A", "b675bbd639eb0e28425ba898e0bacd02f3a7948a"},
	{"http://www.example.com:80/", "http://www.example.com:80/", "120ff6dae2b4e532f93a8454f703c03391cfdcb0"},
	{"https://example.com:443/a", "https://example.com:443/a", "9df43720d36a0d192ff62940ff0cc4013c245c9e"},
	{"http://example.com:8080/a/b?x=1#frag", "http://example.com:8080/a/b?x=1", "e8643402c52195b9cf3b571437cb9bd2bb5c6280"},
	{"http://example.com/#frag", "http://example.com/", "628735d3a16b67b1dd5fbfbd10a15f2c28362bbd"},
	{"http://example.com/page#!key=value", "http://example.com/page?_escaped_fragment_=key%3Dvalue", "86ac0031631e8e6169030218a9afd4e19cbf2a4d"},
	{"http://example.com/page?k1=v1&k2=v2#!key=value", "http://example.com/page?_escaped_fragment_=key%3Dvalue&k1=v1&k2=v2", "ae3a8894a2c7af054c81451f32afd85c5573748c"},
	{"http://example.com/page?#!key=value", "http://example.com/page?_escaped_fragment_=key%3Dvalue", "86ac0031631e8e6169030218a9afd4e19cbf2a4d"},
	{"http://example.com/page#!", "http://example.com/page?_escaped_fragment_=", "a292cd7338667d084161824750dcb14ac869d12b"},
	{"http://example.com/?_escaped_fragment_=old&b=1#!new", "http://example.com/?_escaped_fragment_=new&b=1", "5d48c95014e80289f448ca82b039b6dd0bc82e3f"},
	{"http://example.com/a%2fb%3fc%2Fd", "http://example.com/a%2Fb%3Fc%2Fd", "0f27261d2566d9dcc28b3515ecfd442fc4d14c08"},
	{"http://example.com/a%7eb%7Ec", "http://example.com/a~b~c", "20309cf1966e7c7e8816bb4f171298f21bb066be"},
	{"http://example.com/a%20b c", "http://example.com/a%20b%20c", "03d62f2ccb02fd7bc9eca8b1b4ada96e05fc8094"},
	{"http://example.com/?q=a%20b+c", "http://example.com/?q=a+b+c", "55c40f5ae43e3863f851ad95b71bc1d4dad764b5"},
	{"http://example.com/?q=a+b&q=a%2Bb", "http://example.com/?q=a+b&q=a%2Bb", "d3a0278d368ed37125c7ac4de3abc67175e52889"},
	{"http://example.com/?a&b=&c=1", "http://example.com/?a=&b=&c=1", "0122b6c1fcf17ded4b7f5cdf91923e9c936594f0"},
	{"http://example.com/?a=1;b=2", "http://example.com/?a=1&b=2", "51b185f56f916957558db9784e0a03db9b4603bf"},
	{"http://example.com/?&&a=1&&", "http://example.com/?a=1", "ae7a177c888b995deaae65ecea57f79ee48739b9"},
	{"http://example.com/?=x", "http://example.com/?=x", "22b38af8a0903a21adb9dfccae29be8e3d902bd2"},
	{"http://example.com/path;params?q=1", "http://example.com/path;params?q=1", "68192af03c92ce0b95b12f1b60e1c1c351b26ab3"},
	{"http://example.com/a;p/b;q?x", "http://example.com/a;p/b;q?x=", "7f968ba2c2806d73a79f1e78c29870b8a87ad878"},
	{"http://example.com/%zz/%4", "http://example.com/%zz/%4", "9184bcadb02366ef80dc3b738ecfc6b8019f845b"},
	{"http://example.com/?q=%zz%4", "http://example.com/?q=%25zz%254", "e7dd12e92cd4e0183d43b02d5e18338d4da35937"},
	{"http://example.com/?q=%a3", "http://example.com/?q=%A3", "249c50b4d4a6814e90a3cfb351dc89db231e4d9c"},
	{"http://example.com/%a3", "http://example.com/%A3", "c62c8e0e40e97ba8c69889bae074437c9fdda61d"},
	{"http://example.com/a|b?c|d", "http://example.com/a|b?c%7Cd=", "21bae2905e47186713770129fc6512cd03cc17ce"},
	{"http://example.com/a[b]?c[]=d", "http://example.com/a[b]?c%5B%5D=d", "0fc7be3bef954a5453f51f4fdf14aace4d091115"},
	{"http://example.com/it's?it's=1", "http://example.com/it's?it%27s=1", "a1994293885885d440a5ebc006abf4c240aa3589"},
	{"http://example.com/\"quoted\"?<tag>", "http://example.com/%22quoted%22?%3Ctag%3E=", "20205a35e789f8abbdf16cc2877fd63977b9eb1c"},
	{"http://example.com/a\\b", "http://example.com/a%5Cb", "f14a9ef13638e7fc7a9b50d7d4830a8af5fc3ae6"},
	{"  http://example.com/trim  ", "http://example.com/trim", "c6e5089da2d236d431b60e7f9cf193bac2d60c97"},
	{"http://exa\nmple.com/new\tline\r", "http://example.com/newline", "da01b2f8c4d106c4a2bac0d4750318887ae6f0aa"},
	{"http://user:Pass@Example.COM:8000/x", "http://user:pass@example.com:8000/x", "0e08287651daca28217b9734f49826c97aa956aa"},
	{"http://us er:p%41ss@example.com/", "http://us%20er:pass@example.com/", "8f509a580cb2e0e8dab9a35f7e7f001d140973ea"},
	{"http://example.com:/x", "http://example.com/x", "084543b8fc242bd66e8b1172ac9732ca7aa64bc6"},
	{"http://example.com:080/x", "http://example.com:80/x", "4fd9102a9f83b2cb6a0ba65ed55b827d5a68138d"},
	{"http://bücher.de/straße", "http://xn--bcher-kva.de/stra%C3%9Fe", "7e60c4cdd95e480a7e5a787f8db5b13d5a05df1d"},
	{"http://例え.テスト/パス?キー=値", "http://xn--r8jz45g.xn--zckzah/%E3%83%91%E3%82%B9?%E3%82%AD%E3%83%BC=%E5%80%A4", "6c6c792b8dd7e480b45102afa6f8666da701a9bf"},
	{"http://xn--bcher-kva.de/", "http://xn--bcher-kva.de/", "ec10696784a35693b69dbf344d0fd9faa900a2b1"},
	{"http://127.0.0.1:8000/a?b=c", "http://127.0.0.1:8000/a?b=c", "293a099dd16f9f686ddce9192f9a6715e601515d"},
	{"http://localhost/", "http://localhost/", "72b4a168fc5218fa8ff2091dbcad1c9d584fcf90"},
	{"http://example.com/../a/./b/../c", "http://example.com/../a/./b/../c", "718d8f6093c1191ba1c5e38b2baeec1d5497e856"},
	{"http://example.com/~user/index.html", "http://example.com/~user/index.html", "dca168e59a4575331161ffc76bf2d6602ef7663b"},
	{"http://example.com/?utm_source=x&id=1&ID=2", "http://example.com/?ID=2&id=1&utm_source=x", "0f48b7ca72344f5f3b2b8e46a9bbdca7e3e73de6"},
	{"http://example.com/?q=%E2%82%AC&r=€", "http://example.com/?q=%E2%82%AC&r=%E2%82%AC", "8bc21a7279ebe5cf55e09ac4596f8e9de6d22ade"},
	{"http://example.com/?q=%e2%82%ac", "http://example.com/?q=%E2%82%AC", "98b4501fe4994c74619cd4fa16616f9683f0f2c1"},
	{"http://example.com/?a=1#!b=2&c=3", "http://example.com/?_escaped_fragment_=b%3D2%26c%3D3&a=1", "8f9f6640214ab148e35cffe46fb8bddb9ffabf76"},
	{"http://example.com/path/?a=b#", "http://example.com/path/?a=b", "0cb91f1fc8a5b1b39f29162a4eb1aeb94a14283b"},
	{"http://example.com/?", "http://example.com/", "628735d3a16b67b1dd5fbfbd10a15f2c28362bbd"},
	{"https://example.com/search?q=go+lang&page=2&sort=", "https://example.com/search?page=2&q=go+lang&sort=", "bcc6482808556ac2141fb600a2e06dbab59d1600"},
	{"http://example.com/a?b=c?d", "http://example.com/a?b=c%3Fd", "b27974ee96663fa3e36ff4b36d133ace0934d793"},
	{"http://example.com/a#b#c", "http://example.com/a", "740843699f4929b87021730b96f69cfbb2bd54a8"},
	{"http://EXAMPLE.com./", "http://example.com./", "69ab768d36dfe4209f0e2c4a577a68b7bd764839"},
	{"http://example.com/%2e%2e/x", "http://example.com/../x", "97ee290a4154e905c24f07c4900e8dc0b0e3ecba"},
	{"http://example.com/a%2Bb?x=a%2Bb", "http://example.com/a+b?x=a%2Bb", "a554e1e0e9d9bca30d068958955f0c16afcd3df4"},
	{"http://example.com/?x=%20&y=+", "http://example.com/?x=+&y=+", "b8c55f44b6a0fa9980db89529293270bdd23bcb7"},
	{"http://example.com/?q=é%C3%A9%e9", "http://example.com/?q=%C3%A9%C3%A9%E9", "5ed58d030e8a0273e2858079cb03e89ecfd26600"},
	{"http://example.com/?%E2%82=1", "http://example.com/?%E2%82=1", "a5af0c939deb322bf0e3904a45a75a8fb4d50fa0"},
	{"http://example.com/!$&'()*+,;=:@/", "http://example.com/!$&'()*+,;=:@/", "360bdaa649d14c25aca0fd73ae2d026e350639c5"},
	{"http://example.com/?!$'()*,:@/?=1", "http://example.com/?%21%24%27%28%29%2A%2C%3A%40%2F%3F=1", "9d9fbfcb4792f56faf73e020bff58a4e978f158b"},
	{"http://example.com/\u0001ctrl", "http://example.com/%01ctrl", "9782253a73edf21d96d72625759e8bfb716800b0"},
}

func TestFingerprintMatchesScrapysRequestFingerprint(t *testing.T) {
	for _, g := range goldens {
		if got := fingerprint.Canonicalize(g.url); got != g.canonical {
			t.Errorf("Canonicalize(%q)\n got %q\nwant %q", g.url, got, g.canonical)
		}
		if got := fingerprint.Of(g.url); got != g.fingerprint {
			t.Errorf("Fingerprint(%q) = %s, want %s", g.url, got, g.fingerprint)
		}
	}
}

func TestFingerprintIsSha1OfGetAndTheCanonicalURL(t *testing.T) {
	sum := sha1.Sum([]byte("GEThttp://www.example.com/do?a=50&b=2&b=5&c=3"))
	if got := fingerprint.Of("http://www.example.com/do?c=3&b=5&b=2&a=50"); got != hex.EncodeToString(sum[:]) {
		t.Fatalf("fingerprint %s", got)
	}
}

func TestEquivalentURLsShareAFingerprint(t *testing.T) {
	same := [][]string{
		{"http://example.com/?b=2&a=1", "http://EXAMPLE.com/?a=1&b=2", "http://example.com?a=1&b=2#top", "http://example.com/?a=1;b=2"},
		{"http://example.com/caf%c3%a9", "http://example.com/café", "http://example.com/caf%C3%A9"},
		{"http://example.com/a b", "http://example.com/a%20b"},
	}
	for _, urls := range same {
		want := fingerprint.Of(urls[0])
		for _, u := range urls[1:] {
			if got := fingerprint.Of(u); got != want {
				t.Errorf("Fingerprint(%q) = %s, Fingerprint(%q) = %s", u, got, urls[0], want)
			}
		}
	}
	different := []string{"http://example.com/a", "https://example.com/a", "http://example.com/A",
		"http://example.com:8080/a", "http://example.com/a?x", "http://example.com/a/", "http://example.com/a%2Fb", "http://example.com/a/b"}
	seen := map[string]string{}
	for _, u := range different {
		fp := fingerprint.Of(u)
		if other, dup := seen[fp]; dup {
			t.Errorf("%q and %q share a fingerprint", u, other)
		}
		seen[fp] = u
	}
}

func TestCanonicalizeKeepsIPv6Brackets(t *testing.T) {
	// w3lib 1.18 (the original's) keeps them; 2.1.1 drops them by mistake.
	if got := fingerprint.Canonicalize("http://[::1]:8080/a?b=1&a=2"); got != "http://[::1]:8080/a?a=2&b=1" {
		t.Fatalf("got %q", got)
	}
}

func TestCanonicalizeIsStable(t *testing.T) {
	for _, g := range goldens {
		once := fingerprint.Canonicalize(g.url)
		if twice := fingerprint.Canonicalize(once); twice != once {
			t.Errorf("Canonicalize(%q) = %q, again %q", g.url, once, twice)
		}
		if fingerprint.Of(once) != g.fingerprint {
			t.Errorf("Fingerprint of canonical %q differs from %q's", once, g.url)
		}
	}
}

func FuzzCanonicalize(f *testing.F) {
	for _, g := range goldens {
		f.Add(g.url)
	}
	f.Add("http://[::1")
	f.Add("http://a:b:c@d@e:99999/%")
	f.Fuzz(func(t *testing.T, u string) {
		c := fingerprint.Canonicalize(u)
		if strings.HasPrefix(c, "http://") || strings.HasPrefix(c, "https://") {
			_, rest, _ := strings.Cut(c, "//")
			if i := strings.IndexAny(rest, "/?"); i >= 0 && strings.ContainsAny(rest[i:], " \t\n\r#") {
				t.Fatalf("Canonicalize(%q) = %q has white space or a fragment after the host", u, c)
			}
		}
		if len(fingerprint.Of(u)) != 40 {
			t.Fatal("fingerprint is not 40 hex digits")
		}
	})
}

func BenchmarkFingerprint(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		fingerprint.Of("http://www.example.com/section/7/article-42.html?ref=list&page=3#comments")
	}
}
