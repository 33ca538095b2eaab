package logfactory

import (
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// A stamp writes a line's time in one layout: the part down to the second
// is formatted once per second and kept, the fraction appended each time.
// time.Time.AppendFormat for every line was ~1% of a crawler's CPU, which
// logs two lines a page (pprof of BenchmarkCrawlCost).
type stamp struct {
	seconds   string // the layout down to the second, e.g. "2006-01-02 15:04:05"
	separator byte   // before the fraction
	digits    int    // of the fraction: 3 (milliseconds) or 6 (microseconds)
	suffix    string // after the fraction, e.g. "Z"
	utc       bool   // UTC, else local time
	last      atomic.Pointer[formattedSecond]
}

type formattedSecond struct {
	unix int64
	text string
}

var (
	textStamp = newStamp(textTimeLayout, false)
	jsonStamp = newStamp(jsonTimeLayout, true)
)

// newStamp splits layout, which must be "<date and time to the second><one
// separator><zeros of the fraction><suffix>".
func newStamp(layout string, utc bool) *stamp {
	i := strings.Index(layout, "05") + len("05")
	digits := len(layout[i+1:]) - len(strings.TrimLeft(layout[i+1:], "0"))
	return &stamp{seconds: layout[:i], separator: layout[i], digits: digits, suffix: layout[i+1+digits:], utc: utc}
}

// append adds t to dst as t.AppendFormat would with the whole layout.
func (s *stamp) append(dst []byte, t time.Time) []byte {
	if s.utc {
		t = t.UTC()
	} else {
		t = t.Local()
	}
	unix := t.Unix()
	sec := s.last.Load()
	if sec == nil || sec.unix != unix {
		sec = &formattedSecond{unix: unix, text: t.Format(s.seconds)}
		s.last.Store(sec)
	}
	dst = append(dst, sec.text...)
	dst = append(dst, s.separator)
	frac := t.Nanosecond()
	for range 9 - s.digits {
		frac /= 10
	}
	n := len(dst)
	dst = strconv.AppendInt(dst, int64(frac), 10)
	for len(dst)-n < s.digits { // leading zeros
		dst = append(dst[:n+1], dst[n:]...)
		dst[n] = '0'
	}
	return append(dst, s.suffix...)
}
