# Scrapy Cluster in Go. `make help` lists the targets.

GO        ?= go
MODULES   := scutils kafka-monitor redis-monitor crawler rest ops
PKGS      := $(addsuffix /...,$(addprefix ./,$(MODULES)))
# Every directory holding a main package under <module>/cmd/<binary>.
CMDS      := $(wildcard $(addsuffix /cmd/*,$(MODULES)))
BINARIES  := $(addprefix bin/,$(notdir $(CMDS)))
STATICCHECK_VERSION ?= v0.8.2
BENCHTIME ?= 3s

.PHONY: help build test test-short bench bench-all lint fmt-check vet staticcheck settings run console-screenshots clean $(BINARIES)

help:
	@echo "make run        build everything and start the cluster locally on embedded Kafka and Redis (Ctrl-C stops it);"
	@echo "                flags in RUN_ARGS, e.g. make run RUN_ARGS=\"--test-site --crawlers 2\" (bin/local-cluster --help)"
	@echo "make build      build all binaries into bin/"
	@echo "make test       formatting and vet checks, then every test against real Redis, ZooKeeper and kfake"
	@echo "make bench      build and run bin/bench-table: one table of the headline figures (ingest, crawler pages/s,"
	@echo "                new-domain latency, REST /feed, peak RSS of each component, local-cluster memory after"
	@echo "                a 100k-page crawl, CPU per page of each process and Redis commands per page), median of 3 runs;"
	@echo "                flags in BENCH_ARGS, e.g. make bench BENCH_ARGS=\"-count 1 -only REST\" (bin/bench-table --help)"
	@echo "make bench-all  every benchmark, raw go test -bench output (throttled queue, stats, Redis Monitor answers, ...)"
	@echo "make lint       gofmt check, go vet and staticcheck"
	@echo "make settings   write what the setting declarations determine: the settings tables in docs/ and"
	@echo "                scutils/settings/names.go (every component's setting names); a test says when they are stale"
	@echo "make console-screenshots  the console's browser test, writing its screenshots to docs/img/ (needs chromium)"

build: $(BINARIES)

$(BINARIES): bin/%:
	@mkdir -p bin
	$(GO) build -o $@ ./$(filter %/cmd/$*,$(CMDS))

# What CI runs (.ci/run). With CI=true a missing redis-server or ZooKeeper
# fails the tests instead of skipping them. .ci/test-tools names whatever is
# missing before the run and again after it (its exit status is the tests').
test: fmt-check vet
	@.ci/test-tools --notice
	@status=0; $(GO) test -race -count=1 -timeout 20m $(PKGS) || status=$$?; .ci/test-tools --notice; exit $$status

# Quick loop while editing: no race detector, cached results allowed.
test-short:
	$(GO) test $(PKGS)

bench: bin/bench-table
	bin/bench-table $(BENCH_ARGS)

bench-all:
	$(GO) test -run '^$$' -bench . -benchtime $(BENCHTIME) $(PKGS)

lint: fmt-check vet staticcheck

fmt-check:
	@out=$$(gofmt -l $(MODULES)); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

staticcheck:
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) $(PKGS)

# Each setting is declared once, in the package that reads it; the docs'
# settings tables and the cluster's list of setting names are generated from
# the declarations (ops/settingsdoc, whose test fails when they are stale).
settings:
	$(GO) run ./ops/cmd/settings-gen

# The one-command local cluster: an embedded Kafka broker (kfake) and Redis
# (miniredis), and the Kafka Monitor, Redis Monitor, crawlers and REST service
# as separate processes; it prints what to do next. Flags go in RUN_ARGS, e.g.
#   make run RUN_ARGS="--crawlers 2 --test-site"
# KAFKA_HOSTS, REDIS_HOST and ZOOKEEPER_HOSTS in the environment use real services.
run: build
	exec bin/local-cluster $(RUN_ARGS)

# The console's browser test (headless chromium against a whole local
# cluster) writes a screenshot of each page; docs/console.md shows them.
console-screenshots:
	CONSOLE_SCREENSHOTS=$(CURDIR)/docs/img $(GO) test -count=1 -run '^(TestConsoleInABrowser|TestConsoleShowsAScheduleAndCancelsIt)$$' ./rest/console/

clean:
	rm -rf bin
