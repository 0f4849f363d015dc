package controller

// Partition reassignment, as Kafka's ReplicationControlManager, PartitionReassignmentReplicas,
// PartitionReassignmentRevert and PartitionChangeBuilder do it (KIP-455):
//
//   - AlterPartitionReassignments with a target replica list starts a reassignment: the
//     partition's replicas become target ∪ current, the target first, in the target's order,
//     then the current replicas not in the target; AddingReplicas = target − current,
//     RemovingReplicas = current − target. Leader and ISR stay. One PartitionChangeRecord
//     carries all of it, with the partition epoch plus one. A reassignment of a partition that
//     is being reassigned replaces the old one, from the current (merged) replica list.
//   - The brokers reconcile: a new replica opens an empty log and fetches from the leader; the
//     leader proposes it into the ISR through AlterPartition once it has caught up.
//   - A reassignment is complete once the ISR without the removing replicas is not empty and
//     holds every replica of the target: then the replicas become the target, the ISR loses
//     the removing replicas, adding and removing are cleared. This is checked on every change
//     that builds a partition's next state here: the AlterPartition that adds the last adding
//     replica, or the reassignment itself when nothing needs to catch up (a reorder, a
//     replication factor decrease).
//   - Leadership, on every such change: the current leader stays if it is in the new ISR and
//     active; otherwise the first replica of the new assignment in the new ISR and active
//     leads (so a removed leader hands over to the first target replica in sync), or none.
//     The leader epoch grows when the leader changes, and also when the assignment loses a
//     replica (Kafka's triggerLeaderEpochBumpForReplicaReassignmentIfNeeded), so the removed
//     replica's fetches are fenced.
//   - A null replica list cancels: NO_REASSIGNMENT_IN_PROGRESS when none is in progress;
//     otherwise the replicas lose the adding ones (back to the original list) and so does the
//     ISR. If the ISR would then be empty the revert would need an unclean election, which
//     this controller never does: INVALID_REPLICA_ASSIGNMENT.
//   - Target lists are checked as Kafka's validateManualPartitionAssignment does, in broker ID
//     order: not empty, every broker registered, none twice (INVALID_REPLICA_ASSIGNMENT).
//     With AllowReplicationFactorChange false (v1, KIP-860) a target whose length differs from
//     the original replica count is INVALID_REPLICATION_FACTOR. An unknown topic or partition
//     is UNKNOWN_TOPIC_OR_PARTITION.
//
// The broker removes the log of a replica it no longer hosts once an image without it is
// applied (broker.reconcile), which is what Kafka's StopReplica with deletion did.

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Reassignment is one partition of an AlterPartitionReassignments call.
type Reassignment struct {
	Topic     string
	Partition int32
	// Replicas is the target replica list; nil cancels the partition's reassignment.
	Replicas []int32
}

// ReassignmentResult is the outcome for one partition.
type ReassignmentResult struct {
	Err     error // *kerr.Error or nil
	Message string
}

func (r *ReassignmentResult) errFields() (*error, *string) { return &r.Err, &r.Message }

// AlterPartitionReassignments starts or cancels reassignments (see the top of this file),
// through this node, which must be the active controller. Items are planned in order, each
// seeing the changes of those before it; the records of all accepted items are one entry.
func (c *Controller) AlterPartitionReassignments(ctx context.Context, reqs []Reassignment, allowReplicationFactorChange bool) ([]ReassignmentResult, error) {
	results := make([]ReassignmentResult, len(reqs))
	req := &request{
		plan: func(w *Image) []Record {
			clear(results)
			var recs []Record
			cur := w
			for i := range reqs {
				rec, verr := planReassignment(cur, &reqs[i], allowReplicationFactorChange)
				if max := c.cfg.MaxReplicationFactor; verr == nil && max > 0 && len(reqs[i].Replicas) > max {
					verr = fail(kerr.InvalidReplicationFactor, "Replication factor %d is above this cluster's limit of %d.", len(reqs[i].Replicas), max)
				}
				if verr == nil && len(recs)+1 > maxRecordsPerRequest {
					verr = fail(kerr.PolicyViolation, "Unable to perform excessively large batch operation.")
				}
				if verr != nil {
					setErr(&results[i].Err, &results[i].Message, verr)
					continue
				}
				if rec == nil {
					continue // already the partition's state: nothing to commit
				}
				recs = append(recs, rec)
				cur, _ = applyRecords(cur, cur.Offset, []Record{rec})
			}
			return recs
		},
	}
	return submitEach(ctx, c, req, results, failUnfailed)
}

// planReassignment validates one item against w and returns its record (nil: no change).
func planReassignment(w *Image, r *Reassignment, allowReplicationFactorChange bool) (*PartitionChangeRecord, *validationError) {
	t := w.Topics[r.Topic]
	if t == nil {
		return nil, fail(kerr.UnknownTopicOrPartition, "Unable to find a topic named %s.", r.Topic)
	}
	if r.Partition < 0 || int(r.Partition) >= len(t.Partitions) {
		return nil, fail(kerr.UnknownTopicOrPartition, "Unable to find partition %s:%d.", r.Topic, r.Partition)
	}
	p := &t.Partitions[r.Partition]
	if r.Replicas == nil {
		return planCancelReassignment(w, t, p)
	}
	if verr := validateReassignmentTarget(w, r.Replicas); verr != nil {
		return nil, verr
	}
	if !allowReplicationFactorChange {
		if original := originalReplicas(p); len(original) != len(r.Replicas) {
			return nil, fail(kerr.InvalidReplicationFactor, "The replication factor is changed from %d to %d", len(original), len(r.Replicas))
		}
	}
	target := reassignmentTarget(p.Replicas, r.Replicas)
	target.isr = slices.Clone(p.ISR)
	return buildPartitionChange(w, t.ID, p, target), nil
}

// planCancelReassignment reverts p's reassignment (Kafka's PartitionReassignmentRevert).
func planCancelReassignment(w *Image, t *TopicInfo, p *PartitionInfo) (*PartitionChangeRecord, *validationError) {
	if !p.Reassigning() {
		return nil, fail(kerr.NoReassignmentInProgress, "%s", kerr.NoReassignmentInProgress.Message)
	}
	isr := without(p.ISR, p.AddingReplicas)
	if len(isr) == 0 {
		return nil, fail(kerr.InvalidReplicaAssignment, "Unable to revert partition assignment for %s:%d because it would require an unclean leader election.", t.Name, p.Partition)
	}
	return buildPartitionChange(w, t.ID, p, partitionTarget{isr: isr, replicas: originalReplicas(p)}), nil
}

// validateReassignmentTarget checks a target replica list as Kafka's
// validateManualPartitionAssignment: in broker ID order, each registered and none twice.
func validateReassignmentTarget(w *Image, replicas []int32) *validationError {
	if len(replicas) == 0 {
		return fail(kerr.InvalidReplicaAssignment, "The manual partition assignment includes an empty replica list.")
	}
	sorted := slices.Clone(replicas)
	slices.Sort(sorted)
	for i, id := range sorted {
		if w.Brokers[id] == nil {
			return fail(kerr.InvalidReplicaAssignment, "The manual partition assignment includes broker %d, but no such broker is registered.", id)
		}
		if i > 0 && sorted[i-1] == id {
			return fail(kerr.InvalidReplicaAssignment, "The manual partition assignment includes the broker %d more than once.", id)
		}
	}
	return nil
}

// partitionTarget is the state a change asks for, before the reassignment is completed and
// a leader elected (Kafka's PartitionChangeBuilder targets).
type partitionTarget struct {
	isr, replicas, adding, removing []int32
}

// reassignmentTarget is the assignment of a reassignment from current to target (Kafka's
// PartitionReassignmentReplicas): the target, then current − target; adding = target −
// current and removing = current − target, both sorted.
func reassignmentTarget(current, target []int32) partitionTarget {
	removing := without(current, target)
	adding := without(target, current)
	slices.Sort(removing)
	slices.Sort(adding)
	replicas := append(slices.Clone(target), removing...)
	return partitionTarget{replicas: replicas, adding: adding, removing: removing}
}

// originalReplicas is p's assignment before its reassignment: the replicas without the adding
// ones.
func originalReplicas(p *PartitionInfo) []int32 { return without(p.Replicas, p.AddingReplicas) }

// completeReassignment returns the target with the reassignment completed, if it can be (see
// the top of this file): ok is false while it is still in progress.
func completeReassignment(t partitionTarget) (replicas, isr []int32, ok bool) {
	if len(t.adding) == 0 && len(t.removing) == 0 {
		return nil, nil, false
	}
	isr = without(t.isr, t.removing)
	replicas = without(t.replicas, t.removing)
	if len(isr) == 0 || len(replicas) == 0 {
		return nil, nil, false
	}
	for _, r := range replicas {
		if !slices.Contains(isr, r) {
			return nil, nil, false
		}
	}
	return replicas, isr, true
}

// buildPartitionChange is the record that takes p to target (Kafka's
// PartitionChangeBuilder.build, elections.go): the reassignment completed if it can be, a
// leader elected if the current one cannot stay, the epochs raised. nil when nothing changes.
func buildPartitionChange(w *Image, topic TopicID, p *PartitionInfo, target partitionTarget) *PartitionChangeRecord {
	return buildChange(w, topic, p, target, changeOptions{})
}

// alterPartitionChange is the record of an accepted AlterPartition giving p the ISR isr and
// the leader recovery state recovered. A partition being reassigned may see its reassignment
// completed by it: the ISR change that adds its last adding replica completes the
// reassignment (and may move its leadership).
func alterPartitionChange(w *Image, topic TopicID, p *PartitionInfo, isr []int32, recovered bool) *PartitionChangeRecord {
	target := currentTarget(p)
	target.isr = slices.Clone(isr)
	return buildChange(w, topic, p, target, changeOptions{recovered: &recovered})
}

// OngoingReassignment is one partition being reassigned (ListPartitionReassignments).
type OngoingReassignment struct {
	Partition                                  int32
	Replicas, AddingReplicas, RemovingReplicas []int32
}

// TopicReassignments are a topic's partitions being reassigned, by partition number.
type TopicReassignments struct {
	Topic      string
	Partitions []OngoingReassignment
}

// ListReassignments answers ListPartitionReassignments from im as Kafka's controller does:
// with topics nil every partition being reassigned, by topic name; otherwise the named
// partitions that are being reassigned (unknown topics and partitions are left out). Topics
// without any are left out.
func ListReassignments(im *Image, topics map[string][]int32) []TopicReassignments {
	var out []TopicReassignments
	add := func(t *TopicInfo, partitions []int32) {
		tr := TopicReassignments{Topic: t.Name}
		for _, n := range partitions {
			if n < 0 || int(n) >= len(t.Partitions) || !t.Partitions[n].Reassigning() {
				continue
			}
			p := &t.Partitions[n]
			tr.Partitions = append(tr.Partitions, OngoingReassignment{Partition: n, Replicas: slices.Clone(p.Replicas),
				AddingReplicas: slices.Clone(p.AddingReplicas), RemovingReplicas: slices.Clone(p.RemovingReplicas)})
		}
		if len(tr.Partitions) > 0 {
			out = append(out, tr)
		}
	}
	if topics == nil {
		for _, t := range sortedTopics(im) {
			all := make([]int32, len(t.Partitions))
			for i := range all {
				all[i] = int32(i)
			}
			add(t, all)
		}
		return out
	}
	names := make([]string, 0, len(topics))
	for n := range topics {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if t := im.Topics[n]; t != nil {
			add(t, topics[n])
		}
	}
	return out
}

// checkAssignment checks a record's assignment: replicas not empty and without duplicates,
// adding and removing subsets of them and disjoint.
func checkAssignment(replicas, adding, removing []int32) error {
	if len(replicas) == 0 {
		return errors.New("empty replica list")
	}
	for i, r := range replicas {
		if slices.Contains(replicas[:i], r) {
			return fmt.Errorf("replica %d twice in %v", r, replicas)
		}
	}
	for _, r := range adding {
		if !slices.Contains(replicas, r) || slices.Contains(removing, r) {
			return fmt.Errorf("adding replica %d not in %v or also removed (%v)", r, replicas, removing)
		}
	}
	for _, r := range removing {
		if !slices.Contains(replicas, r) {
			return fmt.Errorf("removing replica %d not in %v", r, replicas)
		}
	}
	return nil
}

// without returns a's elements that are not in b, in a's order.
func without(a, b []int32) []int32 {
	out := make([]int32, 0, len(a))
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// cloneNonEmpty clones s, with nil for an empty list (so images and records compare equal
// whether a list was never set or was cleared).
func cloneNonEmpty(s []int32) []int32 {
	if len(s) == 0 {
		return nil
	}
	return slices.Clone(s)
}
