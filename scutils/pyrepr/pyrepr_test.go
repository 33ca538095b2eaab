package pyrepr_test

import (
	"math"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/pyrepr"
)

// floatCases are repr() of each value in Python 3: the Kafka Monitor's
// stored floats, the log formatter's extras and the domain config's scales
// (scutils/domainconfig/testdata/marshal_cases.json).
var floatCases = []struct {
	in   float64
	want string
}{
	{1, "1.0"},
	{4, "4.0"},
	{100, "100.0"},
	{0, "0.0"},
	{math.Copysign(0, -1), "-0.0"},
	{0.9, "0.9"},
	{0.5, "0.5"},
	{0.25, "0.25"},
	{-0.5, "-0.5"},
	{0.30000000000000004, "0.30000000000000004"},
	{123456789.125, "123456789.125"},
	{123456789.123, "123456789.123"},
	{1464402128.123456, "1464402128.123456"},
	// Positional up to a decimal exponent of 15, exponent form from 16.
	{1e15, "1000000000000000.0"},
	{9999999999999998, "9999999999999998.0"},
	{1e16, "1e+16"},
	{1e100, "1e+100"},
	{1.5e300, "1.5e+300"},
	{math.MaxFloat64, "1.7976931348623157e+308"},
	// Positional down to a decimal exponent of -4, exponent form below.
	{0.0001, "0.0001"},
	{0.99999e-4, "9.9999e-05"},
	{1e-5, "1e-05"},
	{1.5e-5, "1.5e-05"},
	{2.5e-5, "2.5e-05"},
	{2.5e-300, "2.5e-300"},
	{5e-324, "5e-324"},
	{math.Inf(1), "inf"},
	{math.Inf(-1), "-inf"},
	{math.NaN(), "nan"},
}

func TestFloatWritesWhatPythonsReprWrites(t *testing.T) {
	for _, c := range floatCases {
		if got := pyrepr.Float(c.in); got != c.want {
			t.Errorf("Float(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}
