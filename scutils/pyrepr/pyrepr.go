// Package pyrepr writes values as Python's repr() writes them, for output
// that must read the same as the original Python components' (stored
// requests, log lines, the domain config's YAML).
package pyrepr

import (
	"math"
	"strconv"
	"strings"
)

// Float formats f as Python 3's repr(float): the shortest digits that read
// back as f; positional with at least one decimal when the decimal exponent
// is from -4 to 15 ("1.0", "0.0001", "1000000000000000.0"), exponent form
// with at least two exponent digits otherwise ("1e-05", "1e+16",
// "1.5e+300"); "inf", "-inf" and "nan" for the non-finite.
func Float(f float64) string {
	e := strconv.FormatFloat(f, 'e', -1, 64)
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return strings.ToLower(strings.TrimPrefix(e, "+")) // Go's +Inf, -Inf, NaN
	}
	// The exponent of the shortest digits decides the form. Go's 'e' format
	// writes at least two exponent digits, as Python does.
	if exp, _ := strconv.Atoi(e[strings.IndexByte(e, 'e')+1:]); exp < -4 || exp >= 16 {
		return e
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if strings.IndexByte(s, '.') < 0 {
		s += ".0"
	}
	return s
}
