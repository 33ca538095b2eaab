// Package clusterbench holds benchmarks of the whole cluster as separate
// processes (the component binaries, built with go build, started by the
// local cluster launcher on an embedded Kafka broker and Redis): the
// feed-to-first-result latency for new domains and the peak resident memory
// of each component under a short workload. `make bench` runs them through
// the bench-table command; directly, from the workspace root:
//
//	go test -run '^$' -bench ClusterWorkload -benchtime 1x ./ops/benchtable/clusterbench/
package clusterbench
