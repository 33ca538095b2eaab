package testsite

import (
	"context"
	"net/http"
	"sync"
)

// Hold keeps a site's requests for one path waiting (WithHold) until the
// test releases them: a test that must act while a crawler has a given
// page in flight (its fetch begun, its result not yet published) waits
// for Arrived, acts, then calls Release. Its methods are safe for
// concurrent use.
type Hold struct {
	arrivedOnce sync.Once
	arrived     chan struct{}
	releaseOnce sync.Once
	released    chan struct{}
}

// NewHold returns a hold that keeps requests waiting until Release.
func NewHold() *Hold {
	return &Hold{arrived: make(chan struct{}), released: make(chan struct{})}
}

// Arrived is closed once the first request for the held path has arrived
// and is waiting.
func (h *Hold) Arrived() <-chan struct{} { return h.arrived }

// Release lets the waiting requests, and every later one, be served as
// they would be without the hold. Calling it again does nothing.
func (h *Hold) Release() { h.releaseOnce.Do(func() { close(h.released) }) }

// wait keeps a request waiting until Release; false when the client went
// away or the site closed first.
func (h *Hold) wait(ctx context.Context, closing <-chan struct{}) bool {
	h.arrivedOnce.Do(func() { close(h.arrived) })
	select {
	case <-h.released:
		return true
	case <-ctx.Done():
	case <-closing:
	}
	return false
}

// WithHold keeps the requests for path (the URL's exact path, no query)
// waiting until hold is released, then serves them as usual (built-in
// pages or WithHandler's). They are in the hit log when they arrive.
func WithHold(path string, hold *Hold) Option {
	return func(o *options) {
		if o.holds == nil {
			o.holds = map[string]*Hold{}
		}
		o.holds[path] = hold
	}
}

// hold keeps r waiting when its path is held (WithHold). When the client
// goes away or the site closes first, it drops the connection without an
// answer, as hang does (a handler that returned would answer 200).
func (s *Site) hold(r *http.Request) {
	if h := s.opts.holds[r.URL.Path]; h != nil && !h.wait(r.Context(), s.closing) {
		panic(http.ErrAbortHandler)
	}
}
