package logfactory

import (
	"math/rand/v2"
	"testing"
	"time"
)

func TestStampsWriteWhatTheirLayoutsWould(t *testing.T) {
	base := time.Date(2026, 11, 28, 0, 59, 58, 0, time.UTC)
	times := []time.Time{base, base.Add(time.Nanosecond), base.Add(999_999_999), base.Add(time.Second), base.Add(1_000_500_000)}
	for range 1000 {
		times = append(times, base.Add(time.Duration(rand.Int64N(int64(72*time.Hour)))))
	}
	for _, c := range []struct {
		stamp  *stamp
		layout string
		utc    bool
	}{{textStamp, textTimeLayout, false}, {jsonStamp, jsonTimeLayout, true}} {
		for _, tm := range times {
			want := tm.Local()
			if c.utc {
				want = tm.UTC()
			}
			if got, w := string(c.stamp.append(nil, tm)), want.Format(c.layout); got != w {
				t.Fatalf("%q stamp of %v = %q, want %q", c.layout, tm, got, w)
			}
		}
	}
}

// BenchmarkStamp compares a text line's stamp with time.AppendFormat of
// its layout (about 3x faster on a loaded 2-core machine: 0.5-0.7 µs
// against 1.7-2.5 µs, time.Now included in both).
func BenchmarkStamp(b *testing.B) {
	buf := make([]byte, 0, 64)
	b.Run("stamp", func(b *testing.B) {
		for b.Loop() {
			buf = textStamp.append(buf[:0], time.Now())
		}
	})
	b.Run("AppendFormat", func(b *testing.B) {
		for b.Loop() {
			buf = time.Now().Local().AppendFormat(buf[:0], textTimeLayout)
		}
	})
}
