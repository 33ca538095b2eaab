package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// Version is the release of this Scrapy Cluster implementation.
const Version = "0.1.0-dev"

// NewRoot returns a binary's root command with the settings flags, the
// `settings` sub-command and --version. declared are the component's
// settings; sub-commands load them with flags.Open(declared), which also
// names unknown settings. The long help ends with the paragraph on where
// settings come from, the same for every binary.
func NewRoot(name, short, long string, declared settings.Group) (*cobra.Command, *SettingsFlags) {
	root := &cobra.Command{
		Use:           name,
		Short:         short,
		Long:          long + "\n\n" + settingsSources(name),
		Version:       Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	flags := AddSettingsFlags(root)
	root.AddCommand(SettingsCommand(declared, flags))
	return root, flags
}

// settingsSources is the help paragraph on where a binary's settings come
// from.
func settingsSources(name string) string {
	return `Settings come from built-in defaults, a YAML file (--settings), environment variables of the
same names and flags, in that order; '` + name + ` settings' prints them with their sources.`
}

// Execute runs root with a context cancelled by SIGINT or SIGTERM, prints an
// error to stderr, and returns the process exit code.
func Execute(root *cobra.Command) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", root.Name(), err)
		var ee *exitError
		if errors.As(err, &ee) {
			return ee.code
		}
		return 1
	}
	return 0
}

// exitError carries a specific exit status through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// ExitError makes Execute exit with code (instead of 1) after printing err.
func ExitError(code int, err error) error { return &exitError{code: code, err: err} }
