package zkwatch

import "time"

// SessionID exposes the current ZooKeeper session to the tests.
func (w *Watcher) SessionID() int64 {
	if c := w.conn.Load(); c != nil {
		return c.SessionID()
	}
	return 0
}

// BackoffDelay exposes backoffDelay to the tests.
func BackoffDelay(n int, max time.Duration) time.Duration { return backoffDelay(n, max) }
