// Package settings loads a component's settings the way every Scrapy Cluster
// component does: built-in defaults, then a YAML settings file (the role of the
// original's localsettings.py), then environment variables of the same name
// (the Docker convention), then command-line flags, each overriding the one
// before. Maps merge one level deep, as the original's SettingsWrapper does:
// a file that sets FAMILY: {Sister: Kim} changes that key and keeps the others.
//
// Each setting is declared once, in the package that reads it, with its
// name, default, type and a one-line doc (String, Int, Seconds, ... return a
// Setting), and read only through that declaration (Setting.From). A
// component's settings are its packages' declarations joined into a Group,
// which Load loads. The settings tables in docs/ and the list of every
// component's setting names (for the unknown-setting warnings) are derived
// from the declarations by `make settings` (ops/cmd/settings-gen).
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

	"gopkg.in/yaml.v3"
)

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
	declared Group
	values   map[string]any
	sources  map[string]Source
	unknown  []Unknown
}

// Load builds Settings from a component's declarations and the overrides
// opts names.
func Load(declared Group, opts Options) (*Settings, error) {
	s := &Settings{declared: declared, values: make(map[string]any, len(declared)), sources: make(map[string]Source, len(declared))}
	for name, d := range declared {
		s.values[name] = cloneValue(d.Default)
		s.sources[name] = FromDefault
	}
	unknown := newUnknownFinder(declared)
	fromFile := map[string]bool{}
	if opts.File != "" {
		names, err := s.applyFile(opts.File)
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
				if err := s.applyString(name, raw, FromEnv); err != nil {
					return nil, err
				}
			}
		}
		unknown.env(env, fromFile)
	}
	flags := slices.Sorted(maps.Keys(opts.Flags))
	for _, name := range flags {
		if err := s.applyString(name, opts.Flags[name], FromFlag); err != nil {
			return nil, err
		}
	}
	unknown.flags(flags)
	s.unknown = unknown.result()
	return s, nil
}

// applyFile applies the settings file and returns the names it gave.
func (s *Settings) applyFile(path string) ([]string, error) {
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
		if err := s.apply(name, doc[name], FromFile); err != nil {
			return nil, fmt.Errorf("settings file %s: %w", path, err)
		}
	}
	return names, nil
}

// applyString applies a value given as text (environment or flag). For list
// and map settings, and settings without a typed default, text starting with
// "[" or "{" is read as YAML (so JSON works too); a list setting also accepts
// "a, b, c".
func (s *Settings) applyString(name, raw string, src Source) error {
	var v any = raw
	def := s.declared[name].Default
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
	return s.apply(name, v, src)
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
func (s *Settings) apply(name string, v any, src Source) error {
	def := s.declared[name].Default
	if def == nil {
		s.values[name] = v
		s.sources[name] = src
		return nil
	}
	conv, err := convert(def, v)
	if err == nil {
		err = s.declared[name].check(conv)
	}
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
// It is for the settings of plugins and spiders built outside this
// repository, which no component declares; the components read theirs
// through their declarations (Setting.From).
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
