package extract

import (
	"iter"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode"
)

// matcher runs a regex rule over a page's text. Go's regexp has no literal
// prefix to skip to in a pattern like `(\d+\.99)` and walks the whole page
// with its slowest engine (the NFA). When the pattern allows, matcher finds
// the few places a match can be first:
//
//   - every character a match can hold is ASCII and known (set), so a match
//     lies inside one run of such bytes, and the pattern is run on each run
//     alone, where Go uses its fast backtracker;
//   - a literal every match holds (lit, e.g. ".99"), when there is one, is
//     looked for with strings.Index and only the runs holding it are run.
//
// The matches are the same as on the whole text: the pattern has no
// assertion that looks outside a run (^ $ \A \z \b \B make it search the
// whole text) and cannot match the empty string.
type matcher struct {
	re  *regexp.Regexp
	set *[256]bool // nil: search the whole text
	lit string     // "" when no literal is known
	// whole: the rule's value is the whole match (re has no group, or its
	// first group is all of it: `(\d+\.99)`), which find then looks for
	// without the groups' positions: half the bytes a match allocates
	whole bool
}

func newMatcher(re *regexp.Regexp) matcher {
	m := matcher{re: re}
	tree, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return m
	}
	m.whole = re.NumSubexp() == 0 || tree.Op == syntax.OpCapture && tree.Cap == 1
	if re.MatchString("") {
		return m
	}
	var set [256]bool
	if !charsOf(tree, &set) {
		return m
	}
	m.set = &set
	for _, l := range requiredLiterals(tree) {
		if len(l) > len(m.lit) {
			m.lit = l
		}
	}
	return m
}

// charsOf adds to set every character re's matches can hold; false when
// one is not ASCII, is any character, or re has an assertion.
func charsOf(re *syntax.Regexp, set *[256]bool) bool {
	switch re.Op {
	case syntax.OpNoMatch, syntax.OpEmptyMatch:
		return true
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if !addRune(set, r, re.Flags&syntax.FoldCase != 0) {
				return false
			}
		}
		return true
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			if re.Rune[i+1] >= utf8RuneSelf {
				return false
			}
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				set[r] = true
			}
		}
		return true
	case syntax.OpCapture, syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat, syntax.OpConcat, syntax.OpAlternate:
		for _, sub := range re.Sub {
			if !charsOf(sub, set) {
				return false
			}
		}
		return true
	}
	return false // any character, or an assertion
}

const utf8RuneSelf = 0x80

// addRune adds r (and, folding case, every rune it folds to) to set.
func addRune(set *[256]bool, r rune, fold bool) bool {
	if r >= utf8RuneSelf {
		return false
	}
	set[r] = true
	if fold {
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f >= utf8RuneSelf { // e.g. k's Kelvin sign
				return false
			}
			set[f] = true
		}
	}
	return true
}

// requiredLiterals are case-sensitive literals every match of re holds.
func requiredLiterals(re *syntax.Regexp) []string {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase == 0 {
			return []string{string(re.Rune)}
		}
	case syntax.OpCapture, syntax.OpPlus:
		return requiredLiterals(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return requiredLiterals(re.Sub[0])
		}
	case syntax.OpConcat:
		var lits []string
		for _, sub := range re.Sub {
			lits = append(lits, requiredLiterals(sub)...)
		}
		return lits
	}
	return nil
}

// find yields what FindAllStringSubmatchIndex(text, n) gives, n being 1
// or -1, one match at a time (no list of them is built); when whole,
// what FindAllStringIndex gives.
func (m matcher) find(text string, n int) iter.Seq[[]int] {
	return func(yield func([]int) bool) {
		if m.set == nil {
			all := m.re.FindAllStringSubmatchIndex
			if m.whole {
				all = m.re.FindAllStringIndex
			}
			for _, loc := range all(text, n) {
				if !yield(loc) {
					return
				}
			}
			return
		}
		found := 0
		for pos := 0; pos < len(text) && (n < 0 || found < n); {
			start, end := m.run(text, pos)
			if end == start {
				return
			}
			// The next match starts where the last one ended (it is not empty).
			for from := start; from < end && (n < 0 || found < n); {
				var loc []int
				if m.whole {
					loc = m.re.FindStringIndex(text[from:end])
				} else {
					loc = m.re.FindStringSubmatchIndex(text[from:end])
				}
				if loc == nil {
					break
				}
				for i := range loc {
					if loc[i] >= 0 {
						loc[i] += from
					}
				}
				found++
				if !yield(loc) {
					return
				}
				from = loc[1]
			}
			pos = end
		}
	}
}

// run is the next run of set's bytes from pos that may hold a match (one
// holding lit, when known); start == end when there is none.
func (m matcher) run(text string, pos int) (start, end int) {
	start = pos
	if m.lit != "" {
		i := strings.Index(text[pos:], m.lit)
		if i < 0 {
			return pos, pos
		}
		start = pos + i
		for start > pos && m.set[text[start-1]] {
			start--
		}
	} else {
		for start < len(text) && !m.set[text[start]] {
			start++
		}
	}
	end = start
	for end < len(text) && m.set[text[end]] {
		end++
	}
	return start, end
}
