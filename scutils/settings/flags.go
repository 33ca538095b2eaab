package settings

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// FlagValues collects the flags the user actually gave, as setting name to
// text, for Options.Flags. bindings maps a flag name (e.g. "log-level") to the
// setting it overrides (e.g. "LOG_LEVEL"). Flags left at their defaults are
// not included, so they do not hide the file or the environment.
func FlagValues(fs *pflag.FlagSet, bindings map[string]string) map[string]string {
	out := make(map[string]string)
	for flag, setting := range bindings {
		f := fs.Lookup(flag)
		if f == nil || !f.Changed {
			continue
		}
		out[setting] = f.Value.String()
	}
	return out
}

// SetFlag is a repeatable "--set NAME=VALUE" flag value: any setting by name
// from the command line, parsed like an environment variable.
type SetFlag map[string]string

// String shows the values as NAME=VALUE pairs.
func (f SetFlag) String() string {
	parts := make([]string, 0, len(f))
	for k, v := range f {
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, ",")
}

// Set records one NAME=VALUE.
func (f SetFlag) Set(s string) error {
	name, value, ok := strings.Cut(s, "=")
	name = strings.TrimSpace(name)
	if !ok || name == "" {
		return fmt.Errorf("want NAME=VALUE, got %q", s)
	}
	f[name] = value
	return nil
}

// Type names the flag's value in help output.
func (f SetFlag) Type() string { return "NAME=VALUE" }
