// Command local-cluster runs the whole Scrapy Cluster on this machine: an
// embedded Kafka broker and Redis, and the Kafka Monitor, Redis Monitor,
// crawlers and REST service as separate processes (package localcluster).
// `make run` builds everything and starts it.
//
// Exit status: 0 after a clean stop; ExitNoChromium (3) when --render finds
// no Chromium; 1 on any other failure.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/scrapycluster/scrapy-cluster-go/ops/localcluster"
)

func main() {
	if err := localcluster.NewCommand(os.Environ(), os.Stdout).Execute(); err != nil {
		fmt.Fprintf(os.Stderr, "local-cluster: %v\n", err)
		if errors.Is(err, localcluster.ErrNoChromium) {
			os.Exit(localcluster.ExitNoChromium)
		}
		os.Exit(1)
	}
}
