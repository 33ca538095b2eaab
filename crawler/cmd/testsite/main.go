// Command testsite serves the crawler's deterministic test web site (package
// crawler/testsite) on a loopback address, for demos and manual tests.
package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/testsite"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRoot().ExecuteContext(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "testsite: %v\n", err)
		os.Exit(1)
	}
}

// newRoot builds the command; main runs it.
func newRoot() *cobra.Command {
	var (
		addr                 string
		pages, fanout, depth int
		robotsFile           string
		peers                []string
	)
	cmd := &cobra.Command{
		Use:   "testsite",
		Short: "Serve the crawler's deterministic test web site",
		Long: `testsite serves the deterministic web site the crawler's tests use: a link tree under /page/,
pages with allow/deny paths, ignored file extensions and links to peer sites, and special pages
(/status/<code>, /slow/<ms>, /hang, redirects and a redirect loop, robots.txt, malformed and
non-UTF-8 HTML, /huge/<bytes>, /gzip, /set-cookie, /echo-headers). /special links to all of them.
GET /__hits lists the requests received as JSON (?path= filters); DELETE /__hits clears the list.

Linux routes all of 127.0.0.0/8 to loopback, so several sites on 127.0.0.1, 127.0.0.2, ... are
different domains to the crawler; link them with --peer.`,
		Example: `  testsite --addr 127.0.0.1:8000
  testsite --addr 127.0.0.2:8000 --peer http://127.0.0.1:8000/ --pages 5 --fanout 2 --depth 4`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts := []testsite.Option{testsite.WithPages(pages), testsite.WithTree(fanout, depth)}
			if robotsFile != "" {
				body, err := os.ReadFile(robotsFile)
				if err != nil {
					return fmt.Errorf("read robots file: %w", err)
				}
				opts = append(opts, testsite.WithRobots(http.StatusOK, string(body)))
			}
			site, err := testsite.New(addr, opts...)
			if err != nil {
				return err
			}
			site.SetPeers(peers...)
			fmt.Fprintf(cmd.OutOrStdout(), "serving the test site at %s (Ctrl-C stops)\n", site.URL("/"))
			<-cmd.Context().Done()
			return site.Close()
		},
	}
	f := cmd.Flags()
	f.StringVar(&addr, "addr", "127.0.0.1:8000", "host:port to listen on (port 0 picks a free one)")
	f.IntVar(&pages, "pages", 3, "tree roots /page/1..N linked from /")
	f.IntVar(&fanout, "fanout", 3, "children per tree page")
	f.IntVar(&depth, "depth", 3, "levels of the tree below /")
	f.StringVar(&robotsFile, "robots", "", "file to serve as /robots.txt (default: disallow /private/ for everyone)")
	f.StringSliceVar(&peers, "peer", nil, "URL of another site for / to link to (repeatable)")
	return cmd
}
