package testsite

import (
	"encoding/json"
	"net/http"
	"slices"
	"sync"
	"time"
)

// Hit is one request the site received.
type Hit struct {
	Time      time.Time `json:"time"`
	Method    string    `json:"method"`
	Host      string    `json:"host"` // the Host header, "127.0.0.1:8000"
	Path      string    `json:"path"`
	Query     string    `json:"query,omitempty"` // raw query, without "?"
	UserAgent string    `json:"user_agent"`
	Cookie    string    `json:"cookie"` // the Cookie header(s), joined with "; "
	Referer   string    `json:"referer,omitempty"`
}

// hitLog keeps the latest max hits.
type hitLog struct {
	mu   sync.Mutex
	max  int
	hits []Hit
}

func (l *hitLog) record(r *http.Request) {
	h := Hit{
		Time:      time.Now(),
		Method:    r.Method,
		Host:      r.Host,
		Path:      r.URL.Path,
		Referer:   r.Referer(),
		Query:     r.URL.RawQuery,
		UserAgent: r.UserAgent(),
	}
	for i, c := range r.Header.Values("Cookie") {
		if i > 0 {
			h.Cookie += "; "
		}
		h.Cookie += c
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.hits = append(l.hits, h)
	// Trim in batches so recording stays O(1) amortized.
	if len(l.hits) >= 2*l.max {
		l.hits = slices.Clone(l.hits[len(l.hits)-l.max:])
	}
}

func (l *hitLog) list(path string) []Hit {
	l.mu.Lock()
	defer l.mu.Unlock()
	from := max(0, len(l.hits)-l.max)
	out := make([]Hit, 0, len(l.hits)-from)
	for _, h := range l.hits[from:] {
		if path == "" || h.Path == path {
			out = append(out, h)
		}
	}
	return out
}

func (l *hitLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.hits = nil
}

// Hits returns every recorded request, oldest first.
func (s *Site) Hits() []Hit { return s.hits.list("") }

// HitsFor returns the recorded requests for path (the URL path exactly,
// without the query), oldest first.
func (s *Site) HitsFor(path string) []Hit { return s.hits.list(path) }

// Reset empties the hit log.
func (s *Site) Reset() { s.hits.reset() }

// serveHits answers /__hits: GET lists (filtered by ?path=), DELETE resets.
func (s *Site) serveHits(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(s.hits.list(r.URL.Query().Get("path")))
	case http.MethodDelete:
		s.Reset()
		w.WriteHeader(http.StatusNoContent)
	default:
		w.Header().Set("Allow", "GET, HEAD, DELETE")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}
