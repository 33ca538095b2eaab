# Scrapy Cluster in Go. `make help` lists the targets.

GO        ?= go
MODULES   := scutils kafka-monitor redis-monitor crawler rest
PKGS      := $(addsuffix /...,$(addprefix ./,$(MODULES)))
# Every directory holding a main package under <module>/cmd/<binary>.
CMDS      := $(wildcard $(addsuffix /cmd/*,$(MODULES)))
BINARIES  := $(addprefix bin/,$(notdir $(CMDS)))
STATICCHECK_VERSION ?= v0.8.2
BENCHTIME ?= 3s

.PHONY: help build test test-short bench lint fmt-check vet staticcheck run clean $(BINARIES)

help:
	@echo "make run        build everything and explain how to start the cluster"
	@echo "make build      build all binaries into bin/"
	@echo "make test       formatting and vet checks, then every test against real Redis, ZooKeeper and kfake"
	@echo "make bench      every benchmark (throttled queue, stats, Kafka Monitor ingest, Redis Monitor answers, ...)"
	@echo "make lint       gofmt check, go vet and staticcheck"

build: $(BINARIES)

$(BINARIES): bin/%:
	@mkdir -p bin
	$(GO) build -o $@ ./$(filter %/cmd/$*,$(CMDS))

# What CI runs (.ci/run). With CI=true a missing redis-server or ZooKeeper
# fails the tests instead of skipping them.
test: fmt-check vet
	$(GO) test -race -count=1 -timeout 20m $(PKGS)

# Quick loop while editing: no race detector, cached results allowed.
test-short:
	$(GO) test $(PKGS)

bench:
	$(GO) test -run '^$$' -bench . -benchtime $(BENCHTIME) $(PKGS)

lint: fmt-check vet staticcheck

fmt-check:
	@out=$$(gofmt -l $(MODULES)); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

staticcheck:
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) $(PKGS)

# The one-command local cluster (embedded Kafka broker and Redis) arrives with
# the local-cluster issue; until then this builds everything and says how to
# run the pieces against your own services.
run: build
	@echo
	@echo "Built: $(BINARIES)"
	@echo
	@echo "The one-command local cluster is not built yet (see the local-cluster issue)."
	@echo "Against your own Kafka and Redis, today you can run:"
	@echo "    bin/kafka-monitor run --set KAFKA_HOSTS=localhost:9092 --set REDIS_HOST=localhost"
	@echo "    bin/kafka-monitor feed '{\"url\": \"http://example.com\", \"appid\": \"testapp\", \"crawlid\": \"abc\"}'"
	@echo "    bin/kafkadump list; bin/kafkadump dump -t demo.incoming -b -p"
	@echo "    bin/redis-monitor --set KAFKA_HOSTS=localhost:9092 --set REDIS_HOST=localhost --set ZOOKEEPER_HOSTS="
	@echo "    bin/kafka-monitor feed '{\"stats\": \"all\", \"appid\": \"testapp\", \"uuid\": \"u1\"}'; bin/kafkadump dump -t demo.outbound_firehose -b"
	@echo "Every binary prints its effective settings with '<binary> settings'; file-pusher pushes a"
	@echo "domain config into ZooKeeper (bin/file-pusher --help)."

clean:
	rm -rf bin
