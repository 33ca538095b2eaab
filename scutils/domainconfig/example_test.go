package domainconfig_test

import (
	"context"
	"fmt"
	"log"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/domainconfig"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// A document is edited in memory and written as the original writes it.
func ExampleDocument_Marshal() {
	doc, err := domainconfig.Parse([]byte("blacklist: [ebay.com]\n"))
	if err != nil {
		log.Fatal(err)
	}
	doc.UpdateDomain("dmoz.org", 60, 60, 0.9)
	doc.AddBlacklist("ebay.com") // already there: no duplicate
	fmt.Print(string(doc.Marshal()))
	fmt.Println(doc.Domains["dmoz.org"].ScaledHits(), "hits per window")
	// Output:
	// blacklist:
	// - ebay.com
	// domains:
	//   dmoz.org:
	//     hits: 60
	//     scale: 0.9
	//     window: 60
	// 54 hits per window
}

// The Redis Monitor changes the document through a Store; it needs a
// ZooKeeper server (or Redis), so it is compiled but not run.
func ExampleStore() {
	ctx := context.Background()
	s, err := settings.Load(domainconfig.Settings(), settings.Options{})
	if err != nil {
		log.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	store, err := domainconfig.FromSettings(s, rdb, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	// Safe while other monitors change the document too: the edit is
	// applied to the latest version.
	err = store.Update(ctx, func(d *domainconfig.Document) error {
		d.AddBlacklist("ebay.com")
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
}

// A crawler follows the document wherever the settings put it: in
// ZooKeeper, or in Redis when ZOOKEEPER_HOSTS is empty.
func ExampleWatch() {
	ctx := context.Background()
	s, err := settings.Load(domainconfig.Settings(), settings.Options{})
	if err != nil {
		log.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	err = domainconfig.Watch(ctx, s, rdb, func(d domainconfig.Document) {
		log.Printf("blacklist %v, %d throttled domains", d.Blacklist, len(d.Domains))
	})
	if err != nil {
		log.Fatal(err)
	}
}
