// Command matrix is sluice's client compatibility matrix. It starts one real bin/sluice process
// on free ports with a temporary data directory, puts a recording proxy in front of it (sluice
// advertises the proxy, so every client connection passes through it), and drives each client
// and tool through the same scenarios. It writes COMPAT.md: one row per client or tool, one
// column per scenario, each cell pass, fail or n/a with a link to its log, plus the request
// versions each client sent that are older than Apache Kafka 4's floor (KIP-896).
//
// Scenario data conventions shared by every client (Go code and the scripts under clients/):
//
//   - seeded records: key "k<i>", value "v<i>", headers h="x<i>" and trace="s<i>", timestamp
//     TS_BASE+i*1000 ms, one partition;
//
//   - records a client produces: key "ck<i>" (or "k<i>" for codec scenarios), value "c<i>"
//     (or payload(i), "v<i>-" and 100 "x", for codec scenarios), headers h="y<i>" and trace="t<i>";
//
//   - consume-end: the harness keeps producing "tail-<n>" records while the cell runs; the
//     client positions at the end and its first record must be a tail record.
//
//   - transactions: the client commits ck0..ck2=c0..c2, aborts ak0..ak2=a0..a2 and commits
//     ck3..ck5=c3..c5 with transactional id <topic>-txn; the harness checks that read_committed
//     sees c0..c5 exactly once and no aborted record, that the aborted records are in the log
//     (read_uncommitted), and that the markers are commit, abort, commit;
//
//   - exactly-once: the client first aborts a transaction that writes "aborted" records to
//     <topic>-out and (where the client can) the group's offset 3, then consumes the seeded
//     records in the group with read_committed from its committed position and writes
//     k<i>=out-v<i> with the offsets in transactions; the harness checks that read_committed
//     sees out-v0..out-v9 exactly once, the aborted records only uncommitted, and offset 10.
//
//   - share (KIP-932, share.go): the harness sets share.auto.offset.reset=earliest on the group
//     (a GROUP config); two share consumers of the client release v3 once, reject v7 and
//     accept the rest, printing one "SHARE <consumer> <offset> <value> <delivery count> <ack>"
//     line per delivery; the harness checks that ledger (each record accepted exactly once, v3
//     back with delivery count 2, v7 never back) and that the group's share-partition start
//     offset reaches 10. A client without a share consumer is n/a (Client.Share nil).
//
// Clients are plain functions (Go clients) or programs (kcat, Python, Node, Java, Kafka's CLI
// tools, Kafka Connect standalone and distributed, MirrorMaker 2's connectors in a Connect worker
// replicating to a second sluice the cell starts and from an Apache Kafka the cell starts, a Spring Boot app, and compiled programs for
// confluent-kafka-go and Rust's rdkafka) started with a deadline. What does not come with the machine is installed or built by
// the client's Prepare step (installers.go) from its registry into the cache ($SLUICE_CACHE or
// ~/.cache/sluice): a Python venv (confluent-kafka, kafka-python 2.x, aiokafka), npm prefixes,
// go build of clients/ckgo (a module of its own, with cgo), cargo build of clients/rust, mvn
// package of clients/spring, fetch-kafka.sh for Kafka's and Connect's jars; -install REGEXP runs
// only that step; a cell passes when the client exits cleanly and the harness's
// own check of the broker state (with franz-go) agrees. A scenario sluice does not support is a
// failing cell; one a client cannot express is n/a with the reason.
//
// The cells run against one sluice process and again against a three-node cluster
// (replication factor 3 for the harness's and the internal topics, min.insync.replicas 2, each
// node behind its own proxy and advertising it); -nodes picks the sizes, -scenarios and
// -clients filter the cells, and -merge replaces only the cells run now in the results.json of
// an earlier run (so a scenario can be re-run without the whole matrix).
//
// The security section (security.go) gives the broker SSL (mTLS), SASL_SSL (SCRAM-SHA-512)
// and SASL_PLAINTEXT (PLAIN, OAUTHBEARER) listeners next to PLAINTEXT when a security scenario
// (sec-*) is selected; each client produces and consumes five records over one of them and the
// harness checks the records over PLAINTEXT and that the listener refuses a bad credential.
// -scenarios '^sec-' runs only that section.
//
// TestQuickMatrix runs one scenario per client family and is part of `go test ./...`; the full
// matrix is `make compat` (go run ./compat-tests/matrix -out COMPAT.md).
package main
