// Package replica owns one partition replica's offsets and replication state, and the
// purgatory of delayed operations that wait on them.
//
// # Offsets
//
// A Replica owns the partition's logstore.Log and is the only writer of its offsets: the log
// start offset, the high watermark (HW), the last stable offset (LSO) and the log end offset
// (LEO). Invariant: logStart ≤ LSO ≤ HW ≤ LEO. Until transactions exist the LSO is the HW.
// Every mutation — an append as leader or follower, truncation, retention, DeleteRecords, a
// role change, a follower's fetch — happens under the replica's lock and ends by publishing
// one Snapshot; readers (fetch, ListOffsets, Metadata) take Snapshot without the lock and see
// the offsets of one instant. Retention and DeleteRecords never move the log start past the
// HW, as Kafka's do.
//
// # The high-watermark checkpoint
//
// The HW is not in the log. It is saved per log directory in replication-offset-checkpoint
// (Kafka's file and format: "0", a count, then "topic partition offset" lines), written by
// the broker every replica.high.watermark.checkpoint.interval.ms and at clean shutdown. At
// open a replica takes its checkpointed HW clamped to [log start, LEO] (the log start when it
// has none): the clamp only matters when the log lost records after a crash, which the HW
// cannot then claim. A restart therefore never lowers the HW below the checkpoint on a log that
// still has those records. What a restarted replica does next is Kafka's: as a leader whose
// ISR is only itself it moves the HW to its LEO at once — every record in its log is on every
// ISR member, including records appended (acks=0/1) after the last checkpoint; with other ISR
// members it keeps the checkpointed HW until they fetch; as a follower it takes the leader's HW
// with each fetch. The checkpoint is therefore a lower bound the HW resumes from, never a
// promise that moves it back.
//
// # Roles
//
// BecomeLeader(epoch, ISR, replicas) and BecomeFollower(epoch, leader) apply the metadata
// image; an older epoch is refused (epochs only grow). AppendAsLeader checks leadership, the
// caller's epoch and min.insync.replicas (acks=all) under the lock the append holds, so a role
// change cannot slip between check and append: once BecomeFollower returns, a deposed leader
// appends nothing more. Appends carry an Origin (client, coordinator, replication); the
// client-only rules (Kafka's LogValidator checks on timestamps, sizes, internal topics) are the
// broker's, applied once on the client path before AppendAsLeader.
//
// As leader the replica keeps each follower's LEO, log start and last caught-up time
// (UpdateFollowerFetch)
// and moves the HW to the smallest LEO over the ISR, never back, and not at all while the
// committed ISR is smaller than min.insync.replicas capped at the replication factor
// (Options.MinInsync: Kafka 4.x's strict min ISR, KIP-966), so replicas that leave a short
// ISR have every record below the HW and the controller may elect them (eligible leader
// replicas). ProposeRecovered proposes the ISR unchanged for a leader elected uncleanly, which
// the broker sends as AlterPartition RECOVERED. ISR changes are decisions, not
// actions: UpdateFollowerFetch proposes adding a follower that reached the HW and the start of
// the leader's epoch; MaybeShrinkISR proposes removing followers not caught up for
// replica.lag.time.max.ms on the injected Clock. The caller sends a proposal to the controller
// (AlterPartition; the broker's controllerAlterPartition) and the committed ISR comes back as a
// BecomeLeader at the same epoch. While a proposal is pending no other is made, and the HW is
// computed over the committed and proposed ISR together, so it never gets ahead of either.
//
// # Delayed operations
//
// Purgatory holds operations keyed by partition — long-poll fetches, acks=all produces
// (AckWait: answered once the HW passes the batch's last offset, with
// NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR is then below min.insync.replicas,
// NOT_LEADER_OR_FOLLOWER if leadership moved, REQUEST_TIMED_OUT at the produce timeout),
// DeleteRecords (DeleteRecordsWait: answered once the low watermark — the smallest log start
// over the leader and the followers on live brokers, as each last reported it in a fetch —
// reaches the offset the leader moved its log start to, as Kafka's DelayedDeleteRecords). The
// broker wakes a partition's key from the replica's OnChange; one worker evaluates woken
// operations; timeouts run on the injected Clock.
//
// # Invariants
//
// Built with -tags invariants, every published snapshot and role change is checked: offsets in
// order, epochs only growing, ISR ⊆ replicas and the leader in its ISR. A violation panics.
package replica
