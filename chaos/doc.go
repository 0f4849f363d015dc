// Package chaos is sluice's Jepsen-style fault harness: real sluice processes (testcluster),
// each in a network namespace of its own, under a queue workload of franz-go clients while a
// nemesis kills, pauses and partitions nodes on a schedule, then a checker over the recorded
// history.
//
// A run (Run) starts a 3- or 5-node cluster, creates one topic with replication factor 3 and
// min.insync.replicas=2, and runs for a fixed time: idempotent acks=all producers writing
// unique values, consumers in one group (committing), an assign-mode reader of every
// partition, and an observer of the group's committed offsets. The nemesis alternates a fault
// (kill -9 of a random node, of a partition's leader or of the active controller; SIGSTOP for
// longer than broker.session.timeout.ms; network partitions isolating a leader, splitting
// majority from minority, or a bridge) with a heal. At the end every fault is healed, every
// node runs again, and a final read takes every partition from its start to its end.
//
// Everything observed goes into a History (history.go): sends with their outcome, partition
// and offset; polls; committed offsets; nemesis events. Check (checker.go) is a pure function
// of a History and reports Jepsen's queue anomaly classes: lost acknowledged writes,
// duplicates, inconsistent offsets, non-monotonic sends and polls, committed offsets moving
// backwards, and unavailability (the longest time without an acknowledged produce, and the
// time from each kill -9 of a partition leader to the next acknowledged produce to a partition
// it led).
//
// The network (netns.go) is one namespace per node and one for the bridge, with 198.18.x.0/24
// addresses and no route out; the test process reaches the bridge through a veth of the root
// namespace. A partition is a pair of blackhole routes. This needs root (ip netns); stale
// namespaces of a crashed run are removed at the next start.
//
// Two variants check the harness itself: kill-leader-long keeps a killed leader down past the
// session timeout (the availability measurement: fencing by session expiry, not by the restarted
// incarnation registering), and Config.LeaderAcks (acks=1, no idempotence) is a control under
// which kill -9 of a leader loses acknowledged writes, so a run that reports none is not blind.
//
// The unclean-election nemesis (five nodes; Run sets unclean.leader.election.enable=true) shows
// the loss unclean election allows: a replica paused until fenced falls out of the ISR, the
// ISR is killed, and the stale replica, resumed, is elected and the others truncate to it.
//
// RunTxn (txn_run.go, txn_workload.go) is the transactional run: an idempotent producer feeds
// an input topic; two franz-go GroupTransactSession members of one group turn each poll into a
// transaction producing one output value per input value to an output topic and committing the
// input offsets in it; an aborter runs transactions of its own there and aborts every third on
// purpose; a read_committed reader follows the output. Its nemeses (txn_nemesis.go) kill -9
// the transaction coordinator of one of the transactional ids (FindCoordinator key type 1),
// the group coordinator (key type 0) or an output partition's leader, or SIGSTOP a
// transaction coordinator; kill-txn-coordinator-at-end kills a session's transaction
// coordinator just after the session began ending a transaction (offset commit, EndTxn). At the end, once no transaction is open (last stable offset equal
// to the high watermark everywhere), the output is read twice with read_committed and the
// group's offsets are fetched with require_stable. CheckTxn (txn_checker.go) reports Jepsen's
// transactional anomalies: aborted reads, lost committed writes, duplicates (an input
// transformed into the output more than once), non-repeatable reads (the final reads differ,
// or a polled value is not where the final read has it), partial transactions, and offsets
// committed without their outputs or outputs without their offsets; Check runs over the input
// topic as a queue.
//
// cmd/chaos (make chaos, make chaos-full; -workload txn for RunTxn) runs many runs and writes
// CHAOS.md; TestChaosShort and TestChaosTxnShort are the short queue and transactional runs
// in make test. The transactional workload aborts a transaction when any of its records failed
// to produce (kgo.AbortingFirstErrPromise), as an exactly-once application must: franz-go's
// End commits whatever was acknowledged.
package chaos
