// Command rest: Scrapy Cluster REST service: HTTP gateway to the cluster (/, /feed, /poll).
package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/cli"
)

func main() {
	os.Exit(cli.Execute(newRoot()))
}

// newRoot builds the command tree; main runs it.
func newRoot() *cobra.Command {
	defaults := cli.ComponentDefaults("rest_service.log")
	root, _ := cli.NewRoot("rest", "Scrapy Cluster REST service: HTTP gateway to the cluster (/, /feed, /poll)", `The REST service accepts crawl, action and stats requests over HTTP, feeds them to Kafka and
returns the Redis Monitor's answers.

This build has the shared settings machinery only: the endpoints arrive with the REST issue.
'rest settings' prints the effective settings.`, defaults)
	return root
}
