// Package e2e holds the crawler's multi-process tests and benchmarks: the
// crawler binary (cmd/crawler, built once per test binary with the go on
// PATH) runs as separate processes against a real redis-server, the
// in-process kfake broker and loopback test sites served by the test
// process. Requests are seeded as the Kafka Monitor seeds them (the request
// JSON in its domain queue, the queue announced) and results are read from
// <prefix>.crawled_firehose.
//
//	go test -race -count=1 ./e2e/                  # the tests
//	go test -run '^$' -bench . -benchtime 1x ./e2e/ # the benchmarks
//
// The package has no non-test code; this file only documents it.
package e2e
