package scraper_test

import (
	"strings"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin/plugintest"
	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugins/scraper"
)

// crawl is a valid crawl request with extra fields (JSON text) added.
func crawl(fields string) string {
	return `{"url": "http://example.com/", "appid": "testapp", "crawlid": "c1"` + fields + `}`
}

func TestValidateRefusesCrawlsTheCrawlersCannotCarryOut(t *testing.T) {
	for _, tc := range []struct{ name, raw, reason string }{
		{"a file: URL", `{"url": "file:///etc/passwd", "appid": "testapp", "crawlid": "c1"}`, `url: scheme "file" not allowed; want http or https`},
		{"a javascript: URL", `{"url": "javascript:alert(1)", "appid": "testapp", "crawlid": "c1"}`, `url: scheme "javascript" not allowed`},
		{"an ftp: URL", `{"url": "ftp://example.com/file", "appid": "testapp", "crawlid": "c1"}`, `url: scheme "ftp" not allowed`},
		{"a gopher: URL", `{"url": "gopher://example.com/", "appid": "testapp", "crawlid": "c1"}`, `url: scheme "gopher" not allowed`},
		{"a data: URL", `{"url": "data:text/html,<h1>hi</h1>", "appid": "testapp", "crawlid": "c1"}`, `url: scheme "data" not allowed`},
		{"a mailto: URL", `{"url": "mailto:a@example.com", "appid": "testapp", "crawlid": "c1"}`, `url: scheme "mailto" not allowed`},
		{"a relative URL", `{"url": "/relative/path", "appid": "testapp", "crawlid": "c1"}`, `url: "/relative/path" is relative or has no scheme`},
		{"a URL without a scheme", `{"url": "www.example.com/page", "appid": "testapp", "crawlid": "c1"}`, `url: "www.example.com/page" is relative or has no scheme`},
		{"a scheme-relative URL", `{"url": "//example.com/page", "appid": "testapp", "crawlid": "c1"}`, `is relative or has no scheme`},
		{"an empty URL", `{"url": "", "appid": "testapp", "crawlid": "c1"}`, `url: "" is relative or has no scheme`},
		{"an http URL without a host", `{"url": "http:///path", "appid": "testapp", "crawlid": "c1"}`, `url: "http:///path" has no host`},
		{"an http URL written as opaque", `{"url": "http:example.com", "appid": "testapp", "crawlid": "c1"}`, `url: "http:example.com" has no host`},
		{"a URL that does not parse", `{"url": "http://%zz/", "appid": "testapp", "crawlid": "c1"}`, `url: "http://%zz/" does not parse`},
		{"a URL with a space in the host", `{"url": "http://exa mple.com/", "appid": "testapp", "crawlid": "c1"}`, `does not parse`},
		{"a port out of range", `{"url": "http://example.com:99999/", "appid": "testapp", "crawlid": "c1"}`, `url: port "99999" out of range`},
		{"an empty spiderid", crawl(`, "spiderid": ""`), `spiderid: "" is empty or holds ':'`},
		{"a spiderid with a colon", crawl(`, "spiderid": "link:x"`), `spiderid: "link:x" is empty or holds ':'`},
		{"an allowed domain written as a URL", crawl(`, "allowed_domains": ["http://example.com"]`), `allowed_domains[0]: "http://example.com": a URL, not a host name`},
		{"an allowed domain with a path", crawl(`, "allowed_domains": ["example.com", "example.org/news"]`), `allowed_domains[1]: "example.org/news": '/' not allowed`},
		{"an empty allowed domain", crawl(`, "allowed_domains": [""]`), `allowed_domains[0]: "": empty host name`},
		{"an allowed domain with a bad port", crawl(`, "allowed_domains": ["example.com:0"]`), `port "0" out of range`},
		{"an allow_regex that does not compile", crawl(`, "allow_regex": ["(unclosed"]`), "allow_regex[0] \"(unclosed\": error parsing regexp: missing closing ): `(unclosed`"},
		{"a deny_regex with a look-ahead (not RE2)", crawl(`, "deny_regex": [".*", "a(?=b)"]`), `deny_regex[1] "a(?=b)": error parsing regexp: invalid or unsupported Perl syntax`},
		{"a back-reference (not RE2)", crawl(`, "allow_regex": ["(a)\\1"]`), `allow_regex[0] "(a)\\1": error parsing regexp: invalid escape sequence`},
		{"a Unicode class Python rejects", crawl(`, "allow_regex": ["\\pL+"]`), `\p (a Unicode class) is RE2 syntax that Python's re rejects`},
		{"\\Q quoting Python rejects", crawl(`, "allow_regex": ["\\Q.html\\E"]`), `\Q...\E (quoting) is RE2 syntax`},
		{"\\z Python rejects", crawl(`, "deny_regex": ["\\.pdf\\z"]`), `\z is RE2 syntax that Python's re rejects; use $`},
		{"a POSIX class Python reads as a set", crawl(`, "allow_regex": ["[[:digit:]]+"]`), `[:digit:] (a POSIX class) is RE2 syntax that Python's re reads as a set of characters`},
		{"{,n} that Python reads as a repetition", crawl(`, "allow_regex": ["/a{,3}"]`), `{,3} is literal text in RE2 but a repetition in Python's re; write {0,3}`},
		{"the U flag Python reads as Unicode", crawl(`, "allow_regex": ["(?U)a+"]`), `the U flag makes RE2 ungreedy`},
		{"an RE2 named group Python rejects", crawl(`, "allow_regex": ["(?<year>\\d{4})"]`), `(?<name>...) is RE2 syntax that Python's re rejects; use (?P<name>...)`},
		{"\\x{...} Python rejects", crawl(`, "allow_regex": ["\\x{e9}"]`), `\x{...} is RE2 syntax that Python's re rejects`},
		{"an octal escape Python reads as a back-reference", crawl(`, "allow_regex": ["\\12"]`), `\1 is an octal escape in RE2 but a back-reference in Python's re`},
		{"a user agent with a line break", crawl(`, "useragent": "bot\r\nX-Evil: 1"`), `useragent: control character at offset 3 (not allowed in an HTTP header)`},
		{"a cookie with a NUL", crawl(`, "cookie": "a=b\u0000"`), `cookie: control character at offset 3`},
		{"two problems, both named", `{"url": "ftp://x.com/", "appid": "testapp", "crawlid": "c1", "deny_regex": ["["]}`,
			`url: scheme "ftp" not allowed; want http or https; deny_regex[0] "[": error parsing regexp: missing closing ]`},
	} {
		t.Run(tc.name, func(t *testing.T) { plugintest.ExpectRefused(t, &scraper.Handler{}, tc.raw, tc.reason) })
	}
}

func TestValidateAcceptsWhatTheCrawlersCanCarryOut(t *testing.T) {
	for _, raw := range []string{
		crawl(``),
		`{"url": "https://www.example.co.uk/path?q=1#f", "appid": "testapp", "crawlid": "c1"}`,
		`{"url": "HTTP://WWW.Example.COM/", "appid": "testapp", "crawlid": "c1"}`,
		`{"url": "http://127.0.0.1:8080/page", "appid": "testapp", "crawlid": "c1"}`,
		`{"url": "http://[::1]:8080/", "appid": "testapp", "crawlid": "c1"}`,
		`{"url": "http://user:pw@bücher.de/straße", "appid": "testapp", "crawlid": "c1"}`,
		crawl(`, "spiderid": "wandering", "maxdepth": 3, "priority": 100, "expires": 1893456000, "domain_max_pages": 10`),
		crawl(`, "allowed_domains": ["example.com", "Example.ORG.", "127.0.0.1:8000", "bücher.de", "under_score.example"]`),
		crawl(`, "allow_regex": [".*/blog/.*", "^https?://[^/]+/news/\\d{4}/", "(?i)\\.HTML?$", "(?P<y>\\d+)-", "a{2,}", "[\\]a-z]", "\\0"],
		        "deny_regex": [".*\\.pdf$", "(?s:.)", "[^[:]", "\\x41", ""]`),
		crawl(`, "deny_extensions": ["zip", ".tar.gz"], "useragent": "my-bot/1.0\t(+http://x)", "cookie": "a=b; c=d", "attrs": {"k": [1, 2.5, null]}`),
	} {
		if req, err := plugintest.Validate(t, &scraper.Handler{}, raw); err != nil {
			t.Errorf("Validate(%s) = %v, want it accepted", raw, err)
		} else if req["spiderid"] == nil {
			t.Errorf("Validate(%s) did not fill in the defaults: %v", raw, req)
		}
	}
}

func TestValidateRefusesBadShapingAndRulesNamingThem(t *testing.T) {
	for _, tc := range []struct{ name, raw, reason string }{
		{"an unknown method", crawl(`, "method": "BREW"`), `at '/method': value must be one of`},
		{"a session that is not a boolean", crawl(`, "session": "yes"`), `at '/session': got string, want boolean`},
		{"a Host header", crawl(`, "headers": {"host": "evil.example"}`), `headers: Host is the cluster's to send (the URL's host is sent)`},
		{"a hop-by-hop header", crawl(`, "headers": {"Connection": "keep-alive"}`), `headers: Connection is the cluster's to send (a hop-by-hop header`},
		{"a header that is not a string", crawl(`, "headers": {"X-N": 1}`), `headers: X-N: not a string`},
		{"a body over the limit", crawl(`, "method": "POST", "body": "` + strings.Repeat("b", 65537) + `"`), `body: 65537 bytes, more than the limit of 65536`},
		{"invalid CSS", crawl(`, "extract": {"title": {"css": "a["}}`), `extract.title: css "a[": `},
		{"invalid XPath", crawl(`, "extract": {"price": {"xpath": "//p[@class="}}`), `extract.price: xpath "//p[@class=": `},
		{"an invalid regex", crawl(`, "extract": {"sku": {"regex": "(a"}}`), `extract.sku: regex "(a": error parsing regexp`},
		{"two kinds in one rule", crawl(`, "extract": {"both": {"css": "a", "regex": "a"}}`), `extract.both: has css and regex: want exactly one of css, xpath, regex or jsonld`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := plugintest.Validate(t, &scraper.Handler{}, tc.raw)
			if err == nil || !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("got %v, want a reason holding %q", err, tc.reason)
			}
		})
	}
}

func TestValidateAcceptsShapedRequestsWithRules(t *testing.T) {
	raw := crawl(`, "method": "POST", "body": "user=me", "headers": {"X-Token": "t", "Cookie": "a=1", "User-Agent": "ua/1"},
		"session": true, "extract": {"title": {"css": "title"}, "links": {"xpath": "//a/@href", "all": true, "url_regex": "/blog/"},
		"sku": {"regex": "SKU: (\\w+)"}, "ld": {"jsonld": true}, "img": {"css": "img", "attr": "src"}}`)
	if _, err := plugintest.Validate(t, &scraper.Handler{}, raw); err != nil {
		t.Errorf("got %v, want it accepted", err)
	}
}
