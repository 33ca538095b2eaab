package fetch

import (
	"net"
	"time"
)

// SetClock replaces the robots.txt cache's clock.
func SetClock(f *Fetcher, now func() time.Time) {
	f.robots.mu.Lock()
	defer f.robots.mu.Unlock()
	f.robots.now = now
}

// SetResolver makes the fetcher resolve names with r (before any Fetch).
func SetResolver(f *Fetcher, r *net.Resolver) { f.dialer.Resolver = r }
