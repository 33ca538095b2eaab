package cli_test

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/cli"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// greeting is the greeter's own setting, declared where it is read.
var greeting = settings.String("GREETING", "hello", "what the greeter says").Ours()

// A binary's main: its settings declared in one place, the shared flags, a
// sub-command that loads the settings.
func ExampleNewRoot() {
	declared := settings.Join(cli.ComponentSettings("greeter", "greeter.log"), settings.Declare(greeting))
	root, flags := cli.NewRoot("greeter", "Says hello", "Says hello, as configured.", declared)
	root.AddCommand(&cobra.Command{
		Use: "greet",
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := flags.Load(declared)
			if err != nil {
				return err
			}
			cmd.Println(greeting.From(s))
			return nil
		},
	})
	root.SetOut(os.Stdout)
	root.SetArgs([]string{"greet", "--set", "GREETING=bonjour"})
	_ = root.Execute()
	// Output: bonjour
}
