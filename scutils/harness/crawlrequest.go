package harness

import (
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// QueueEntry is where r waits in Redis, as the Kafka Monitor queues it: its
// domain queue's key (<spiderid>:<domain>:queue) and its member there.
func QueueEntry(tb testing.TB, r *crawlrequest.Request) (key string, member []byte) {
	tb.Helper()
	domain, err := rediskeys.DomainOfURL(r.URL)
	if err != nil {
		tb.Fatal(err)
	}
	key = rediskeys.QueueKeyFor(r.SpiderID, domain, r.Rendered()) // a render request: its render queue
	member, err = r.Encode()
	if err != nil {
		tb.Fatal(err)
	}
	return key, member
}
