package textcut_test

import (
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/textcut"
)

func TestUTF8CutsOnACharacterBoundary(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"", 3, ""},
		{"abc", 3, "abc"},
		{"abcd", 3, "abc"},
		{"aé", 2, "a"},   // é is 2 bytes: it would cross 2
		{"aé", 3, "aé"},  // it fits
		{"a😀b", 4, "a"},  // 😀 is 4 bytes
		{"a😀b", 5, "a😀"}, // it fits
		{"abc", 0, ""},
	} {
		if got := textcut.UTF8(tc.s, tc.n); got != tc.want {
			t.Errorf("UTF8(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}
