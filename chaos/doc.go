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
// cmd/chaos (make chaos, make chaos-full) runs many runs and writes CHAOS.md; TestChaosShort is
// the short run in make test.
package chaos
