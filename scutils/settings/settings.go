// Package settings loads a component's settings the way every Scrapy Cluster
// component does: built-in defaults, then a YAML settings file (the role of the
// original's localsettings.py), then environment variables of the same name
// (the Docker convention), then command-line flags, each overriding the one
// before. Maps merge one level deep, as the original's SettingsWrapper does:
// a file that sets FAMILY: {Sister: Kim} changes that key and keeps the others.
//
// Names nobody knows are kept but listed by Settings.Unknown, with the
// closest known name, so a typo (QUEUE_HIT for QUEUE_HITS) can be named at
// start-up instead of changing nothing without a word.
//
// A setting's type is the type of its default. Values from the file, the
// environment and flags are converted to it, and a value that does not fit
// (PORT: "abc") makes Load fail with the setting's name, the source and the
// value, so a bad deployment stops at start-up instead of misbehaving later.
//
// Supported default types: string, bool, int, float64, []string, []int,
// map[string]any, map[string]int, map[string]string, and nil (any value kept
// as given). Settings that have no default (only in the file) keep the YAML
// value as decoded.
package settings

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Defaults is a component's built-in settings: name to default value. The
// default's Go type is the setting's type. It is the single place a setting's
// name and default live.
type Defaults map[string]any

// Source names where a setting's value came from.
type Source string

// The sources of a value, lowest precedence first.
const (
	FromDefault Source = "default"
	FromFile    Source = "file"
	FromEnv     Source = "env"
	FromFlag    Source = "flag"
)

// Options says where Load finds overrides. The zero value reads only the
// process environment.
type Options struct {
	// File is a YAML settings file; empty means none. A named file that does
	// not exist is an error.
	File string
	// Environ is the environment as KEY=VALUE strings (default os.Environ()).
	// Only names that have a default or appear in the file are read from it.
	Environ []string
	// NoEnv turns the environment layer off.
	NoEnv bool
	// Flags are values given on the command line, by setting name, as the
	// strings the user typed (see FlagValues). They override everything.
	Flags map[string]string
}

// Settings is a loaded, type-checked set of settings. It is safe for
// concurrent reads; Set is for start-up only.
type Settings struct {
	values  map[string]any
	sources map[string]Source
	unknown []Unknown
}

// Load builds Settings from defaults and the overrides opts names.
func Load(defaults Defaults, opts Options) (*Settings, error) {
	s := &Settings{values: make(map[string]any, len(defaults)), sources: make(map[string]Source, len(defaults))}
	for name, def := range defaults {
		s.values[name] = cloneValue(def)
		s.sources[name] = FromDefault
	}
	unknown := newUnknownFinder(defaults)
	fromFile := map[string]bool{}
	if opts.File != "" {
		names, err := s.applyFile(defaults, opts.File)
		if err != nil {
			return nil, err
		}
		unknown.file(names)
		for _, name := range names {
			fromFile[name] = true
		}
	}
	if !opts.NoEnv {
		environ := opts.Environ
		if environ == nil {
			environ = os.Environ()
		}
		env := make(map[string]string, len(environ))
		for _, kv := range environ {
			if k, v, ok := strings.Cut(kv, "="); ok {
				env[k] = v
			}
		}
		for _, name := range s.Names() {
			if raw, ok := env[name]; ok {
				if err := s.applyString(defaults, name, raw, FromEnv); err != nil {
					return nil, err
				}
			}
		}
		unknown.env(env, fromFile)
	}
	flags := slices.Sorted(maps.Keys(opts.Flags))
	for _, name := range flags {
		if err := s.applyString(defaults, name, opts.Flags[name], FromFlag); err != nil {
			return nil, err
		}
	}
	unknown.flags(flags)
	s.unknown = unknown.result()
	return s, nil
}

// applyFile applies the settings file and returns the names it gave.
func (s *Settings) applyFile(defaults Defaults, path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read settings file: %w", err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("settings file %s: not a YAML mapping of NAME: value: %w", path, err)
	}
	names := slices.Sorted(maps.Keys(doc))
	for _, name := range names {
		if err := s.apply(defaults, name, doc[name], FromFile); err != nil {
			return nil, fmt.Errorf("settings file %s: %w", path, err)
		}
	}
	return names, nil
}

// applyString applies a value given as text (environment or flag). For list
// and map settings, and settings without a typed default, text starting with
// "[" or "{" is read as YAML (so JSON works too); a list setting also accepts
// "a, b, c".
func (s *Settings) applyString(defaults Defaults, name, raw string, src Source) error {
	var v any = raw
	def := defaults[name]
	switch def.(type) {
	case []string, []int, map[string]any, map[string]int, map[string]string, nil:
		if t := strings.TrimSpace(raw); strings.HasPrefix(t, "[") || strings.HasPrefix(t, "{") {
			var parsed any
			err := yaml.Unmarshal([]byte(raw), &parsed)
			if err == nil {
				v = parsed
			} else if def != nil {
				return fmt.Errorf("setting %s from %s: cannot parse %q: %w", name, src, raw, err)
			}
		} else if isList(def) {
			list := []any{} // an empty string is an empty list
			for _, item := range SplitList(raw) {
				list = append(list, item)
			}
			v = list
		}
	}
	return s.apply(defaults, name, v, src)
}

func isList(def any) bool {
	switch def.(type) {
	case []string, []int:
		return true
	}
	return false
}

// SplitList reads a comma-separated value such as "a, b,c" (a list
// setting given as text, or a list of hosts like KAFKA_HOSTS and
// ZOOKEEPER_HOSTS) as its items: blanks around items and empty items are
// dropped, so "" and " , " have none (nil).
func SplitList(raw string) []string {
	var out []string
	for _, part := range strings.Split(raw, ",") {
		if p := strings.TrimSpace(part); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// apply converts v to the setting's type and stores it, merging maps one
// level deep into the current value.
func (s *Settings) apply(defaults Defaults, name string, v any, src Source) error {
	def, known := defaults[name]
	if !known || def == nil {
		s.values[name] = v
		s.sources[name] = src
		return nil
	}
	conv, err := convert(def, v)
	if err != nil {
		return fmt.Errorf("setting %s from %s: %w", name, src, err)
	}
	if m, ok := conv.(map[string]any); ok {
		merged := maps.Clone(s.values[name].(map[string]any))
		maps.Copy(merged, m)
		conv = merged
	} else if m, ok := conv.(map[string]int); ok {
		merged := maps.Clone(s.values[name].(map[string]int))
		maps.Copy(merged, m)
		conv = merged
	} else if m, ok := conv.(map[string]string); ok {
		merged := maps.Clone(s.values[name].(map[string]string))
		maps.Copy(merged, m)
		conv = merged
	}
	s.values[name] = conv
	s.sources[name] = src
	return nil
}

// Set overrides one setting after loading (tests, embedding). The value must
// have the setting's type.
func (s *Settings) Set(name string, v any) {
	s.values[name] = v
	s.sources[name] = FromFlag
}

// Has reports whether the setting exists.
func (s *Settings) Has(name string) bool {
	_, ok := s.values[name]
	return ok
}

// Get returns a setting's value and whether it exists.
func (s *Settings) Get(name string) (any, bool) {
	v, ok := s.values[name]
	return v, ok
}

// Source tells where a setting's value came from.
func (s *Settings) Source(name string) Source { return s.sources[name] }

// Names returns every setting's name, sorted.
func (s *Settings) Names() []string { return slices.Sorted(maps.Keys(s.values)) }

// All returns a copy of every setting, for dumping.
func (s *Settings) All() map[string]any {
	out := make(map[string]any, len(s.values))
	for k, v := range s.values {
		out[k] = cloneValue(v)
	}
	return out
}

// Lookup returns a setting as T, or an error naming the setting when it is
// missing or of another type. Numbers convert between int and float64.
func Lookup[T any](s *Settings, name string) (T, error) {
	var zero T
	v, ok := s.values[name]
	if !ok {
		return zero, fmt.Errorf("setting %s does not exist", name)
	}
	if t, ok := v.(T); ok {
		return t, nil
	}
	conv, err := convert(zero, v)
	if err != nil {
		return zero, fmt.Errorf("setting %s: %w", name, err)
	}
	return conv.(T), nil
}

// must is Lookup for settings the component defined defaults for: Load has
// already checked their types, so a failure is a programming error.
func must[T any](s *Settings, name string) T {
	v, err := Lookup[T](s, name)
	if err != nil {
		panic(err)
	}
	return v
}

// String returns a string setting. It panics if the setting is missing or of
// another type, which Load rules out for settings with defaults; use Lookup
// for settings that may be absent.
func (s *Settings) String(name string) string { return must[string](s, name) }

// Int returns an integer setting (panics as String does).
func (s *Settings) Int(name string) int { return must[int](s, name) }

// Float returns a number setting (panics as String does).
func (s *Settings) Float(name string) float64 { return must[float64](s, name) }

// Bool returns a boolean setting (panics as String does).
func (s *Settings) Bool(name string) bool { return must[bool](s, name) }

// Strings returns a list-of-strings setting (panics as String does).
func (s *Settings) Strings(name string) []string { return slices.Clone(must[[]string](s, name)) }

// Ints returns a list-of-integers setting (panics as String does).
func (s *Settings) Ints(name string) []int { return slices.Clone(must[[]int](s, name)) }

// Map returns a map setting (panics as String does).
func (s *Settings) Map(name string) map[string]any { return maps.Clone(must[map[string]any](s, name)) }

// IntMap returns a map of integers, such as PLUGINS ranks (panics as String does).
func (s *Settings) IntMap(name string) map[string]int {
	return maps.Clone(must[map[string]int](s, name))
}

// Seconds returns a number-of-seconds setting (int or float) as a Duration,
// the form the original's timeouts take (panics as String does).
func (s *Settings) Seconds(name string) time.Duration {
	return time.Duration(must[float64](s, name) * float64(time.Second))
}

// Millis returns a number-of-milliseconds setting as a Duration (panics as String does).
func (s *Settings) Millis(name string) time.Duration {
	return time.Duration(must[float64](s, name) * float64(time.Millisecond))
}
