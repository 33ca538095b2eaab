package logfactory

import (
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

// Write appends p, first rotating when p would take the file past maxBytes.
// Callers write whole lines (the logger does, under its lock), so a line is never
// split across files.
func (r *rotatingFile) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return 0, fmt.Errorf("write log file %s: %w", r.path, os.ErrClosed)
	}
	var rotateErr error
	if r.maxBytes > 0 && r.size > 0 && r.size+int64(len(p)) > r.maxBytes {
		// lumberjack names a backup after the current millisecond, and a
		// second rotation within the same millisecond would rename over
		// the first backup. At such rates the file grows a little past
		// maxBytes instead, until the clock moves on.
		if time.Now().UnixMilli() > r.lastMilli {
			if err := r.lj.Rotate(); err != nil {
				rotateErr = fmt.Errorf("rotate log file %s: %w", r.path, err)
			} else {
				r.size = 0
				r.rotations++
			}
			r.lastMilli = time.Now().UnixMilli()
		}
	}
	n, err := r.lj.Write(p)
	r.size += int64(n)
	if err == nil {
		err = rotateErr
	}
	return n, err
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
