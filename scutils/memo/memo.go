// Package memo keeps what a costly build made of a key (a crawl's compiled
// extract rules, its link filter), so that it is built once per process
// rather than once per page. A Cache holds at most Size keys; when full it
// starts again empty (the crawls a crawler serves at once are far fewer).
package memo

import "sync"

// Size bounds a Cache.
const Size = 1024

// A Cache keeps, by key, the value and error a build returned. The zero
// value is ready; it is safe for concurrent use. A kept value is shared by
// every caller, so it must not be changed once built.
type Cache[V any] struct {
	mu sync.Mutex
	m  map[string]built[V]
}

type built[V any] struct {
	v   V
	err error
}

// Get returns what build made of key, calling it only the first time key
// is seen (or after the cache started again). key is copied when kept, so
// it may be a part of a larger text.
func (c *Cache[V]) Get(key string, build func() (V, error)) (V, error) {
	c.mu.Lock()
	got, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return got.v, got.err
	}
	return c.add(string([]byte(key)), build)
}

// GetBytes is Get with key as bytes: a value found costs no allocation.
func (c *Cache[V]) GetBytes(key []byte, build func() (V, error)) (V, error) {
	c.mu.Lock()
	got, ok := c.m[string(key)]
	c.mu.Unlock()
	if ok {
		return got.v, got.err
	}
	return c.add(string(key), build)
}

// add builds key's value and keeps it.
func (c *Cache[V]) add(key string, build func() (V, error)) (V, error) {
	v, err := build()
	c.mu.Lock()
	if c.m == nil || len(c.m) >= Size {
		c.m = make(map[string]built[V])
	}
	c.m[key] = built[V]{v, err}
	c.mu.Unlock()
	return v, err
}
