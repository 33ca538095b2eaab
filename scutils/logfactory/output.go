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
// when gather is set.
type output struct {
	mu      sync.Mutex
	w       io.Writer
	gather  bool
	pending []byte
	timer   *time.Timer // armed while lines are pending
}

// write writes line (or gathers it); lvl WARNING and worse write every
// pending line at once.
func (o *output) write(line []byte, lvl Level) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.gather {
		o.writeLocked(line)
		return
	}
	o.pending = append(o.pending, line...)
	if lvl >= LevelWarning || len(o.pending) >= maxPending {
		o.flushLocked()
		return
	}
	if o.timer == nil {
		o.timer = time.AfterFunc(flushDelay, o.flush)
	}
}

// flush writes the pending lines.
func (o *output) flush() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.flushLocked()
}

func (o *output) flushLocked() {
	if o.timer != nil {
		o.timer.Stop()
		o.timer = nil
	}
	if len(o.pending) == 0 {
		return
	}
	o.writeLocked(o.pending)
	if cap(o.pending) > 4*maxPending {
		o.pending = nil // a burst's buffer is not kept
	} else {
		o.pending = o.pending[:0]
	}
}

// writeLocked writes p in one Write. A failed write is reported on
// stderr: there is nowhere else to say it.
func (o *output) writeLocked(p []byte) {
	if _, err := o.w.Write(p); err != nil {
		fmt.Fprintln(os.Stderr, "Failed to write to log:", err)
	}
}
