package extract

import (
	"strings"
	"sync"
)

// cacheSize bounds a Cache; when full it starts again empty (the crawls a
// crawler serves at once are far fewer).
const cacheSize = 1024

// Cache keeps compiled rules by their JSON text, so that a crawl's rules
// are compiled once per process, not once per page. The zero value is
// ready; it is safe for concurrent use.
type Cache struct {
	mu sync.Mutex
	m  map[string]compiled
}

type compiled struct {
	rules *Rules
	err   error
}

// Get returns the rules raw compiles to (CompileJSON), compiling them only
// the first time.
func (c *Cache) Get(raw string) (*Rules, error) {
	c.mu.Lock()
	got, ok := c.m[raw]
	c.mu.Unlock()
	if ok {
		return got.rules, got.err
	}
	rules, err := CompileJSON([]byte(raw))
	c.mu.Lock()
	if c.m == nil || len(c.m) >= cacheSize {
		c.m = make(map[string]compiled)
	}
	c.m[strings.Clone(raw)] = compiled{rules, err} // raw may be a part of a larger text
	c.mu.Unlock()
	return rules, err
}
