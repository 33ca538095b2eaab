package fetch

import (
	"crypto/x509"
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

// TrustRoots makes the fetcher's own client (not the proxy's transport)
// trust roots for https (before any Fetch).
func TrustRoots(f *Fetcher, roots *x509.CertPool) { f.h1.tlsConfig.RootCAs = roots }

// SetIdleTimeout replaces how long the fetcher's own client keeps idle
// connections (before any Fetch).
func SetIdleTimeout(f *Fetcher, d time.Duration) { f.h1.idleTimeout = d }
