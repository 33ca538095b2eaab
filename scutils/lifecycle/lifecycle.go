// Package lifecycle has the small timing helpers every long-running
// component needs: waiting that a shutdown interrupts, and a work context
// that outlives the shutdown signal by a grace period so the work in hand
// can finish.
package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Sleep waits d or until ctx is done; it reports whether d passed.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Every calls tick every d, with the tick's time, until stop is closed: the
// loop of a background chore that its owner ends by closing stop.
func Every(stop <-chan struct{}, d time.Duration, tick func(now time.Time)) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			tick(now)
		}
	}
}

// WithGrace returns a context for work in hand: it is not cancelled when
// ctx is (the shutdown signal), but grace later, or when stop is called.
// Call stop when the work is done.
func WithGrace(ctx context.Context, grace time.Duration) (work context.Context, stop context.CancelFunc) {
	work, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stopAfter := context.AfterFunc(ctx, func() {
		t := time.AfterFunc(grace, cancel)
		<-work.Done()
		t.Stop()
	})
	return work, func() {
		stopAfter()
		cancel()
	}
}

// ServeHTTP serves srv on ln until ctx is done, then shuts it down
// gracefully: it stops accepting connections and lets the requests in
// flight finish within grace, cutting those that take longer. The error is
// the server's own failure, or a shutdown that had to cut requests.
func ServeHTTP(ctx context.Context, srv *http.Server, ln net.Listener, grace time.Duration) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve http on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
		<-errc
		return fmt.Errorf("shut down the http server on %s: %w", ln.Addr(), err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve http on %s: %w", ln.Addr(), err)
	}
	return nil
}
