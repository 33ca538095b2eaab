package settings

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"
)

// Decl is a setting's declaration without its Go type: what Load, the list
// of the cluster's setting names and the settings tables in docs/ need.
// Declarations are made with String, Int, Seconds, ... in the package that
// reads the setting, and read back with Setting.From.
type Decl struct {
	// Name is the setting's name in the settings file and the environment.
	Name string
	// Default is the built-in value; its Go type is the setting's type
	// (see Load).
	Default any
	// Doc says in one line what the setting does, for the settings tables
	// in docs/ (Markdown; links are relative to docs/).
	Doc string
	// Ours marks a setting this implementation adds, which Scrapy Cluster
	// 1.3 does not have; the tables mark it "(Go)".
	Ours bool
	// Bound says which values Load accepts ("at least 1", "positive"), ""
	// for any of the type (Setting.AtLeast, Setting.Positive).
	Bound string

	// inBound reports whether a loaded value (of the default's type) is
	// within Bound; nil for none.
	inBound func(v any) bool
}

// check returns the error Load gives for a value out of the declared bound.
func (d Decl) check(v any) error {
	if d.inBound == nil || d.inBound(v) {
		return nil
	}
	return fmt.Errorf("must be %s, got %v", d.Bound, v)
}

// Decl returns d itself, so that a Decl can be given to Declare.
func (d Decl) Decl() Decl { return d }

// Declared is what Declare takes: a Setting, or a Decl.
type Declared interface{ Decl() Decl }

// Setting is a declared setting read as a T: the only way components read
// a value. Declare one per setting, in the package that reads it:
//
//	var Persist = settings.Bool("SCHEDULER_PERSIST", true, "false: the spider's queues are cleared when the crawler stops")
//
// and read it with Persist.From(s). A Setting is a value: WithDefault and
// Ours return changed copies.
type Setting[T any] struct {
	decl Decl
	// read turns a loaded value (of the default's type, or anything Set
	// gave) into a T; store turns a T into a value of the default's type.
	read  func(any) (T, error)
	store func(T) any
	// number is a T as a number in the setting's unit, for bounds; nil for
	// a type without order.
	number func(T) float64
}

// Decl returns the declaration, without its Go type.
func (d Setting[T]) Decl() Decl { return d.decl }

// Name is the setting's name.
func (d Setting[T]) Name() string { return d.decl.Name }

// Default is the declared default, as From would read it.
func (d Setting[T]) Default() T {
	v, err := d.read(cloneValue(d.decl.Default))
	if err != nil {
		panic(fmt.Sprintf("setting %s: default: %v", d.decl.Name, err))
	}
	return v
}

// WithDefault is d with another default: how a component gives a shared
// setting a default of its own (each component's ADMIN_ADDR port).
func (d Setting[T]) WithDefault(v T) Setting[T] {
	d.decl.Default = d.store(v)
	if err := d.decl.check(d.decl.Default); err != nil {
		panic(fmt.Sprintf("setting %s: default: %v", d.decl.Name, err))
	}
	return d
}

// Ours marks d as a setting Scrapy Cluster 1.3 does not have.
func (d Setting[T]) Ours() Setting[T] {
	d.decl.Ours = true
	return d
}

// AtLeast returns d with a lower bound: Load refuses a smaller value
// ("setting NAME from SOURCE: must be at least MIN, got V"). Only number
// and duration settings have bounds.
func (d Setting[T]) AtLeast(min T) Setting[T] {
	lo := d.numberOf(min)
	return d.bounded("at least "+formatNumber(lo), func(n float64) bool { return n >= lo })
}

// Within returns d bounded to values from min to max, both included, as
// AtLeast ("must be from MIN to MAX").
func (d Setting[T]) Within(min, max T) Setting[T] {
	lo, hi := d.numberOf(min), d.numberOf(max)
	return d.bounded("from "+formatNumber(lo)+" to "+formatNumber(hi), func(n float64) bool { return lo <= n && n <= hi })
}

func formatNumber(n float64) string { return strconv.FormatFloat(n, 'f', -1, 64) }

// Positive returns d bounded to values above zero, as AtLeast.
func (d Setting[T]) Positive() Setting[T] {
	return d.bounded("positive", func(n float64) bool { return n > 0 })
}

func (d Setting[T]) numberOf(v T) float64 {
	if d.number == nil {
		panic(fmt.Sprintf("setting %s: a %T setting has no bounds", d.decl.Name, v))
	}
	return d.number(v)
}

func (d Setting[T]) bounded(bound string, in func(float64) bool) Setting[T] {
	var zero T
	d.numberOf(zero) // panics for a type without order
	d.decl.Bound = bound
	d.decl.inBound = func(v any) bool {
		t, err := d.read(v)
		return err == nil && in(d.number(t))
	}
	if err := d.decl.check(d.decl.Default); err != nil {
		panic(fmt.Sprintf("setting %s: default: %v", d.decl.Name, err))
	}
	return d
}

// From returns the setting's value in s. It panics when the component that
// loaded s did not declare the setting (a programming error the component's
// first test finds); Load has checked the value's type.
func (d Setting[T]) From(s *Settings) T {
	v, ok := d.Lookup(s)
	if !ok {
		panic(fmt.Sprintf("setting %s is not one of this component's settings: add its declaration to the component's Group", d.decl.Name))
	}
	return v
}

// Lookup returns the setting's value in s, or false when the component that
// loaded s does not declare the setting (the admin endpoint's ADMIN_ADDR,
// which the REST service does not have).
func (d Setting[T]) Lookup(s *Settings) (T, bool) {
	var zero T
	if _, ok := s.declared[d.decl.Name]; !ok {
		return zero, false
	}
	v, err := d.read(s.values[d.decl.Name])
	if err != nil {
		// Load converted the value to the declared type; only Set can
		// store another.
		panic(fmt.Sprintf("setting %s: %v", d.decl.Name, err))
	}
	return v, true
}

// declare makes a Setting whose loaded value is read as it is stored.
func declare[T any](name string, def T, doc string) Setting[T] {
	return Setting[T]{
		decl: Decl{Name: name, Default: def, Doc: doc},
		read: func(v any) (T, error) {
			if t, ok := v.(T); ok {
				return cloneValue(t).(T), nil
			}
			var zero T
			conv, err := convert(zero, v)
			if err != nil {
				return zero, err
			}
			return conv.(T), nil
		},
		store:  func(v T) any { return cloneValue(v) },
		number: numberFunc[T](),
	}
}

// numberFunc returns how a T is read as a number, or nil for a type without
// order.
func numberFunc[T any]() func(T) float64 {
	switch any(*new(T)).(type) {
	case int:
		return func(v T) float64 { return float64(any(v).(int)) }
	case float64:
		return func(v T) float64 { return any(v).(float64) }
	}
	return nil
}

// String declares a text setting.
func String(name, def, doc string) Setting[string] { return declare(name, def, doc) }

// Bool declares a boolean setting: true/false, or yes/no, on/off, 1/0 as text.
func Bool(name string, def bool, doc string) Setting[bool] { return declare(name, def, doc) }

// Int declares an integer setting.
func Int(name string, def int, doc string) Setting[int] { return declare(name, def, doc) }

// Float declares a number setting.
func Float(name string, def float64, doc string) Setting[float64] { return declare(name, def, doc) }

// Strings declares a list of texts ("a, b" or ["a", "b"] as text).
func Strings(name string, def []string, doc string) Setting[[]string] {
	return declare(name, def, doc)
}

// Ints declares a list of integers.
func Ints(name string, def []int, doc string) Setting[[]int] { return declare(name, def, doc) }

// Map declares a map of any values (such as PLUGINS, whose null ranks
// disable plugins); values given merge with the default one level deep.
func Map(name string, def map[string]any, doc string) Setting[map[string]any] {
	return declare(name, def, doc)
}

// StringMap declares a map of texts (such as DEFAULT_REQUEST_HEADERS).
func StringMap(name string, def map[string]string, doc string) Setting[map[string]string] {
	return declare(name, def, doc)
}

// Seconds declares a number of seconds read as a Duration. The default's
// type is the setting's: an int one takes whole seconds only, a float64 one
// fractions too (SLEEP_TIME: 0.1).
func Seconds[N int | float64](name string, def N, doc string) Setting[time.Duration] {
	return duration(name, def, time.Second, doc)
}

// Millis declares a number of milliseconds read as a Duration, as Seconds.
func Millis[N int | float64](name string, def N, doc string) Setting[time.Duration] {
	return duration(name, def, time.Millisecond, doc)
}

func duration[N int | float64](name string, def N, unit time.Duration, doc string) Setting[time.Duration] {
	return Setting[time.Duration]{
		decl: Decl{Name: name, Default: def, Doc: doc},
		read: func(v any) (time.Duration, error) {
			f, err := toFloat(v)
			return time.Duration(f * float64(unit)), err
		},
		store: func(d time.Duration) any {
			n := float64(d) / float64(unit)
			if _, whole := any(def).(int); whole {
				if n != float64(int(n)) {
					panic(fmt.Sprintf("setting %s: default %v is not a whole number of %v", name, d, unit))
				}
				return int(n)
			}
			return n
		},
		number: func(d time.Duration) float64 { return float64(d) / float64(unit) },
	}
}

// Group is a set of declarations by name: a package's settings (Declare),
// or a component's, its packages' groups joined (Join). Load takes one.
type Group map[string]Decl

// Declare groups declarations. A name declared twice is a programming
// error: Declare panics.
func Declare(decls ...Declared) Group {
	g := make(Group, len(decls))
	for _, d := range decls {
		decl := d.Decl()
		if _, dup := g[decl.Name]; dup {
			panic("setting " + decl.Name + " declared twice")
		}
		g[decl.Name] = decl
	}
	return g
}

// Join combines groups into one. A name in several takes its declaration
// from the last: that is how a component changes the default of a shared
// setting (Join(kafkaclient.Settings(), Declare(x.WithDefault(v)))).
func Join(groups ...Group) Group {
	out := Group{}
	for _, g := range groups {
		maps.Copy(out, g)
	}
	return out
}

// Names returns the group's setting names, sorted.
func (g Group) Names() []string { return slices.Sorted(maps.Keys(g)) }
