# sluice — the two commands a fresh machine needs are `make run` and `make test`.
GO ?= go

.PHONY: build run test unit deps franz franz-cluster vet fmt-check clean compat cluster

build:
	$(GO) build -o bin/sluice ./cmd/sluice

# A single-node cluster on 127.0.0.1:9092 with data under ./data.
run: build
	./bin/sluice

# A local three-node cluster on 127.0.0.1:9092/9094/9096 (controllers on the next ports), data
# under ./data/node-N; Ctrl-C stops it.
cluster: build
	scripts/cluster.sh

# Installs what the tests need, then runs every test: unit, crash, format round-trips with
# Apache Kafka's own tools, real clients against a real sluice process, franz-go's suite.
test: deps vet build
	SLUICE_BIN=$(CURDIR)/bin/sluice $(GO) test -count=1 -timeout 20m ./...
	$(GO) test -count=1 -tags invariants ./broker/...
	scripts/franz-suite.sh

deps:
	scripts/install-test-deps.sh

vet:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(GO) vet ./...

# franz-go's live suite against a three-node cluster with replication factor 3 (about 130 s,
# plus about 200 s for TestTxnEtl).
# Not in make test yet: in this session's runs it failed twice in five, in tests that pass on
# one node (Test848RegexBrokerResolves once, skipped here; TestGroupETL's KIP-848 cases once,
# a commit answered REBALANCE_IN_PROGRESS and records seen twice), causes not found yet.
franz-cluster: build
	FRANZ_NODES=3 FRANZ_RF=3 FRANZ_SKIP='Share|TestSCRAM|TestOAuth|^Test848RegexBrokerResolves$$' scripts/franz-suite.sh $(RUN)

# franz-go's live-broker suite, an optional -run pattern in RUN=... (FRANZ_NODES=3: against a
# three-node cluster)
franz: build
	scripts/franz-suite.sh $(RUN)

clean:
	rm -rf bin

# sluice vs Apache Kafka 4.1.1 on this machine, same run, same load; writes bench/results/<date>.md
# and .png. Not part of `make test`. BENCH_QUICK=1 is a smoke run of a few minutes; the full run
# takes 12-30 minutes. BENCH_ARGS passes flags to `loadgen all` (e.g. -brokers sluice).
BENCH_QUICK ?=
BENCH_ARGS ?=
.PHONY: bench
bench:
	BENCH_QUICK=$(BENCH_QUICK) bench/run.sh $(BENCH_ARGS)

# The client compatibility matrix: every client and tool (franz-go, kcat, confluent-kafka-python,
# kafka-python, kafkajs, sarama, kafka-go, Java clients, Kafka's CLI tools, Kafka Streams) through
# the same scenarios against a real sluice, plus franz-go's live-broker suite. Installs the
# clients (downloads cached under ~/.cache/sluice), writes COMPAT.md and the cell logs it links
# to under compat-tests/matrix/logs/. About 15 minutes.
compat: deps build
	$(GO) run ./compat-tests/matrix -bin $(CURDIR)/bin/sluice -out COMPAT.md -logs compat-tests/matrix/logs
