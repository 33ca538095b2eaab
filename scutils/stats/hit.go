package stats

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"sync/atomic"
	"time"
)

// Sorted-set members must be unique per event: the original uses the float
// timestamp as member, so two hits in the same microsecond count once.
// A member here is "<process id><sequence>" (12 hex digits and a base-36
// counter): the score holds the time, and readers only count members
// (ZCARD) or remove them by score, so the content is free. Short members
// keep Redis's work per hit small.
var (
	processID = newProcessID()
	hitSeq    atomic.Uint64
)

func newProcessID() string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand does not fail on supported platforms; fall back to
		// the start time, which is unique enough among live processes.
		return strconv.FormatInt(time.Now().UnixNano(), 36)
	}
	return hex.EncodeToString(b[:])
}

// unixSeconds is t as fractional Unix seconds, the score the original uses.
func unixSeconds(t time.Time) float64 {
	return float64(t.UnixNano()) / 1e9
}

// newHit returns the score and a unique member for an event at now.
func newHit(now time.Time) (float64, string) {
	b := make([]byte, 0, 24)
	b = append(b, processID...)
	b = strconv.AppendUint(b, hitSeq.Add(1), 36)
	return unixSeconds(now), string(b)
}

// formatScore writes a score bound for ZCOUNT/ZREMRANGEBYSCORE.
func formatScore(s float64) string {
	return strconv.FormatFloat(s, 'f', -1, 64)
}
