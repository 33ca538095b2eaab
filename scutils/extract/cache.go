package extract

import "github.com/scrapycluster/scrapy-cluster-go/scutils/memo"

// Cache keeps compiled rules by their JSON text, so that a crawl's rules
// are compiled once per process, not once per page (at most memo.Size
// rule sets; when full it starts again empty). The zero value is ready;
// it is safe for concurrent use.
type Cache struct{ c memo.Cache[*Rules] }

// Get returns the rules raw compiles to (CompileJSON), compiling them only
// the first time.
func (c *Cache) Get(raw string) (*Rules, error) {
	return c.c.Get(raw, func() (*Rules, error) { return CompileJSON([]byte(raw)) })
}
