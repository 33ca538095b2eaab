package plugin

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// MarshalPython encodes v as JSON the way the original writes it, so stored
// values look the same: floats as Python's repr does (1.0, 0.9, 1e+16,
// 1.5e-05), everything else as encoding/json. Infinite and NaN floats are an
// error, as they are not JSON.
func MarshalPython(v any) ([]byte, error) {
	if hasFloat(v) {
		v = pythonFloats(v)
	}
	return json.Marshal(v)
}

func hasFloat(v any) bool {
	switch t := v.(type) {
	case float64:
		return true
	case map[string]any:
		for _, x := range t {
			if hasFloat(x) {
				return true
			}
		}
	case []any:
		for _, x := range t {
			if hasFloat(x) {
				return true
			}
		}
	}
	return false
}

// pythonFloats returns a copy of v with finite floats as json.Number in
// Python's repr (infinities stay floats, so encoding fails on them).
func pythonFloats(v any) any {
	switch t := v.(type) {
	case float64:
		if math.IsInf(t, 0) || math.IsNaN(t) {
			return t
		}
		return json.Number(PythonFloat(t))
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = pythonFloats(x)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = pythonFloats(x)
		}
		return out
	}
	return v
}

// PythonFloat formats f as Python's repr(float): the shortest digits that
// read back as f, in positional form with at least one decimal when the
// decimal exponent is from -4 to 15, in exponent form otherwise.
func PythonFloat(f float64) string {
	e := strconv.FormatFloat(f, 'e', -1, 64) // e.g. "1.5e-05"
	exp, _ := strconv.Atoi(e[strings.IndexByte(e, 'e')+1:])
	if exp < -4 || exp >= 16 {
		return e
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".") {
		s += ".0"
	}
	return s
}
