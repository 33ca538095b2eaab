package fetch_test

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/fetch"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/testsite"
)

// The engine shares one Fetcher, fetches each request with its user agent
// and cookie, publishes every Result and retries what IsRetryable allows.
func ExampleFetcher_Fetch() {
	site, err := testsite.New("127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer site.Close()
	cfg := fetch.DefaultConfig()
	// The test site is on loopback, which the fetcher refuses by default.
	cfg.AllowedNetworks = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	f := fetch.New(cfg)
	defer f.Close()

	res, err := f.Fetch(context.Background(), fetch.Request{URL: site.URL("/redirect?to=/status/404"), UserAgent: "MyBot/1.0"})
	if err != nil {
		fmt.Println(err, fetch.IsRetryable(err))
		return
	}
	fmt.Println(res.Status, res.StatusText, res.URL == site.URL("/status/404"), res.RequestHeader.Get("User-Agent"))

	_, err = f.Fetch(context.Background(), fetch.Request{URL: site.URL("/loop/a")})
	fmt.Println(fetch.IsRetryable(err))
	// Output:
	// 404 Not Found true MyBot/1.0
	// false
}
