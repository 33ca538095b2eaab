package cli_test

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/cli"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// A binary's main: defaults in one place, the shared flags, a sub-command
// that loads the settings.
func ExampleNewRoot() {
	defaults := cli.Merge(settings.Defaults{"GREETING": "hello", "LOG_LEVEL": "INFO"})
	root, flags := cli.NewRoot("greeter", "Says hello", "Says hello, as configured.", defaults)
	root.AddCommand(&cobra.Command{
		Use: "greet",
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := flags.Load(defaults)
			if err != nil {
				return err
			}
			cmd.Println(s.String("GREETING"))
			return nil
		},
	})
	root.SetOut(os.Stdout)
	root.SetArgs([]string{"greet", "--set", "GREETING=bonjour"})
	_ = root.Execute()
	// Output: bonjour
}
