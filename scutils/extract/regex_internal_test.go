package extract

import (
	"fmt"
	"math/rand"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The patterns the fast path takes, and those it leaves to a search of the
// whole text.
func TestMatcherTakesTheFastPathOnlyWhereItIsExact(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		fast    bool
		lit     string
	}{
		{`(\d+\.99)`, true, ".99"},
		{`SKU: (P-\d+)`, true, "SKU: "},
		{`[a-z]+@[a-z]+\.com`, true, ".com"},
		{`(?i)price: \d+`, true, ""},
		{`(ab|cd)+x{2,3}`, true, "x"},
		{`\d+`, true, ""},
		{`(?i)sku`, false, ""},     // s and k fold to non-ASCII runes
		{`\bfoo`, false, ""},       // an assertion looks outside the match
		{`^total`, false, ""},      // so does ^
		{`a.c`, false, ""},         // any character
		{`prix: \d+ €`, false, ""}, // not ASCII
		{`x*`, false, ""},          // matches the empty string
	} {
		m := newMatcher(regexp.MustCompile(tc.pattern))
		if (m.set != nil) != tc.fast || m.lit != tc.lit {
			t.Errorf("%s: fast path %v literal %q, want %v %q", tc.pattern, m.set != nil, m.lit, tc.fast, tc.lit)
		}
	}
}

// On every pattern and text, find gives what Go's regexp gives on the
// whole text: the groups' positions, or when the value is the whole match
// (whole) the match's, which are then those of the value's group.
func TestMatcherFindsWhatTheWholeTextSearchFinds(t *testing.T) {
	patterns := []string{
		`(\d+\.99)`, `SKU: (P-\d+)`, `\d+`, `(?i)price: (\d+)`, `(ab|cd)+x{2,3}`, `(a)|(b)c`, `(x)?y`,
		`[a-c]+\.[a-c]`, `(?i)AB(c|d)`, `a+?b`, `(\d+)-(\d+)?`, `\bfoo`, `^a`, `a.c`,
		`((a)b)`, `(?i)(ab)`, `(a|b)+`, `(?:x)(y)`, `(a)(b)?`, `(\bfoo)`, `(^a)`, `(a.c)`, `(x*)`,
	}
	pieces := []string{"a", "b", "c", "d", "x", "y", "1", "23", ".99", ".", "-", " ", "\n", "SKU: ", "P-", "price: ",
		"PRICE: ", "AB", "é", "€", "\xff", "<li>", "foo", "xx", "ab", "cd"}
	rng := rand.New(rand.NewSource(26))
	texts := []string{"", "1.99", "x1.99 and 23.99.99", "SKU: P-1 SKU: P-22", "€1.99\xff2.99"}
	for range 400 {
		var b strings.Builder
		for range rng.Intn(40) {
			b.WriteString(pieces[rng.Intn(len(pieces))])
		}
		texts = append(texts, b.String())
	}
	wholes := 0
	for _, p := range patterns {
		re := regexp.MustCompile(p)
		m := newMatcher(re)
		if m.whole {
			wholes++
		}
		for _, text := range texts {
			for _, n := range []int{1, -1} {
				want := re.FindAllStringSubmatchIndex(text, n)
				if m.whole {
					for _, loc := range want {
						if len(loc) > 2 && !slices.Equal(loc[:2], loc[2:4]) {
							t.Fatalf("%s on %q: the first group %v is not the whole match %v", p, text, loc[2:4], loc[:2])
						}
					}
					want = re.FindAllStringIndex(text, n)
				}
				if got := slices.Collect(m.find(text, n)); !slices.EqualFunc(got, want, slices.Equal) {
					t.Fatalf("%s on %q (n=%d): got %v, want %v", p, text, n, fmt.Sprint(got), fmt.Sprint(want))
				}
			}
		}
	}
	if wholes != 13 {
		t.Errorf("%d patterns' value is the whole match, want 13", wholes)
	}
}
