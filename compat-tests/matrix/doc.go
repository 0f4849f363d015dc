// Command matrix is sluice's client compatibility matrix. It starts one real bin/sluice process
// on free ports with a temporary data directory, puts a recording proxy in front of it (sluice
// advertises the proxy, so every client connection passes through it), and drives each client
// and tool through the same scenarios. It writes COMPAT.md: one row per client or tool, one
// column per scenario, each cell pass, fail or n/a with a link to its log, plus the request
// versions each client sent that are older than Apache Kafka 4's floor (KIP-896).
//
// Scenario data conventions shared by every client (Go code and the scripts under clients/):
//   - seeded records: key "k<i>", value "v<i>", headers h="x<i>" and trace="s<i>", timestamp
//     TS_BASE+i*1000 ms, one partition;
//   - records a client produces: key "ck<i>" (or "k<i>" for codec scenarios), value "c<i>"
//     (or payload(i), "v<i>-" and 100 "x", for codec scenarios), headers h="y<i>" and trace="t<i>";
//   - consume-end: the harness keeps producing "tail-<n>" records while the cell runs; the
//     client positions at the end and its first record must be a tail record.
//
// Clients are plain functions (Go clients) or programs (kcat, Python, Node, Java, Kafka's CLI
// tools) started with a deadline; a cell passes when the client exits cleanly and the harness's
// own check of the broker state (with franz-go) agrees. A scenario sluice does not support is a
// failing cell; one a client cannot express is n/a with the reason.
//
// TestQuickMatrix runs one scenario per client family and is part of `go test ./...`; the full
// matrix is `make compat` (go run ./compat-tests/matrix -out COMPAT.md).
package main
