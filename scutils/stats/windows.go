package stats

import "fmt"

// Window lengths in seconds, named as in Scrapy Cluster's StatsCollector
// (SECONDS_1_MINUTE, ...). Some are the same length under two names.
const (
	Seconds1Minute  = 60
	Seconds15Minute = 15 * Seconds1Minute
	Seconds30Minute = 30 * Seconds1Minute
	Seconds1Hour    = 60 * Seconds1Minute
	Seconds2Hour    = 2 * Seconds1Hour
	Seconds4Hour    = 4 * Seconds1Hour
	Seconds6Hour    = 6 * Seconds1Hour
	Seconds12Hour   = 12 * Seconds1Hour
	Seconds24Hour   = 24 * Seconds1Hour
	Seconds48Hour   = 48 * Seconds1Hour
	Seconds1Day     = Seconds24Hour
	Seconds2Day     = 2 * Seconds1Day
	Seconds3Day     = 3 * Seconds1Day
	Seconds7Day     = 7 * Seconds1Day
	Seconds1Week    = Seconds7Day
	Seconds30Day    = 30 * Seconds1Day
)

// windowNames maps the Python attribute names used in settings (STATS_TIMES)
// to their lengths.
var windowNames = map[string]int{
	"SECONDS_1_MINUTE":  Seconds1Minute,
	"SECONDS_15_MINUTE": Seconds15Minute,
	"SECONDS_30_MINUTE": Seconds30Minute,
	"SECONDS_1_HOUR":    Seconds1Hour,
	"SECONDS_2_HOUR":    Seconds2Hour,
	"SECONDS_4_HOUR":    Seconds4Hour,
	"SECONDS_6_HOUR":    Seconds6Hour,
	"SECONDS_12_HOUR":   Seconds12Hour,
	"SECONDS_24_HOUR":   Seconds24Hour,
	"SECONDS_48_HOUR":   Seconds48Hour,
	"SECONDS_1_DAY":     Seconds1Day,
	"SECONDS_2_DAY":     Seconds2Day,
	"SECONDS_3_DAY":     Seconds3Day,
	"SECONDS_7_DAY":     Seconds7Day,
	"SECONDS_1_WEEK":    Seconds1Week,
	"SECONDS_30_DAY":    Seconds30Day,
}

// WindowByName returns the length in seconds of the window with the given
// Python name, such as "SECONDS_15_MINUTE", and whether the name is known.
func WindowByName(name string) (int, bool) {
	s, ok := windowNames[name]
	return s, ok
}

// WindowsByName converts a STATS_TIMES setting (Python window names) to window
// lengths in seconds, in the same order. An unknown name is an error, as it is
// in the original.
func WindowsByName(names []string) ([]int, error) {
	out := make([]int, 0, len(names))
	for _, n := range names {
		s, ok := windowNames[n]
		if !ok {
			return nil, fmt.Errorf("stats window %q: unknown name (want e.g. SECONDS_15_MINUTE)", n)
		}
		out = append(out, s)
	}
	return out, nil
}
