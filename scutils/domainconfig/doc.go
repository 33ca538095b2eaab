// Package domainconfig holds the cluster's live domain configuration: the
// per-domain throttles and the domain blacklist every crawler obeys, changed
// at run time through the Zookeeper API (Kafka Monitor, then Redis Monitor)
// or by hand with file-pusher.
//
// # The document
//
// The configuration is one YAML document, as Scrapy Cluster 1.3 keeps it:
//
//	blacklist:
//	- ebay.com
//	domains:
//	  dmoz.org:
//	    hits: 60
//	    scale: 0.9
//	    window: 60
//
// blacklist lists the domains no crawler fetches. domains maps a domain to
// its throttle: at most hits requests per window seconds, cluster wide,
// with hits multiplied by scale (clamped to 0..1) when scale is given. A
// domain not listed uses the crawlers' QUEUE_HITS and QUEUE_WINDOW.
//
// Parse reads what people and the original write (integers written as 60.0
// are fine; a missing scale means 1.0, which the crawlers treat alike, and
// is written out on the next change; unknown keys are ignored and dropped on
// the next change) and rejects anything else, such as a domain without
// hits, with an error naming the place and the problem. Marshal writes
// byte for byte what the original Redis Monitor's PyYAML call
// (yaml.dump(d, default_flow_style=False)) writes for the same document, so
// Python and Go components can share it and diffs stay small. The blacklist
// keeps its order: AddBlacklist appends, Parse keeps what is written.
//
// # Where it lives
//
// With ZooKeeper (ZOOKEEPER_HOSTS set), the document is the data of the node
// ZOOKEEPER_ASSIGN_PATH + ZOOKEEPER_ID, by default
// /scrapy-cluster/crawler/all, where the original crawlers watch it (see
// package zkwatch). Without ZooKeeper (ZOOKEEPER_HOSTS empty) it is the
// Redis string rediskeys.DomainConfigKey(path), and every change is announced
// on the channel rediskeys.DomainConfigChannel(path) with the new document as
// the message. FromSettings opens the store the settings name, and Watch
// follows the document in it (WatchZooKeeper, WatchRedis), with the same
// promises whichever the store.
//
// # Concurrent changes
//
// Any number of Redis Monitors, on any number of hosts, may change the
// document at once; no change is lost. Store.Update is an optimistic
// read-modify-write: it reads the document and its version, applies the
// edit, and writes only if nobody wrote in between (ZooKeeper: Set with the
// version read; Redis: WATCH/MULTI/EXEC), otherwise it starts over from the
// new document. An edit is therefore a function that may run more than once,
// and each run must start from the document it is given. An edit that
// changes nothing writes nothing, so crawlers are not disturbed.
package domainconfig
