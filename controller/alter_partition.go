package controller

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// AlterPartition is one partition of an AlterPartition call (Kafka's API 56): a partition
// leader asks to change its ISR. The controller accepts it only from the current leader at
// the current leader epoch and partition epoch, as Kafka's ReplicationControlManager does.
type AlterPartition struct {
	TopicID TopicID
	// TopicName names the topic instead when TopicID is zero (AlterPartition v0–v1).
	TopicName      string
	Partition      int32
	LeaderID       int32 // the broker asking: must be the partition's leader
	BrokerEpoch    int64 // the leader's broker epoch (KIP-903); -1 when not known
	LeaderEpoch    int32
	PartitionEpoch int32 // the partition epoch the change is based on
	NewISR         []int32
	// NewISREpochs, if set, has one entry per NewISR member: the broker epoch the leader
	// saw that member fetch with (AlterPartition v3, KIP-903), -1 where not known. A member
	// whose registration has another epoch is INELIGIBLE_REPLICA.
	NewISREpochs []int64
	// LeaderRecovering is the request's leader recovery state RECOVERING (after an unclean
	// election, elections.go); false is RECOVERED, which ends a partition's recovery. A
	// recovering leader may not grow the ISR, and a recovered partition may not go back to
	// recovering (INVALID_REQUEST), as Kafka's ReplicationControlManager refuses them.
	LeaderRecovering bool
}

// AlterPartitionResult is the outcome for one partition: Err (a *kerr.Error) or the partition
// as committed.
type AlterPartitionResult struct {
	Err       error
	Message   string
	Partition *PartitionInfo
}

// AlterPartition commits ISR changes proposed by partition leaders, through this node, which
// must be the active controller. Each partition is validated as Kafka's
// ReplicationControlManager.alterPartition does, in this order, against the working image:
//
//   - the leader's registration must have BrokerEpoch (when it is not -1), else
//     STALE_BROKER_EPOCH;
//   - the topic must exist (UNKNOWN_TOPIC_ID by ID, UNKNOWN_TOPIC_OR_PARTITION by name), and
//     the partition (UNKNOWN_TOPIC_OR_PARTITION);
//   - a leader epoch or partition epoch above the controller's means the requester saw a
//     newer controller than this one: NOT_CONTROLLER (per partition; Kafka's answer);
//   - an older leader epoch is FENCED_LEADER_EPOCH; a requester that is not the leader
//     INVALID_REQUEST (Kafka's code: the epochs matched, so the request is malformed); an
//     older partition epoch INVALID_UPDATE_VERSION;
//   - the new ISR must be non-empty, without duplicates, a subset of the replicas and hold
//     the leader, else INVALID_REQUEST; so too a request that is RECOVERING with more than
//     the leader in the new ISR, or RECOVERING for a partition that has recovered;
//   - every member of the new ISR must be an active broker (registered, unfenced, not in
//     controlled shutdown) and, where NewISREpochs gives one, at that broker epoch, else
//     INELIGIBLE_REPLICA (KIP-841, KIP-903).
//
// An accepted change is a PartitionChangeRecord with the new ISR, the request's leader
// recovery state, the ELR that ISR implies (elections.go) and the partition epoch plus one
// (leader and leader epoch unchanged); its result is the partition as that record
// committed it. A new ISR equal to the current one commits nothing and answers the current
// partition. The follower that caught up rejoins the same way: its leader proposes the
// expanded ISR. For a partition being reassigned the change may also complete the
// reassignment (reassign.go); when that moves the leadership off the requester its item is
// answered NEW_LEADER_ELECTED, as Kafka answers it, and the new state reaches it in metadata. A failure of the whole call (this node is not the active controller, the
// metadata log cannot be written) is returned as a *kerr.Error; a Go error otherwise means
// ctx ended or the controller is closed.
func (c *Controller) AlterPartition(ctx context.Context, reqs []AlterPartition) ([]AlterPartitionResult, error) {
	results := make([]AlterPartitionResult, len(reqs))
	// changed[i] is the partition as item i's record sets it; nil for items without one.
	changed := make([]*PartitionInfo, len(reqs))
	req := &request{
		plan: func(w *Image) []Record {
			clear(results)
			clear(changed)
			var recs []Record
			// Later items for the same partition must see earlier ones' changes.
			cur := w
			for i := range reqs {
				t, p, verr := validateAlterPartition(cur, &reqs[i])
				if verr != nil {
					setErr(&results[i].Err, &results[i].Message, verr)
					continue
				}
				rec := alterPartitionChange(cur, t.ID, p, reqs[i].NewISR, !reqs[i].LeaderRecovering)
				if rec == nil {
					results[i].Partition = clonePartition(p)
					continue
				}
				recs = append(recs, rec)
				cur, _ = applyRecords(cur, cur.Offset, []Record{rec})
				if rec.Leader != reqs[i].LeaderID {
					// The change completed a reassignment that moved the leadership away
					// (reassign.go): the requester learns it from the metadata, as Kafka
					// answers it.
					setErr(&results[i].Err, &results[i].Message, fail(kerr.NewLeaderElected,
						"The ISR change of %s-%d completed its reassignment; broker %d leads it now.", t.Name, p.Partition, rec.Leader))
					continue
				}
				changed[i] = clonePartition(&cur.TopicsByID[t.ID].Partitions[p.Partition])
			}
			return recs
		},
		applied: func(*Image) {
			for i, p := range changed {
				if p != nil {
					results[i].Partition = p
				}
			}
		},
	}
	if err := c.submit(ctx, req); err != nil {
		return nil, codeOf(err)
	}
	return results, nil
}

// validateAlterPartition checks one item against w (see AlterPartition for the rules) and
// returns its topic and current partition.
func validateAlterPartition(w *Image, r *AlterPartition) (*TopicInfo, *PartitionInfo, *validationError) {
	leader := w.Brokers[r.LeaderID]
	if r.BrokerEpoch >= 0 && (leader == nil || leader.Epoch != r.BrokerEpoch) {
		if leader == nil {
			return nil, nil, fail(kerr.StaleBrokerEpoch, "No broker registration found for broker %d.", r.LeaderID)
		}
		return nil, nil, fail(kerr.StaleBrokerEpoch, "Expected broker epoch %d, but got broker epoch %d.", leader.Epoch, r.BrokerEpoch)
	}
	var t *TopicInfo
	if r.TopicID.IsZero() && r.TopicName != "" {
		if t = w.Topics[r.TopicName]; t == nil {
			return nil, nil, fail(kerr.UnknownTopicOrPartition, "Topic %q does not exist.", r.TopicName)
		}
	} else if t = w.TopicsByID[r.TopicID]; t == nil {
		return nil, nil, fail(kerr.UnknownTopicID, "Topic ID %s does not exist.", r.TopicID)
	}
	if r.Partition < 0 || int(r.Partition) >= len(t.Partitions) {
		return nil, nil, fail(kerr.UnknownTopicOrPartition, "Partition %s-%d does not exist.", t.Name, r.Partition)
	}
	p := &t.Partitions[r.Partition]
	switch {
	case r.LeaderEpoch > p.LeaderEpoch:
		return nil, nil, fail(kerr.NotController, "Leader epoch %d of %s-%d is above this controller's %d.", r.LeaderEpoch, t.Name, p.Partition, p.LeaderEpoch)
	case r.PartitionEpoch > p.PartitionEpoch:
		return nil, nil, fail(kerr.NotController, "Partition epoch %d of %s-%d is above this controller's %d.", r.PartitionEpoch, t.Name, p.Partition, p.PartitionEpoch)
	case r.LeaderEpoch < p.LeaderEpoch:
		return nil, nil, fail(kerr.FencedLeaderEpoch, "The leader epoch of %s-%d is %d, not %d.", t.Name, p.Partition, p.LeaderEpoch, r.LeaderEpoch)
	case r.LeaderID != p.Leader:
		return nil, nil, fail(kerr.InvalidRequest, "Broker %d is not the leader of %s-%d; the leader is %d.", r.LeaderID, t.Name, p.Partition, p.Leader)
	case r.PartitionEpoch < p.PartitionEpoch:
		return nil, nil, fail(kerr.InvalidUpdateVersion, "The partition epoch of %s-%d is %d, not %d.", t.Name, p.Partition, p.PartitionEpoch, r.PartitionEpoch)
	}
	if verr := validateNewISR(t, p, r.NewISR); verr != nil {
		return nil, nil, verr
	}
	if r.LeaderRecovering && len(r.NewISR) > 1 {
		return nil, nil, fail(kerr.InvalidRequest, "The new ISR %v of %s-%d has more than one replica while its leader is still recovering from an unclean leader election.",
			r.NewISR, t.Name, p.Partition)
	}
	if r.LeaderRecovering && !p.LeaderRecovering {
		return nil, nil, fail(kerr.InvalidRequest, "Partition %s-%d is not recovering from an unclean leader election.", t.Name, p.Partition)
	}
	if r.NewISREpochs != nil && len(r.NewISREpochs) != len(r.NewISR) {
		return nil, nil, fail(kerr.InvalidRequest, "%d broker epochs for an ISR of %d.", len(r.NewISREpochs), len(r.NewISR))
	}
	for i, id := range r.NewISR {
		b := w.Brokers[id]
		var why string
		switch {
		case b == nil:
			why = "not registered"
		case b.InControlledShutdown:
			why = "shutting down"
		case b.Fenced:
			why = "fenced"
		case b.LogDirOffline || replicaDirOffline(b, p, id):
			why = "in an offline log directory"
		case r.NewISREpochs != nil && r.NewISREpochs[i] != -1 && r.NewISREpochs[i] != b.Epoch:
			return nil, nil, fail(kerr.IneligibleReplica, "Broker %d in the new ISR %v of %s-%d has broker epoch %d, not %d.",
				id, r.NewISR, t.Name, p.Partition, b.Epoch, r.NewISREpochs[i])
		default:
			continue
		}
		return nil, nil, fail(kerr.IneligibleReplica, "Broker %d in the new ISR %v of %s-%d is %s.", id, r.NewISR, t.Name, p.Partition, why)
	}
	return t, p, nil
}

// validateNewISR checks that isr is a non-empty set of p's replicas holding its leader.
func validateNewISR(t *TopicInfo, p *PartitionInfo, isr []int32) *validationError {
	if len(isr) == 0 {
		return fail(kerr.InvalidRequest, "The new ISR of %s-%d is empty.", t.Name, p.Partition)
	}
	for i, id := range isr {
		if !slices.Contains(p.Replicas, id) {
			return fail(kerr.InvalidRequest, "The new ISR %v of %s-%d holds %d, which is not a replica (replicas %v).", isr, t.Name, p.Partition, id, p.Replicas)
		}
		if slices.Contains(isr[:i], id) {
			return fail(kerr.InvalidRequest, "The new ISR %v of %s-%d holds %d twice.", isr, t.Name, p.Partition, id)
		}
	}
	if !slices.Contains(isr, p.Leader) {
		return fail(kerr.InvalidRequest, "The new ISR %v of %s-%d does not hold its leader %d.", isr, t.Name, p.Partition, p.Leader)
	}
	return nil
}

func clonePartition(p *PartitionInfo) *PartitionInfo {
	c := *p
	c.Replicas, c.ISR = slices.Clone(p.Replicas), slices.Clone(p.ISR)
	c.ELR, c.LastKnownELR = slices.Clone(p.ELR), slices.Clone(p.LastKnownELR)
	return &c
}
