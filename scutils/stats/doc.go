// Package stats counts events in Redis so that many processes can count
// together: the Go port of Scrapy Cluster's scutils.stats_collector, writing
// the same keys, types and encodings, so Python and Go components can share
// (and report) the same statistics.
//
// Two styles of time handling exist:
//
//   - Sliding windows answer "how many hits in the last X seconds?".
//     RollingTimeWindow keeps one sorted set at <key>; WindowSet keeps one per
//     window at <base>:<seconds> plus an optional HyperLogLog at
//     <base>:lifetime, which is what every Scrapy Cluster component writes
//     (stats:kafka-monitor:total:900, stats:kafka-monitor:total:lifetime, ...).
//   - Step-based counters (TimeWindow, Counter, UniqueCounter,
//     HyperLogLogCounter, BitmapCounter) count within fixed, aligned time
//     steps: with a one-hour window the key is <key>:2016-01-31_19:00:00 from
//     19:00:00 until 19:59:59 UTC, then <key>:2016-01-31_20:00:00, and so on.
//     Only the newest KeepMax step keys are kept. WithRoll(false) counts in
//     the plain <key> instead.
//
// Every counter has Increment, Value, Key and DeleteKey. A counter that has
// upkeep to do (trimming expired hits so that readers using ZCARD see the
// right number, deleting step keys beyond KeepMax) runs it in one goroutine
// every cycle (WithCycleTime, default 5s) until its context is cancelled or
// Stop/Close is called; Maintain runs the same upkeep on demand. Value is
// exact between cycles: it counts only the hits inside the window.
//
// Hits recorded in sorted sets have the event time (Unix seconds, fractional)
// as score and a member unique to the event, so concurrent increments from
// many goroutines or processes are never merged into one.
//
// Times come from a clock (WithClock, default time.Now), so tests can move
// time by hand.
//
// Reader reads back what the components write (their counters and
// heartbeats, the crawlers' response codes, the domain queues' backlog) as
// typed values, with the Stats API's JSON shapes as their Section methods:
// the Redis Monitor answers stats requests and writes its log dumps with it.
package stats
