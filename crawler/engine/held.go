package engine

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
)

// byteGate bounds the bytes its holders hold together: acquire waits
// while the bytes held and asked would pass max. A holder asking more than
// max is admitted for max, so it waits until it holds all, and never for
// ever.
type byteGate struct {
	max   int64
	waits atomic.Int64 // acquires that had to wait for room

	mu      sync.Mutex
	held    int64
	waiting int           // acquires waiting on room
	room    chan struct{} // closed (and replaced) when bytes are given back while some wait
}

func newByteGate(max int64) *byteGate {
	return &byteGate{max: max, room: make(chan struct{})}
}

// acquire takes n bytes (at most max), waiting for room, and returns what
// it took, to be given back to release; false when ctx ended first.
func (g *byteGate) acquire(ctx context.Context, n int64) (int64, bool) {
	n = min(n, g.max)
	if n <= 0 {
		return 0, true
	}
	for {
		g.mu.Lock()
		if g.held+n <= g.max {
			g.held += n
			g.mu.Unlock()
			return n, true
		}
		room := g.room
		g.waiting++
		g.mu.Unlock()
		g.waits.Add(1)
		var ended bool
		select {
		case <-room:
		case <-ctx.Done():
			ended = true
		}
		g.mu.Lock()
		g.waiting--
		g.mu.Unlock()
		if ended {
			return 0, false
		}
	}
}

// release gives back n bytes acquire took.
func (g *byteGate) release(n int64) {
	if n <= 0 {
		return
	}
	g.mu.Lock()
	g.held -= n
	if g.waiting > 0 {
		close(g.room)
		g.room = make(chan struct{})
	}
	g.mu.Unlock()
}

// Held is how many bytes are held now.
func (g *byteGate) Held() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.held
}

// followupBytes estimates the memory a page's follow-up requests hold
// until their acknowledgement has queued them (crawlrequest.Request.HeldBytes).
func followupBytes(reqs []*crawlrequest.Request) int64 {
	var n int64
	for _, r := range reqs {
		n += int64(r.HeldBytes())
	}
	return n
}
