// Package testcluster starts real sluice processes for tests, benchmarks and the chaos harness:
// one node or an N-node cluster of combined broker+controller nodes, each with its own ports (or
// its own address), data directory and log, a static controller.quorum.voters line naming all of
// them, and a readiness wait (ApiVersions answered on the client listener).
//
// It owns the process lifecycle and nothing else: Kill (SIGKILL), Term (SIGTERM with a deadline,
// then SIGKILL), Pause (SIGSTOP) and Resume (SIGCONT), Restart on the same data directory and
// ports, and two lookups every caller needs, the active controller (DescribeQuorum on the
// controller listeners, as kafka-metadata-quorum does) and a partition's leader (Metadata).
//
// Binary locates the sluice binary once per process: SLUICE_BIN names a prebuilt one, otherwise
// cmd/sluice is built into a temporary directory (RemoveBuilt removes it).
//
// Nothing here depends on package testing, so a program (the compat matrix, loadgen, make chaos)
// uses it as a test does; compat-tests wraps it with t.Fatal helpers. Processes are started with
// Pdeathsig SIGKILL so they never outlive the process that started them.
//
// A Node's methods are safe for concurrent use. Invariant: a Node runs at most one process at a
// time; Start or Restart of a running node is an error.
package testcluster
