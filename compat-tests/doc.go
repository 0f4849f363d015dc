// Package compattests drives a real sluice process with real Kafka clients and tools (kcat,
// Apache Kafka's Java tools, confluent-kafka-python, kafka-python, franz-go) and with raw TCP
// sockets, and asserts what a user of those clients would observe.
//
// The harness (harness_test.go) builds cmd/sluice once per test binary run, starts it on a free
// 127.0.0.1 port with a fresh data directory, and waits until the port answers a Kafka
// ApiVersions request. Every process it starts is stopped in t.Cleanup, and the broker's log is
// printed into the test output when the test failed. Tests never sleep to let things settle:
// they wait on a condition with a deadline.
//
// Clients the tests need are installed by scripts/install-test-deps.sh; a missing client fails
// the test (it is never skipped). SLUICE_BIN names a prebuilt binary to use instead of building.
//
// Files: harness_test.go (process control, raw framing), kcat_test.go (librdkafka's kcat),
// javatools_test.go (Apache Kafka's TopicCommand, ConsoleProducer, ConsoleConsumer,
// GetOffsetShell), python_test.go with testdata/*.py (confluent-kafka-python, kafka-python),
// durability_test.go (kill -9 under idempotent acks=all load), badinput_test.go (malformed and
// hostile input on raw sockets), limits_test.go (request memory bound under a slowloris,
// connection quotas), shutdown_test.go (SIGHUP, bounded shutdown), security_test.go (SSL, mTLS,
// SASL PLAIN and SCRAM with kcat, franz-go, the Java console tools and confluent-kafka-python;
// bad input on secured listeners; certificates made by internal/testcerts),
// reassign_test.go
// (kafka-reassign-partitions --generate/--execute/--verify/--cancel and --throttle on three
// nodes under an acks=all producer), under_replicated_test.go (kafka-topics
// --under-replicated-partitions and --under-min-isr-partitions with a SIGSTOPped follower,
// kafka-log-dirs).,
// metrics_test.go
// (/healthz, /readyz, /metrics parsed by Prometheus's text parser under load, group lag),
// metrics_cluster_test.go (readiness and under-replicated partitions across a broker's death),
// cli_test.go (the sluice admin CLI against sluice and against Apache Kafka from the cached jars). Everything is in _test.go files; this package has no API.
package compattests
