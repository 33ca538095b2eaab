package domainconfig_test

import (
	"math"
	"strings"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/domainconfig"
)

type doc = domainconfig.Document

func TestParseAcceptsWhatPeopleAndTheOriginalWrite(t *testing.T) {
	tests := []struct {
		name, in string
		want     doc
	}{
		{"empty input is the empty document", "", doc{}},
		{"only comments are the empty document", "# nothing yet\n", doc{}},
		{"a null document is the empty document", "~\n", doc{}},
		{"a bare document marker is the empty document", "---\n", doc{}},
		{"null blacklist and domains are empty", "blacklist:\ndomains:\n", doc{}},
		{"what the original writes when empty", "blacklist: []\ndomains: {}\n", doc{}},
		{"the spec's example.yml layout, scale optional",
			"blacklist:\n    - domain3.com\ndomains:\n    domain1.com:\n        window: 60\n        hits: 10\n" +
				"    domain2.org:\n        window: 30\n        hits: 5\n        scale: 0.5\n",
			doc{Blacklist: []string{"domain3.com"}, Domains: map[string]domain{
				"domain1.com": {Window: 60, Hits: 10, Scale: 1},
				"domain2.org": {Window: 30, Hits: 5, Scale: 0.5}}}},
		{"hits and window written as floats without a fraction",
			"domains:\n  a.com: {hits: 60.0, window: 1.2e2, scale: 1}\n",
			doc{Domains: map[string]domain{"a.com": {Window: 120, Hits: 60, Scale: 1}}}},
		{"flow style", "{blacklist: [a.com, b.com], domains: {c.com: {hits: 1, window: 2, scale: 0.25}}}",
			doc{Blacklist: []string{"a.com", "b.com"}, Domains: map[string]domain{"c.com": {Window: 2, Hits: 1, Scale: 0.25}}}},
		{"unknown keys are ignored",
			"version: 3\nblacklist: [a.com]\ndomains:\n  b.com: {hits: 1, window: 2, note: slow site}\n",
			doc{Blacklist: []string{"a.com"}, Domains: map[string]domain{"b.com": {Window: 2, Hits: 1, Scale: 1}}}},
		{"aliases are followed", "slow: &slow {hits: 5, window: 60}\ndomains:\n  a.com: *slow\n  b.com: *slow\n",
			doc{Domains: map[string]domain{"a.com": {Window: 60, Hits: 5, Scale: 1}, "b.com": {Window: 60, Hits: 5, Scale: 1}}}},
		{"empty blacklist entries are skipped", "blacklist:\n- a.com\n-\n- ~\n", doc{Blacklist: []string{"a.com"}}},
		{"blacklist order and repeats are kept", "blacklist: [z.com, a.com, z.com]\n", doc{Blacklist: []string{"z.com", "a.com", "z.com"}}},
		{"a blacklist entry that looks like a number is its text", "blacklist: [123, 1.50]\n", doc{Blacklist: []string{"123", "1.50"}}},
		{"quoted names", "blacklist: ['yes', \"caf\\xE9.fr\"]\ndomains:\n  'true': {hits: 1, window: 1}\n",
			doc{Blacklist: []string{"yes", "café.fr"}, Domains: map[string]domain{"true": {Window: 1, Hits: 1, Scale: 1}}}},
		{"a repeated domain: the last one wins, as in PyYAML",
			"domains:\n  a.com: {hits: 1, window: 1}\n  a.com: {hits: 2, window: 2}\n",
			doc{Domains: map[string]domain{"a.com": {Window: 2, Hits: 2, Scale: 1}}}},
		{"YAML integer forms", "domains:\n  a.com: {hits: 0x10, window: +30, scale: 0}\n",
			doc{Domains: map[string]domain{"a.com": {Window: 30, Hits: 16, Scale: 0}}}},
		{"negative hits are kept (the Kafka Monitor only refuses zero)", "domains:\n  a.com: {hits: -5, window: 60}\n",
			doc{Domains: map[string]domain{"a.com": {Window: 60, Hits: -5, Scale: 1}}}},
		{"infinite scale", "domains:\n  a.com: {hits: 1, window: 1, scale: .inf}\n",
			doc{Domains: map[string]domain{"a.com": {Window: 1, Hits: 1, Scale: math.Inf(1)}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := domainconfig.Parse([]byte(tt.in))
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.in, err)
			}
			assertSameDocument(t, got, tt.want)
		})
	}
}

func TestParseNamesTheProblemInAMalformedDocument(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string // substrings of the error
	}{
		{"broken YAML", "blacklist: [a.com\n", []string{"not valid YAML"}},
		{"two documents", "blacklist: []\n---\nblacklist: []\n", []string{"more than one YAML document"}},
		{"a string (a pointer path, say)", "/scrapy-cluster/crawler/other\n",
			[]string{"the string \"/scrapy-cluster/crawler/other\"", "not a mapping"}},
		{"a list", "- a.com\n", []string{"line 1", "a list, not a mapping"}},
		{"blacklist a string", "blacklist: ebay.com\n", []string{`blacklist is the string "ebay.com", not a list`}},
		{"blacklist entry a list", "blacklist:\n- [a.com]\n", []string{"line 2", "blacklist entry is a list"}},
		{"domains a list", "domains: [a.com]\n", []string{"domains is a list"}},
		{"domain without a throttle", "domains:\n  a.com:\n", []string{`"a.com"`, "the throttle is empty"}},
		{"domain without anything", "domains:\n  a.com: {}\n", []string{`"a.com"`, "window and hits are missing"}},
		{"domain without window", "domains:\n  a.com: {hits: 1}\n", []string{`"a.com"`, "window is missing"}},
		{"domain without hits", "domains:\n  a.com:\n    window: 1\n", []string{`"a.com"`, "line 3", "hits is missing"}},
		{"hits a word", "domains:\n  a.com:\n    hits: ten\n    window: 1\n",
			[]string{`"a.com"`, "line 3", `hits: the string "ten" is not a number`}},
		{"hits with a fraction", "domains:\n  a.com: {hits: 1.5, window: 1}\n", []string{`hits: "1.5" is not a whole number`}},
		{"window a boolean", "domains:\n  a.com: {hits: 1, window: true}\n", []string{"window: the value true is not a number"}},
		{"window a quoted number", "domains:\n  a.com: {hits: 1, window: '60'}\n", []string{`window: the string "60" is not a number`}},
		{"hits too big", "domains:\n  a.com: {hits: 99999999999999999999, window: 1}\n", []string{"hits", "out of range"}},
		{"scale a word", "domains:\n  a.com: {hits: 1, window: 1, scale: half}\n", []string{`scale: the string "half" is not a number`}},
		{"scale empty", "domains:\n  a.com: {hits: 1, window: 1, scale: }\n", []string{"scale: empty is not a number"}},
		{"a null domain name", "domains:\n  ~: {hits: 1, window: 1}\n", []string{"not a domain"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := domainconfig.Parse([]byte(tt.in))
			if err == nil {
				t.Fatalf("Parse(%q) = %+v, want an error", tt.in, got)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Parse(%q) error %q does not say %q", tt.in, err, w)
				}
			}
		})
	}
}

func TestEditsChangeTheDocumentAndSayWhetherTheyDid(t *testing.T) {
	var d doc
	steps := []struct {
		name    string
		edit    func() bool
		changed bool
		want    string
	}{
		{"add a throttle", func() bool { return d.UpdateDomain("dmoz.org", 60, 60, 0.9) }, true,
			"blacklist: []\ndomains:\n  dmoz.org:\n    hits: 60\n    scale: 0.9\n    window: 60\n"},
		{"the same throttle again", func() bool { return d.UpdateDomain("dmoz.org", 60, 60, 0.9) }, false,
			"blacklist: []\ndomains:\n  dmoz.org:\n    hits: 60\n    scale: 0.9\n    window: 60\n"},
		{"change it", func() bool { return d.UpdateDomain("dmoz.org", 10, 30, 1) }, true,
			"blacklist: []\ndomains:\n  dmoz.org:\n    hits: 10\n    scale: 1.0\n    window: 30\n"},
		{"ban a domain", func() bool { return d.AddBlacklist("ebay.com") }, true,
			"blacklist:\n- ebay.com\ndomains:\n  dmoz.org:\n    hits: 10\n    scale: 1.0\n    window: 30\n"},
		{"ban it again: no duplicate", func() bool { return d.AddBlacklist("ebay.com") }, false,
			"blacklist:\n- ebay.com\ndomains:\n  dmoz.org:\n    hits: 10\n    scale: 1.0\n    window: 30\n"},
		{"a second ban is appended", func() bool { return d.AddBlacklist("amazon.com") }, true,
			"blacklist:\n- ebay.com\n- amazon.com\ndomains:\n  dmoz.org:\n    hits: 10\n    scale: 1.0\n    window: 30\n"},
		{"remove a throttle", func() bool { return d.RemoveDomain("dmoz.org") }, true,
			"blacklist:\n- ebay.com\n- amazon.com\ndomains: {}\n"},
		{"remove a throttle that is not there", func() bool { return d.RemoveDomain("dmoz.org") }, false,
			"blacklist:\n- ebay.com\n- amazon.com\ndomains: {}\n"},
		{"lift a ban", func() bool { return d.RemoveBlacklist("ebay.com") }, true,
			"blacklist:\n- amazon.com\ndomains: {}\n"},
		{"lift a ban that is not there", func() bool { return d.RemoveBlacklist("ebay.com") }, false,
			"blacklist:\n- amazon.com\ndomains: {}\n"},
		{"lift the last ban", func() bool { return d.RemoveBlacklist("amazon.com") }, true,
			"blacklist: []\ndomains: {}\n"},
	}
	for _, s := range steps {
		if changed := s.edit(); changed != s.changed {
			t.Errorf("%s: reported changed=%v, want %v", s.name, changed, s.changed)
		}
		if got := string(d.Marshal()); got != s.want {
			t.Errorf("%s: document is\n%s\nwant\n%s", s.name, got, s.want)
		}
	}
}

func TestRemoveBlacklistDropsEveryRepeat(t *testing.T) {
	d := doc{Blacklist: []string{"a.com", "b.com", "a.com"}}
	if !d.RemoveBlacklist("a.com") || len(d.Blacklist) != 1 || d.Blacklist[0] != "b.com" {
		t.Errorf("blacklist after RemoveBlacklist(a.com) = %q, want [b.com]", d.Blacklist)
	}
	if d.Blacklisted("a.com") || !d.Blacklisted("b.com") {
		t.Errorf("Blacklisted disagrees with %q", d.Blacklist)
	}
}

func TestCloneIsIndependent(t *testing.T) {
	d := doc{Blacklist: []string{"a.com"}, Domains: map[string]domain{"b.com": {Window: 1, Hits: 1, Scale: 1}}}
	c := d.Clone()
	c.AddBlacklist("c.com")
	c.Blacklist[0] = "changed.com"
	c.UpdateDomain("b.com", 5, 5, 0.5)
	if d.Blacklist[0] != "a.com" || len(d.Blacklist) != 1 || d.Domains["b.com"].Hits != 1 {
		t.Errorf("editing the clone changed the original: %+v", d)
	}
}

func TestScaledHitsIsWhatTheCrawlersApply(t *testing.T) {
	tests := []struct {
		hits  int
		scale float64
		want  int
	}{
		{10, 1, 10},
		{10, 0.5, 5},
		{10, 0.25, 2}, // rounded toward zero
		{60, 0.9, 54},
		{10, 2, 10}, // clamped to 1
		{10, 0, 0},
		{10, -1, 0}, // clamped to 0
		{10, math.NaN(), 10},
	}
	for _, tt := range tests {
		if got := (domain{Hits: tt.hits, Window: 60, Scale: tt.scale}).ScaledHits(); got != tt.want {
			t.Errorf("hits %d scale %v: ScaledHits() = %d, want %d", tt.hits, tt.scale, got, tt.want)
		}
	}
}
