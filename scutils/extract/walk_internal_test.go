package extract

import (
	"testing"

	"github.com/andybalholm/cascadia"
)

// TestSubjectTag: the tag of plain selectors' subjects, and none where the
// selector is not plain or its subject has no type selector.
func TestSubjectTag(t *testing.T) {
	for sel, want := range map[string]string{
		"title": "title", "li.item a": "a", "UL > LI:nth-child(2n+1)": "li", "#items li": "li", "h1.name": "h1",
		"a[href^=x]": "a", "div ~ p#x": "p", "li+a": "a", " img ": "img", "ul li:not(.x y)": "li", "h2-x_y": "h2-x_y",
		"a[title~=b]": "a", "p:has(a b)": "p",
		"*": "", ":root": "", "body :empty": "", "[class]": "", "p, li": "", `a[href="x y"]`: "", "a[href='x']": "",
		`\61`: "", "a[lang|=en]": "", "li *": "", "p.x > *.y": "", "a:not(b c) .z": "",
	} {
		if _, err := cascadia.Compile(sel); err != nil {
			t.Fatalf("%q: %v", sel, err)
		}
		if got := subjectTag(sel); got != want {
			t.Errorf("%q: tag %q, want %q", sel, got, want)
		}
	}
}
