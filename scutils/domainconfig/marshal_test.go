package domainconfig_test

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/domainconfig"
)

// marshalCase is one entry of testdata/marshal_cases.json, the input of
// testdata/gen_golden.py.
type marshalCase struct {
	Name      string   `json:"name"`
	Blacklist []string `json:"blacklist"`
	Domains   map[string]struct {
		Hits   int             `json:"hits"`
		Window int             `json:"window"`
		Scale  json.RawMessage `json:"scale"` // a number, or "inf", "-inf", "nan"
	} `json:"domains"`
}

func (c marshalCase) document(t *testing.T) domainconfig.Document {
	t.Helper()
	doc := domainconfig.Document{Blacklist: c.Blacklist}
	for name, d := range c.Domains {
		var text string
		if err := json.Unmarshal(d.Scale, &text); err != nil {
			text = string(d.Scale)
		}
		scale, err := strconv.ParseFloat(text, 64)
		if err != nil {
			t.Fatalf("case %s: scale %s: %v", c.Name, d.Scale, err)
		}
		doc.UpdateDomain(name, d.Hits, d.Window, scale)
	}
	return doc
}

func loadMarshalCases(t *testing.T) []marshalCase {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "marshal_cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []marshalCase
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) == 0 {
		t.Fatal("no cases in testdata/marshal_cases.json")
	}
	return cases
}

func golden(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "marshal", name+".yaml"))
	if err != nil {
		t.Fatalf("%v (run testdata/gen_golden.py)", err)
	}
	return string(data)
}

func TestMarshalWritesWhatPyYAMLWrites(t *testing.T) {
	for _, c := range loadMarshalCases(t) {
		t.Run(c.Name, func(t *testing.T) {
			got, want := string(c.document(t).Marshal()), golden(t, c.Name)
			if got != want {
				t.Errorf("Marshal wrote\n%s\nPyYAML wrote\n%s", got, want)
			}
		})
	}
}

func TestParseReadsBackEveryGolden(t *testing.T) {
	for _, c := range loadMarshalCases(t) {
		t.Run(c.Name, func(t *testing.T) {
			want := c.document(t)
			got, err := domainconfig.Parse([]byte(golden(t, c.Name)))
			if err != nil {
				t.Fatal(err)
			}
			assertSameDocument(t, got, want)
		})
	}
}

// assertSameDocument compares documents, NaN scales being equal.
func assertSameDocument(t *testing.T, got, want domainconfig.Document) {
	t.Helper()
	if len(got.Blacklist) != len(want.Blacklist) {
		t.Fatalf("blacklist = %q, want %q", got.Blacklist, want.Blacklist)
	}
	for i := range want.Blacklist {
		if got.Blacklist[i] != want.Blacklist[i] {
			t.Errorf("blacklist[%d] = %q, want %q", i, got.Blacklist[i], want.Blacklist[i])
		}
	}
	if len(got.Domains) != len(want.Domains) {
		t.Fatalf("domains = %v, want %v", got.Domains, want.Domains)
	}
	for name, w := range want.Domains {
		g, ok := got.Domains[name]
		same := ok && g.Hits == w.Hits && g.Window == w.Window &&
			(g.Scale == w.Scale && math.Signbit(g.Scale) == math.Signbit(w.Scale) ||
				math.IsNaN(g.Scale) && math.IsNaN(w.Scale))
		if !same {
			t.Errorf("domains[%q] = %+v (present %v), want %+v", name, g, ok, w)
		}
	}
}

func TestMarshalExamples(t *testing.T) {
	tests := []struct {
		name string
		doc  domainconfig.Document
		want string
	}{
		{"the zero document", domainconfig.Document{}, "blacklist: []\ndomains: {}\n"},
		{"empty but allocated", domainconfig.Document{Blacklist: []string{}, Domains: map[string]domain{}},
			"blacklist: []\ndomains: {}\n"},
		{"the spec's domain-update and blacklist-update", func() domainconfig.Document {
			var d domainconfig.Document
			d.UpdateDomain("dmoz.org", 60, 60, 0.9)
			d.AddBlacklist("ebay.com")
			return d
		}(), "blacklist:\n- ebay.com\ndomains:\n  dmoz.org:\n    hits: 60\n    scale: 0.9\n    window: 60\n"},
		{"scale 1 keeps its fraction", domainconfig.Document{Domains: map[string]domain{"a.com": {Window: 5, Hits: 2, Scale: 1}}},
			"blacklist: []\ndomains:\n  a.com:\n    hits: 2\n    scale: 1.0\n    window: 5\n"},
		{"a name YAML would read as a boolean is quoted", domainconfig.Document{Blacklist: []string{"yes", "no.com"}},
			"blacklist:\n- 'yes'\n- no.com\ndomains: {}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(tt.doc.Marshal()); got != tt.want {
				t.Errorf("Marshal() =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

type domain = domainconfig.Domain
