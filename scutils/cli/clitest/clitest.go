// Package clitest runs a component's command line in its tests: the
// commands the binary runs, with their output checked for what it must say.
package clitest

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Output runs root with args, as the binary runs its command line, and
// returns what it wrote on its standard output; an error fails tb.
func Output(tb testing.TB, root *cobra.Command, args ...string) string {
	tb.Helper()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		tb.Fatalf("%s %s: %v", root.Name(), strings.Join(args, " "), err)
	}
	return out.String()
}

// ExpectContains fails tb for each of wants that out lacks; what names out
// in the message ("settings output").
func ExpectContains(tb testing.TB, what, out string, wants ...string) {
	tb.Helper()
	for _, want := range wants {
		if !strings.Contains(out, want) {
			tb.Errorf("%s lacks %q:\n%s", what, want, out)
		}
	}
}
