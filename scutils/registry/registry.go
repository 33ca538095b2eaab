// Package registry holds named factories (plugins, spiders) that register
// themselves in init() and are enabled by settings, the way the original's
// settings name classes. Components keep one Registry per extension point.
package registry

import (
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// Registry maps names to factories of T. The zero value is ready to use and
// safe for concurrent use.
type Registry[T any] struct {
	kind string // "plugin", "spider": used in messages
	mu   sync.RWMutex
	m    map[string]func() T
}

// New returns an empty registry; kind names its entries in messages.
func New[T any](kind string) *Registry[T] { return &Registry[T]{kind: kind} }

// Register makes a factory available under name. It panics if the name is
// taken: two entries under one name is a programming error found at start-up.
func (r *Registry[T]) Register(name string, factory func() T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.m[name]; dup {
		panic(r.kind + ": " + name + " registered twice")
	}
	if r.m == nil {
		r.m = map[string]func() T{}
	}
	r.m[name] = factory
}

// Names returns the registered names, sorted.
func (r *Registry[T]) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Sorted(maps.Keys(r.m))
}

// New makes a new instance of the named entry.
func (r *Registry[T]) New(name string) (T, error) {
	r.mu.RLock()
	factory, ok := r.m[name]
	r.mu.RUnlock()
	if !ok {
		var zero T
		return zero, fmt.Errorf("no %s named %s (registered: %v)", r.kind, name, r.Names())
	}
	return factory(), nil
}

// Loaded is a plugin a ranking setting enabled, with its rank: what both
// monitors' PLUGINS settings load.
type Loaded[T any] struct {
	Key    string // the name in the setting
	Rank   int
	Plugin T
}

// LoadSetting is Load of the ranking setting's value in s, which must
// enable at least one entry.
func (r *Registry[T]) LoadSetting(s *settings.Settings, setting settings.Setting[map[string]any]) ([]Loaded[T], error) {
	out, err := r.Load(setting.Name(), setting.From(s))
	if err == nil && len(out) == 0 {
		err = fmt.Errorf("setting %s: no %s enabled", setting.Name(), r.kind)
	}
	return out, err
}

// Load instantiates the entries a ranking setting enables (name: rank; a
// null rank disables one, as in the original's PLUGINS), sorted by rank,
// lowest first. Unknown names, ranks that are not integers and two entries
// sharing a rank are errors naming the setting.
func (r *Registry[T]) Load(setting string, enabled map[string]any) ([]Loaded[T], error) {
	var out []Loaded[T]
	ranks := map[int]string{}
	for _, key := range slices.Sorted(maps.Keys(enabled)) {
		raw := enabled[key]
		if raw == nil {
			continue
		}
		rank, ok := asInt(raw)
		if !ok {
			return nil, fmt.Errorf("setting %s: rank of %s must be an integer or null, got %v", setting, key, raw)
		}
		if other, dup := ranks[rank]; dup {
			return nil, fmt.Errorf("setting %s: %s and %s share rank %d", setting, other, key, rank)
		}
		ranks[rank] = key
		v, err := r.New(key)
		if err != nil {
			return nil, fmt.Errorf("setting %s: %w", setting, err)
		}
		out = append(out, Loaded[T]{Key: key, Rank: rank, Plugin: v})
	}
	slices.SortFunc(out, func(a, b Loaded[T]) int { return a.Rank - b.Rank })
	return out, nil
}

func asInt(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case int64:
		return int(n), true
	case float64:
		if n == float64(int(n)) {
			return int(n), true
		}
	}
	return 0, false
}
