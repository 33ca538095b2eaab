package logfactory

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Lines to standard output or a file are gathered and written together:
// at most flushDelay after the first of them, at once when maxPending
// bytes wait, when a WARNING or worse line comes (with every line before
// it) and on Flush and Close. A component logging a line per request
// wrote (and paid a system call) once per line; gathered, a busy one
// writes a few times a second. The lines of a process killed outright
// within flushDelay of being logged, below WARNING, are lost.
const (
	flushDelay = 100 * time.Millisecond
	maxPending = 64 << 10
)

// output writes whole lines to w, each line whole and in order, gathered
// when gather is set. Gathered lines are written outside mu, so that the
// goroutines logging meanwhile add theirs to the next batch instead of
// waiting for the write (a pipe whose reader lags makes it slow: 16
// workers of a crawler waited half a second per second on it,
// BenchmarkCrawlCost's trace); writing holds writeMu, taken before mu is
// let go, so batches are written in order, one at a time. A batch that
// fills while one is written waits for it, mu held: at most two batches
// (maxPending each, and a line) are ever held.
type output struct {
	mu      sync.Mutex
	w       io.Writer
	gather  bool
	pending []byte
	timer   *time.Timer // armed while lines are pending

	writeMu sync.Mutex // held while a batch is written; taken with mu held
	spare   []byte     // the last batch's buffer, for the next (writeMu)
}

// write writes line (or gathers it); lvl WARNING and worse write every
// pending line at once.
func (o *output) write(line []byte, lvl Level) {
	o.mu.Lock()
	if !o.gather {
		o.writeLocked(line)
		o.mu.Unlock()
		return
	}
	o.pending = append(o.pending, line...)
	if lvl >= LevelWarning || len(o.pending) >= maxPending {
		o.flushLocked() // unlocks mu
		return
	}
	if o.timer == nil {
		o.timer = time.AfterFunc(flushDelay, o.flush)
	}
	o.mu.Unlock()
}

// flush writes the pending lines; it returns once they are written.
func (o *output) flush() {
	o.mu.Lock()
	o.flushLocked()
}

// flushLocked, with mu held, takes the pending lines, lets mu go and
// writes them; it returns once they are written.
func (o *output) flushLocked() {
	if o.timer != nil {
		o.timer.Stop()
		o.timer = nil
	}
	o.writeMu.Lock() // after what an earlier flush took is written
	if len(o.pending) == 0 {
		o.mu.Unlock()
		o.writeMu.Unlock()
		return
	}
	batch := o.pending
	o.pending, o.spare = o.spare[:0], nil
	o.mu.Unlock()
	o.writeLocked(batch)
	if cap(batch) <= 4*maxPending {
		o.spare = batch[:0] // a burst's buffer is not kept
	}
	o.writeMu.Unlock()
}

// writeLocked writes p in one Write. A failed write is reported on
// stderr: there is nowhere else to say it.
func (o *output) writeLocked(p []byte) {
	if _, err := o.w.Write(p); err != nil {
		fmt.Fprintln(os.Stderr, "Failed to write to log:", err)
	}
}
