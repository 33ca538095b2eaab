package zkwatch_test

import (
	"context"
	"log"
	"os"
	"os/signal"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/zkwatch"
)

// ExampleNew watches the crawlers' domain configuration, as a crawler does.
// It needs a ZooKeeper server, so it is compiled but not run.
func ExampleNew() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	w, err := zkwatch.New(ctx, zkwatch.Config{
		Hosts:     zkwatch.SplitHosts("localhost:2181"),
		Path:      "/scrapy-cluster/crawler/all",
		Ensure:    true, // create the node if nobody pushed a config yet
		ValidInit: true, // fail now if ZooKeeper is unreachable
		OnConfig: func(contents string) {
			log.Printf("new configuration:\n%s", contents)
		},
		OnValid: func(valid bool) {
			log.Printf("configuration valid: %v", valid)
		},
		OnError: func(msg string) {
			// MsgBadConnection: keep the current configuration, the
			// watcher reconnects by itself.
			log.Printf("configuration trouble: %s", msg)
		},
		Logger: log.Default(),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer w.Close()

	// Polling works as well as the handlers.
	log.Printf("valid=%v contents=%q", w.IsValid(), w.GetFileContents())
	<-ctx.Done()
}
