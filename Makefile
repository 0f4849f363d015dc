# sluice — the two commands a fresh machine needs are `make run` and `make test`.
GO ?= go

.PHONY: build run test unit deps franz franz-cluster vet fmt-check clean compat compat-connect cluster chaos chaos-full share-java

# The commit is stamped into `sluice --version` (Go's own VCS stamping may be off: GOFLAGS).
SLUICE_COMMIT := $(shell git rev-parse --short=12 HEAD 2>/dev/null)$(shell git diff --quiet HEAD 2>/dev/null || echo +dirty)

build:
	$(GO) build -ldflags "-X main.linkedCommit=$(SLUICE_COMMIT)" -o bin/sluice ./cmd/sluice

# A single-node cluster on 127.0.0.1:9092 with data under ./data; health and metrics on
# 127.0.0.1:9644, the web console (read-only) on http://127.0.0.1:9645.
run: build
	./bin/sluice --http-addr 127.0.0.1:9644 --console-addr 127.0.0.1:9645

# A local three-node cluster on 127.0.0.1:9092/9094/9096 (controllers on the next ports), data
# under ./data/node-N; Ctrl-C stops it.
cluster: build
	scripts/cluster.sh

# Installs what the tests need, then runs every test: unit, crash, format round-trips with
# Apache Kafka's own tools, real clients against a real sluice process, the short chaos run
# (chaos.TestChaosShort and TestChaosTxnShort: three nodes in network namespaces, two nemeses
# each, about 75 s each, as root),
# franz-go's suite against one node and against a three-node cluster (replication factor 3).
test: deps vet build
	SLUICE_BIN=$(CURDIR)/bin/sluice $(GO) test -count=1 -timeout 45m ./...
	$(GO) test -count=1 -tags invariants ./broker/...
	scripts/franz-suite.sh
	FRANZ_NODES=3 FRANZ_RF=3 FRANZ_TIMEOUT=20m FRANZ_SKIP='$(FRANZ_CLUSTER_SKIP)' scripts/franz-suite.sh

deps:
	scripts/install-test-deps.sh

vet:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(GO) vet ./...

# franz-go's live suite against a three-node cluster with replication factor 3 (2-4 minutes,
# plus 3-5 for TestTxnEtl;
# make test runs it after the one-node suite; the 20-minute timeout is for a machine loaded
# many times over, where TestGroupETL alone took 8 minutes). It skips what the one-node run
# skips (see scripts/franz-suite.sh) and Test848RegexBrokerResolves, which races on any
# cluster of more than one broker (against three Apache Kafka 4.1.1 nodes it failed 3 of 12
# runs): its consumer is assigned __consumer_offsets (the broker's regex matches internal
# topics, as Kafka's does) and stops polling once it has records from as many topics as it
# wants regular ones, so when the fetch answer of the broker leading one regular topic and
# some __consumer_offsets partitions arrives before the answer of the broker leading the other
# regular topic, it counts __consumer_offsets and misses that topic. On one node every
# partition comes in one fetch answer; the one-node run keeps it. TestShareGroupETL (48 s on an
# idle machine, 218 s on a loaded one) runs in the one-node suite only, to keep make test under
# 30 minutes; franz-go's other share-group tests run on the cluster too.
FRANZ_CLUSTER_SKIP = TestSCRAM|TestOAuth|^Test848RegexBrokerResolves$$|^TestShareGroupETL$$
franz-cluster: build
	FRANZ_NODES=3 FRANZ_RF=3 FRANZ_TIMEOUT=20m FRANZ_SKIP='$(FRANZ_CLUSTER_SKIP)' scripts/franz-suite.sh $(RUN)

# franz-go's live-broker suite, an optional -run pattern in RUN=... (FRANZ_NODES=3: against a
# three-node cluster)
franz: build
	scripts/franz-suite.sh $(RUN)

clean:
	rm -rf bin

# Kafka 4.4's Java KafkaShareConsumer against sluice (compat-tests/share_java_test.go, KIP-932
# share groups): three consumers sharing a partition exactly once, release/reject/archive at
# the delivery limit, a killed consumer's records redelivered, a read_committed group skipping a
# Java transactional producer's aborted records. About 90 s, so not in make test.
share-java: build
	SLUICE_BIN=$(CURDIR)/bin/sluice $(GO) test -count=1 -tags sharejava -run TestShareGroupsJava -v ./compat-tests/

# sluice vs Apache Kafka 4.4.0 on this machine, same run, same load; writes bench/results/<date>.md
# and .png. Not part of `make test`. BENCH_QUICK=1 is a smoke run of a few minutes; the full run
# takes 20-40 minutes. BENCH_ARGS passes flags to `loadgen all` (e.g. -brokers sluice -modes rf3,txn).
BENCH_QUICK ?=
BENCH_ARGS ?=
.PHONY: bench
bench:
	BENCH_QUICK=$(BENCH_QUICK) bench/run.sh $(BENCH_ARGS)

# Partitions at scale (issue 20): one node of sluice and of Apache Kafka 4.4.0, CreateTopics of
# 1,000/5,000/10,000 partitions, Metadata for all of them, descriptors and RSS, 10 GiB of data
# written, restarts (clean and kill -9) with all of it, a ramp towards 100,000 partitions and, if
# it gets there, the two restarts again. Writes bench/results/<date>-scale.md; about 8 minutes on an
# idle machine, far longer on a loaded one. SCALE_ARGS passes flags to `loadgen scale` (e.g. -brokers sluice -data-gib 1).
SCALE_ARGS ?=
.PHONY: bench-scale
bench-scale:
	$(GO) build -o bin/sluice ./cmd/sluice
	$(GO) build -o bin/loadgen ./bench/loadgen
	bin/loadgen scale -kafka-lib "$$(KAFKA_VERSION=4.4.0 scripts/fetch-kafka.sh)" -sluice-bin bin/sluice \
	  -workdir "$${TMPDIR:-/tmp}/sluice-bench-scale" -out bench/results $(SCALE_ARGS)

# Many client connections (issue 20): one node of sluice and of Apache Kafka 4.4.0 in turn,
# 10,000 connections opened and held idle (memory and descriptors per connection), then 2,000 of
# them sending Metadata every 500 ms while the rest stay idle (latency, CPU, peak RSS). Writes
# bench/results/<date>-conns.md; about 3 minutes. CONNS_ARGS passes flags to `loadgen conns`.
CONNS_ARGS ?=
.PHONY: bench-conns
bench-conns:
	$(GO) build -o bin/sluice ./cmd/sluice
	$(GO) build -o bin/loadgen ./bench/loadgen
	bin/loadgen conns -kafka-lib "$$(KAFKA_VERSION=4.4.0 scripts/fetch-kafka.sh)" -sluice-bin bin/sluice \
	  -workdir "$${TMPDIR:-/tmp}/sluice-bench-conns" -out bench/results $(CONNS_ARGS)

# OpenMessaging Benchmark's 1-topic-100-partitions-1kb shape (issue 20): one node of sluice and
# of Apache Kafka 4.4.0 in turn, 4 producers and 4 group consumers of 1 KiB records on 100
# partitions, at a fixed 10,000 records/s and unthrottled; publish and end-to-end latency.
# Writes bench/results/<date>-omb.md; about 5 minutes. OMB_ARGS passes flags to `loadgen omb`.
OMB_ARGS ?=
.PHONY: bench-omb
bench-omb:
	$(GO) build -o bin/sluice ./cmd/sluice
	$(GO) build -o bin/loadgen ./bench/loadgen
	bin/loadgen omb -kafka-lib "$$(KAFKA_VERSION=4.4.0 scripts/fetch-kafka.sh)" -sluice-bin bin/sluice \
	  -workdir "$${TMPDIR:-/tmp}/sluice-bench-omb" -out bench/results $(OMB_ARGS)

# Share groups (issue 17, KIP-932): one node of Apache Kafka 4.4.0 (share.version=1) and of
# sluice, a backlog on 1 and 4 partitions consumed by 4 franz-go share consumers; records/s and
# the ShareAcknowledge (FlushAcks) round trip. Writes bench/results/<date>-share.md; a few
# minutes. SHARE_ARGS passes flags to `loadgen share` (e.g. -brokers sluice -profile-seconds 10).
SHARE_ARGS ?=
.PHONY: bench-share
bench-share:
	$(GO) build -o bin/sluice ./cmd/sluice
	$(GO) build -o bin/loadgen ./bench/loadgen
	bin/loadgen share -kafka-lib "$$(KAFKA_VERSION=4.4.0 scripts/fetch-kafka.sh)" -sluice-bin bin/sluice \
	  -workdir "$${TMPDIR:-/tmp}/sluice-bench-share" -out bench/results $(SHARE_ARGS)

# Adopting real Apache Kafka 4.4 directories of gigabytes (issue 18): for each
# TOTAL_MIB:SEGMENT_MIB of MIGRATE_BIG_RUNS, one Kafka broker loaded with ProducerPerformance
# (four topics of four partitions) and a group's commits, stopped; `sluice migrate --dry-run`,
# `--dry-run --check-all-crcs` and `sluice migrate` timed; sluice started on the result and its
# log start/end offsets, committed offsets and sampled records compared with Kafka's. The times
# are the MIGRATE-BIG lines of the output (bench/results/2026-12-05-migrate.md). The default
# (4 GiB in 64 MiB segments, 1 GiB in 16 MiB, 4 GiB in 16 MiB) takes about 15 minutes and needs
# 5 GB free in MIGRATE_BIG_DIR; MIGRATE_BIG_RUNS=10240:64 for 10 GB.
MIGRATE_BIG_RUNS ?= 4096:64,1024:16,4096:16
MIGRATE_BIG_DIR ?= $${TMPDIR:-/tmp}/sluice-migrate-big
.PHONY: migrate-big
migrate-big: build
	SLUICE_BIN=$(CURDIR)/bin/sluice SLUICE_MIGRATE_BIG_RUNS=$(MIGRATE_BIG_RUNS) SLUICE_MIGRATE_BIG_DIR=$(MIGRATE_BIG_DIR) \
	  $(GO) test -tags migratebig ./compat-tests -run '^TestMigrateBig$$' -count=1 -v -timeout 3h

# The client compatibility matrix: every client and tool (franz-go, kcat, confluent-kafka-python
# from Debian and from PyPI, kafka-python from Debian and 2.x from PyPI, aiokafka, kafkajs,
# @platformatic/kafka, sarama, kafka-go, confluent-kafka-go, Rust rdkafka, Java clients, Kafka's
# CLI tools, Spring for Apache Kafka, Kafka Connect standalone and distributed, MirrorMaker 2,
# Kafka Streams) through the same scenarios
# against a real sluice, plus franz-go's live-broker suite. Installs or builds the clients
# (compat-tests/matrix/installers.go; downloads and builds cached under ~/.cache/sluice), writes
# COMPAT.md and the cell logs it links to under compat-tests/matrix/logs/. The cells run against
# one node and against a three-node RF 3 cluster (-nodes 1,3). About 30 minutes, plus the first
# Rust and Spring builds. Only install the clients: go run ./compat-tests/matrix -install REGEXP.
# Re-run some cells into the existing report with
# e.g. go run ./compat-tests/matrix -merge -franz-suite=false -scenarios '^(transactions|exactly-once)$'.
compat: deps build
	$(GO) run ./compat-tests/matrix -bin $(CURDIR)/bin/sluice -out COMPAT.md -logs compat-tests/matrix/logs

# Only the Kafka Connect rows (standalone, distributed, MirrorMaker 2 sluice to sluice and Apache
# Kafka to sluice), on one node and three, merged into COMPAT.md (the distributed and MirrorMaker
# 2 rows alone take about 12 minutes on the shared two-core machine).
compat-connect: deps build
	$(GO) run ./compat-tests/matrix -bin $(CURDIR)/bin/sluice -out COMPAT.md -logs compat-tests/matrix/logs \
	  -merge -franz-suite=false -clients '^(connect|connect-distributed|mirrormaker2|mirrormaker2-from-kafka)$$'

# Jepsen-style fault runs (as root: network namespaces): CHAOS_RUNS runs of a CHAOS_NODES-node
# cluster under kill -9, SIGSTOP and network partitions, each checked for lost, duplicated and
# reordered records; then CHAOS_TXN_RUNS transactional runs (consume-transform-produce under kill
# -9 of the transaction coordinator, the group coordinator and output leaders, checked for
# aborted reads, lost committed writes, duplicates and non-repeatable reads); writes CHAOS.md and
# the run logs under chaos/logs/ (about 90 s a run).
# make test runs the short queue and transactional runs (TestChaosShort, TestChaosTxnShort).
CHAOS_RUNS ?= 20
CHAOS_NODES ?= 3
CHAOS_ARGS ?=
CHAOS_TXN_RUNS ?= 6
chaos: build
	$(GO) run ./chaos/cmd/chaos -bin $(CURDIR)/bin/sluice -runs $(CHAOS_RUNS) -nodes $(CHAOS_NODES) -out CHAOS.md -logs chaos/logs $(CHAOS_ARGS)
	$(GO) run ./chaos/cmd/chaos -bin $(CURDIR)/bin/sluice -append -workload txn -first 100 -runs $(CHAOS_TXN_RUNS) -out CHAOS.md -logs chaos/logs

# Everything CHAOS.md reports: make chaos, then five-node runs, availability runs (the killed
# leader kept down past the session timeout) and control runs (acks=1), then transactional runs
# with a 250 ms client metadata age and a transactional control run, appended (about 55 min).
chaos-full: chaos
	$(GO) run ./chaos/cmd/chaos -bin $(CURDIR)/bin/sluice -append -first 20 -runs 4 -nodes 5 -nemesis partition-majority,partition-bridge,kill-leader,mixed -out CHAOS.md -logs chaos/logs
	$(GO) run ./chaos/cmd/chaos -bin $(CURDIR)/bin/sluice -append -first 24 -runs 5 -nemesis kill-leader-long -out CHAOS.md -logs chaos/logs
	$(GO) run ./chaos/cmd/chaos -bin $(CURDIR)/bin/sluice -append -first 29 -runs 2 -nemesis kill-leader -control-acks1 -out CHAOS.md -logs chaos/logs
	$(GO) run ./chaos/cmd/chaos -bin $(CURDIR)/bin/sluice -append -first 31 -runs 3 -nemesis kill-leader-long -metadata-min-age 250ms -out CHAOS.md -logs chaos/logs
	$(GO) run ./chaos/cmd/chaos -bin $(CURDIR)/bin/sluice -append -first 40 -runs 2 -nodes 5 -nemesis unclean-election -out CHAOS.md -logs chaos/logs
	$(GO) run ./chaos/cmd/chaos -bin $(CURDIR)/bin/sluice -append -workload txn -first 110 -runs 6 -metadata-min-age 250ms -out CHAOS.md -logs chaos/logs
	$(GO) run ./chaos/cmd/chaos -bin $(CURDIR)/bin/sluice -append -workload txn -first 120 -runs 1 -nemesis kill-txn-coordinator -metadata-min-age 250ms -control-uncommitted -out CHAOS.md -logs chaos/logs
