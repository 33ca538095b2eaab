package fetch

import "time"

// SetClock replaces the robots.txt cache's clock.
func SetClock(f *Fetcher, now func() time.Time) {
	f.robots.mu.Lock()
	defer f.robots.mu.Unlock()
	f.robots.now = now
}
