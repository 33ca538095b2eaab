package throttle

import "github.com/scrapycluster/scrapy-cluster-go/scutils/settings"

// The default domain throttle: what a domain the domain configuration does
// not list gets. The crawlers throttle by it; the Redis Monitor reads it to
// say how much of the queued work the throttle lets out
// (scrapy_redis_monitor_eligible_requests).
var (
	QueueHits      = settings.Int("QUEUE_HITS", 10, "pops per `QUEUE_WINDOW` per domain, unless the domain config says otherwise; the Redis Monitor reads it for [`scrapy_redis_monitor_eligible_requests`](metrics.md#throttle-eligible-demand), so give every component the same value").AtLeast(1)
	QueueWindow    = settings.Seconds("QUEUE_WINDOW", 60, "seconds of the domain throttle's window").Positive()
	QueueModerated = settings.Bool("QUEUE_MODERATED", true, "space the hits `QUEUE_WINDOW`/`QUEUE_HITS` seconds apart; elastic, as the original: a crawler that has popped `QUEUE_HITS` of a domain catches up while the window is not full ([strict spacing](throttling-and-crash-safety.md#the-cluster-wide-domain-throttle))")
)
