// Package opscheck holds the tests of the repository's deployment material:
// docker/Dockerfile (its build steps run outside Docker, its targets checked), both
// compose files, the ELK material under elk/ (real JSON log lines of every
// component against the Elasticsearch index template and the Kibana saved
// objects), and the documentation under docs/ (every setting table against
// the binaries, every documented command against the binaries' command
// lines, and the quick start run against the local cluster).
//
// The tests build the binaries they need from the workspace root with the go
// on PATH, so they work in a fresh clone:
//
//	go test -race -count=1 ./ops/opscheck/
//	docker/check.sh     # the compose files and the Dockerfile only
//
// The package has no non-test code; this file only documents it.
package opscheck
