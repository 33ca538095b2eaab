package logfactory

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"time"

	"gopkg.in/natefinch/lumberjack.v2"
)

// rotatingFile is the file destination: lumberjack opens, renames and prunes
// the files, while the size check is ours because lumberjack counts whole
// megabytes and LOG_MAX_BYTES counts bytes.
type rotatingFile struct {
	path string
	lj   *lumberjack.Logger

	mu        sync.Mutex
	maxBytes  int64 // <= 0: never rotate
	size      int64 // bytes in the current file
	lastMilli int64 // wall clock, in ms, just after the last rotation
	rotations int
	closed    bool
}

// openRotatingFile creates dir if needed and opens dir/file for appending.
// The file is created here, not on the first write, so a bad directory is
// reported by New and new files get the usual 0644 (lumberjack would use
// 0600, and keeps the mode of the file it rotates).
func openRotatingFile(dir, file string, maxBytes int64, backups int) (*rotatingFile, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create log directory %s: %w", dir, err)
	}
	path := filepath.Join(dir, file)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open log file %s: %w", path, err)
	}
	st, err := f.Stat()
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("stat log file %s: %w", path, err)
	}
	if maxBytes <= 0 || backups <= 0 {
		maxBytes, backups = 0, 0
	}
	return &rotatingFile{
		path: path,
		lj: &lumberjack.Logger{
			Filename: path,
			// Never let lumberjack rotate (or refuse a long line) on its own.
			MaxSize:    math.MaxInt32,
			MaxBackups: backups,
		},
		maxBytes: maxBytes,
		size:     st.Size(),
	}, nil
}

// Write appends p, rotating before a line that would take the file past
// maxBytes. p holds whole lines (the logger writes them so, under its
// lock, one or several at a time), and a line is never split across files.
func (r *rotatingFile) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return 0, fmt.Errorf("write log file %s: %w", r.path, os.ErrClosed)
	}
	var n int
	var rotateErr error
	for len(p) > 0 {
		// The whole lines that fit in the current file (one at least in
		// an empty one), written together.
		take := 0
		for take < len(p) {
			end := bytes.IndexByte(p[take:], '\n') + 1
			if end == 0 {
				end = len(p) - take
			}
			if r.maxBytes > 0 && r.size+int64(take+end) > r.maxBytes && (r.size > 0 || take > 0) {
				break
			}
			take += end
		}
		if take == 0 {
			rotated, err := r.rotate()
			if err != nil && rotateErr == nil {
				rotateErr = err
			}
			if rotated {
				continue
			}
			// Not now: the line goes on the current file.
			if take = bytes.IndexByte(p, '\n') + 1; take == 0 {
				take = len(p)
			}
		}
		w, err := r.lj.Write(p[:take])
		r.size += int64(w)
		n += w
		if err != nil {
			return n, err
		}
		p = p[take:]
	}
	return n, rotateErr
}

// rotate starts a new file, unless it cannot now: lumberjack names a
// backup after the current millisecond, and a second rotation within the
// same millisecond would rename over the first backup (at such rates the
// file grows a little past maxBytes instead, until the clock moves on), or
// rotating failed (the lines go on the current file, and the error is
// reported).
func (r *rotatingFile) rotate() (bool, error) {
	if time.Now().UnixMilli() <= r.lastMilli {
		return false, nil
	}
	defer func() { r.lastMilli = time.Now().UnixMilli() }()
	if err := r.lj.Rotate(); err != nil {
		return false, fmt.Errorf("rotate log file %s: %w", r.path, err)
	}
	r.size = 0
	r.rotations++
	return true, nil
}

// Close closes the file. Later writes fail with os.ErrClosed.
func (r *rotatingFile) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	return r.lj.Close()
}
