// Command file-pusher pushes a crawler configuration file into ZooKeeper, or
// wipes it: the Go counterpart of Scrapy Cluster's crawler/config/file_pusher.py.
// Run it with --help for the flags.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
