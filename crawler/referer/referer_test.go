package referer_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/referer"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// The policies as Scrapy's referer module and the W3C tables give them.
func TestEachPolicySendsWhatItsSpecificationSays(t *testing.T) {
	const page = "https://user:pw@example.com/a/page?q=1#frag"
	cases := []struct {
		policy, target, want string
	}{
		{referer.ScrapyDefault, "https://example.com/b", "https://example.com/a/page?q=1"},
		{referer.ScrapyDefault, "https://other.org/", "https://example.com/a/page?q=1"},
		{referer.ScrapyDefault, "http://example.com/b", ""},
		{referer.NoReferrerWhenDowngrade, "http://other.org/", ""},
		{referer.NoReferrerWhenDowngrade, "https://other.org/", "https://example.com/a/page?q=1"},
		{referer.NoReferrer, "https://example.com/b", ""},
		{referer.SameOrigin, "https://example.com/b", "https://example.com/a/page?q=1"},
		{referer.SameOrigin, "https://other.org/", ""},
		{referer.SameOrigin, "http://example.com/b", ""},
		{referer.Origin, "http://other.org/", "https://example.com/"},
		{referer.StrictOrigin, "https://other.org/", "https://example.com/"},
		{referer.StrictOrigin, "http://other.org/", ""},
		{referer.OriginWhenCrossOrigin, "https://example.com/b", "https://example.com/a/page?q=1"},
		{referer.OriginWhenCrossOrigin, "http://other.org/", "https://example.com/"},
		{referer.StrictOriginWhenCrossOrigin, "https://example.com/b", "https://example.com/a/page?q=1"},
		{referer.StrictOriginWhenCrossOrigin, "https://other.org/", "https://example.com/"},
		{referer.StrictOriginWhenCrossOrigin, "http://other.org/", ""},
		{referer.UnsafeURL, "http://other.org/", "https://example.com/a/page?q=1"},
	}
	for _, c := range cases {
		if got := referer.Apply(c.policy, page, c.target); got != c.want {
			t.Errorf("%s to %s: %q, want %q", c.policy, c.target, got, c.want)
		}
	}
	if got := referer.Apply(referer.UnsafeURL, "file:///etc/passwd", "http://example.com/"); got != "" {
		t.Errorf("from a file URL: %q, want none", got)
	}
	if got := referer.Apply(referer.ScrapyDefault, "http://example.com/", "http://example.com/x"); got != "http://example.com/" {
		t.Errorf("http to http: %q", got)
	}
}

func TestAPagesReferrerPolicyHeaderDecidesForItsLinks(t *testing.T) {
	r := referer.New(referer.ScrapyDefault)
	h := http.Header{"Referrer-Policy": {"unknown-policy, origin"}}
	if got := r.For("https://example.com/a", h, "https://example.com/b"); got != "https://example.com/" {
		t.Errorf("with the page's origin policy: %q", got)
	}
	h = http.Header{"Referrer-Policy": {"no-such-thing"}}
	if got := r.For("https://example.com/a", h, "https://example.com/b"); got != "https://example.com/a" {
		t.Errorf("with an unknown page policy (the setting's applies): %q", got)
	}
}

func TestTheSettingsTurnItOffAndRefuseUnknownPolicies(t *testing.T) {
	load := func(env ...string) *settings.Settings {
		t.Helper()
		s, err := settings.Load(referer.Settings(), settings.Options{Environ: env})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	r, err := referer.FromSettings(load())
	if err != nil {
		t.Fatal(err)
	}
	if got := r.For("http://example.com/a", nil, "http://example.com/b"); got != "http://example.com/a" {
		t.Errorf("by default: %q, want the page's URL", got)
	}
	if r, _ := referer.FromSettings(load("REFERER_ENABLED=false")); r.For("http://example.com/a", nil, "http://example.com/b") != "" {
		t.Error("REFERER_ENABLED false still sends a Referer")
	}
	if _, err := referer.FromSettings(load("REFERRER_POLICY=sometimes")); err == nil || !strings.Contains(err.Error(), "REFERRER_POLICY") || !strings.Contains(err.Error(), "no-referrer") {
		t.Errorf("an unknown policy: %v, want an error naming the setting and the policies", err)
	}
	var zero referer.Referer
	if zero.For("http://example.com/a", nil, "http://example.com/b") != "" {
		t.Error("the zero Referer sends one")
	}
}
