package extract

import (
	"strconv"
	"strings"
	"testing"
)

// TestJoinerGivesWhatConcatenationGives: every string a joiner made is x+y
// and stays so while it makes more, across buffers (strings longer than a
// buffer too).
func TestJoinerGivesWhatConcatenationGives(t *testing.T) {
	var j joiner
	var made, want []string
	for i := range 3000 {
		x, y := "http://shop.example", "/product/"+strconv.Itoa(i)
		if i%500 == 7 {
			y = strings.Repeat("/long", 4000+i) // longer than maxJoinerChunk
		}
		made, want = append(made, j.join(x, y)), append(want, x+y)
	}
	for i := range made {
		if made[i] != want[i] {
			t.Fatalf("string %d is %.60q, want %.60q", i, made[i], want[i])
		}
	}
	if got := (*joiner)(nil).join("a", "b"); got != "ab" {
		t.Errorf("nil joiner: %q", got)
	}
}

// BenchmarkJoiner: 800 product URLs joined by a joiner and by +.
func BenchmarkJoiner(b *testing.B) {
	paths := make([]string, 800)
	for i := range paths {
		paths[i] = "/product/" + strconv.Itoa(i)
	}
	for _, tc := range []struct {
		name string
		j    func() *joiner
	}{{"joiner", func() *joiner { return &joiner{} }}, {"concatenation", func() *joiner { return nil }}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				j := tc.j()
				for _, p := range paths {
					_ = j.join("http://shop.example", p)
				}
			}
		})
	}
}
