package throttle

import (
	"encoding/json"
	"strconv"
	"strings"
)

// Record is what a lease keeps of its item, under its id in the hash
// <name>:items: the queue it was popped from, its score there (as Redis
// wrote it) and the member itself, so that a reaper can queue it again.
//
// Pops write it as "<length of Queue>:<Queue><Score>\n<Member>" (for
// example "16:link:a.com:queue-1\n{...}"): plain concatenation, which costs
// Redis far less than JSON-encoding a member that is itself JSON. Readers
// also read the JSON object {"q": queue, "s": score, "m": member} written
// by earlier versions (ParseRecord, and lease_record in package
// redisscripts).
type Record struct {
	Queue, Score, Member string
}

// String is the record as a pop writes it.
func (r Record) String() string {
	return strconv.Itoa(len(r.Queue)) + ":" + r.Queue + r.Score + "\n" + r.Member
}

// ParseRecord reads a lease record in either form.
func ParseRecord(v string) (Record, bool) {
	if strings.HasPrefix(v, "{") {
		var old struct {
			Q string `json:"q"`
			S string `json:"s"`
			M string `json:"m"`
		}
		if json.Unmarshal([]byte(v), &old) != nil {
			return Record{}, false
		}
		return Record{Queue: old.Q, Score: old.S, Member: old.M}, true
	}
	length, rest, ok := strings.Cut(v, ":")
	n, err := strconv.Atoi(length)
	if !ok || err != nil || n < 0 || n > len(rest) {
		return Record{}, false
	}
	score, member, ok := strings.Cut(rest[n:], "\n")
	if !ok {
		return Record{}, false
	}
	return Record{Queue: rest[:n], Score: score, Member: member}, true
}
