package controller

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Elections an operator or the controller itself asks for, as Kafka's
// ReplicationControlManager does them:
//
//   - ElectLeaders (API 43), PREFERRED: a partition whose leader is its preferred replica (the
//     first of its assignment) needs none (ELECTION_NOT_NEEDED); one whose preferred replica
//     is in the ISR and active gets it as leader, with a new leader epoch; otherwise
//     PREFERRED_LEADER_NOT_AVAILABLE. Asked for every partition (a null list), the answer
//     leaves out those that needed no election.
//   - ElectLeaders UNCLEAN: a partition with a leader needs none; a leaderless one is refused
//     with ELIGIBLE_LEADERS_NOT_AVAILABLE, saying that unclean election is not supported:
//     sluice never makes an out-of-sync replica leader.
//   - Auto leader rebalance (auto.leader.rebalance.enable, Config.LeaderRebalanceInterval):
//     as Kafka's QuorumController, the active controller, once some partition's leader is not
//     its preferred replica, waits leader.imbalance.check.interval.seconds and then makes a
//     preferred election in every such partition whose preferred replica is in the ISR and
//     active, at most maxElectionsPerRebalance at a time (more: again on the next tick). Like
//     Kafka's KRaft controller it does not look at leader.imbalance.per.broker.percentage.

// Election types of ElectLeaders (Kafka's ElectionType).
const (
	ElectPreferred int8 = 0
	ElectUnclean   int8 = 1
)

// maxElectionsPerRebalance bounds one rebalance round's elections (Kafka's
// maxElectionsPerImbalance).
const maxElectionsPerRebalance = 1000

// ElectLeadersTopic names partitions of one topic for ElectLeaders.
type ElectLeadersTopic struct {
	Topic      string
	Partitions []int32
}

// ElectLeadersResult is the outcome for one topic's partitions.
type ElectLeadersResult struct {
	Topic      string
	Partitions []ElectLeadersPartitionResult
}

// ElectLeadersPartitionResult is one partition's outcome: Err is nil (elected), or a
// *kerr.Error with an optional Message.
type ElectLeadersPartitionResult struct {
	Partition int32
	Err       error
	Message   string
}

// ElectLeaders runs elections of electionType (ElectPreferred, ElectUnclean) in the given
// partitions, or in every partition when topics is nil (see the top of this file). An
// unknown election type is refused whole with INVALID_REQUEST.
func (c *Controller) ElectLeaders(ctx context.Context, electionType int8, topics []ElectLeadersTopic) ([]ElectLeadersResult, error) {
	if electionType != ElectPreferred && electionType != ElectUnclean {
		return nil, kerr.InvalidRequest
	}
	var out []ElectLeadersResult
	req := &request{plan: func(w *Image) []Record {
		out = nil
		var recs []Record
		elect := func(topic string, partition int32) ElectLeadersPartitionResult {
			res := ElectLeadersPartitionResult{Partition: partition}
			rec, verr := planElection(w, topic, partition, electionType)
			if verr != nil {
				setErr(&res.Err, &res.Message, verr)
			} else {
				recs = append(recs, rec)
			}
			return res
		}
		if topics == nil {
			for _, t := range sortedTopics(w) {
				tr := ElectLeadersResult{Topic: t.Name}
				for i := range t.Partitions {
					res := elect(t.Name, t.Partitions[i].Partition)
					if res.Err != kerr.ElectionNotNeeded {
						tr.Partitions = append(tr.Partitions, res)
					}
				}
				out = append(out, tr)
			}
			return recs
		}
		for _, t := range topics {
			tr := ElectLeadersResult{Topic: t.Topic}
			for _, p := range t.Partitions {
				tr.Partitions = append(tr.Partitions, elect(t.Topic, p))
			}
			out = append(out, tr)
		}
		return recs
	}}
	if err := c.submit(ctx, req); err != nil {
		return nil, codeOf(err)
	}
	return out, nil
}

// planElection is the record of one partition's election, or why there is none.
func planElection(w *Image, topic string, partition int32, electionType int8) (Record, *validationError) {
	t := w.Topics[topic]
	if t == nil {
		return nil, fail(kerr.UnknownTopicOrPartition, "No such topic as %s", topic)
	}
	if partition < 0 || int(partition) >= len(t.Partitions) {
		return nil, fail(kerr.UnknownTopicOrPartition, "No such partition as %s-%d", topic, partition)
	}
	p := &t.Partitions[partition]
	if electionType == ElectUnclean {
		if p.Leader != -1 {
			return nil, fail(kerr.ElectionNotNeeded, "Leader election not needed for topic partition.")
		}
		return nil, fail(kerr.EligibleLeadersNotAvailable,
			"Unclean leader election is not supported: %s-%d stays offline until a replica of its ISR %v returns.", topic, partition, p.ISR)
	}
	if len(p.Replicas) == 0 {
		return nil, fail(kerr.PreferredLeaderNotAvailable, "Partition %s-%d has no replicas.", topic, partition)
	}
	preferred := p.Replicas[0]
	if p.Leader == preferred {
		return nil, fail(kerr.ElectionNotNeeded, "Leader election not needed for topic partition.")
	}
	if rec := preferredElection(w, t.ID, p); rec != nil {
		return rec, nil
	}
	return nil, fail(kerr.PreferredLeaderNotAvailable,
		"Failed to elect the preferred leader %d of %s-%d: it is not an active member of the ISR %v.", preferred, topic, partition, p.ISR)
}

// preferredElection is the record that makes p's preferred replica its leader, or nil when it
// is the leader already or is not an active ISR member.
func preferredElection(w *Image, topic TopicID, p *PartitionInfo) *PartitionChangeRecord {
	if len(p.Replicas) == 0 {
		return nil
	}
	preferred := p.Replicas[0]
	if p.Leader == preferred || !slices.Contains(p.ISR, preferred) || !w.Brokers[preferred].active() {
		return nil
	}
	return partitionChange(topic, p, preferred, p.ISR)
}

// imbalanced reports whether some partition of im is led by another replica than its
// preferred one.
func imbalanced(im *Image) bool {
	for _, t := range im.Topics {
		for i := range t.Partitions {
			p := &t.Partitions[i]
			if len(p.Replicas) > 0 && p.Leader != p.Replicas[0] {
				return true
			}
		}
	}
	return false
}

// tickRebalance runs auto leader rebalance on the active controller (see the top of this
// file). REQUIRES: driver goroutine.
func (c *Controller) tickRebalance() {
	if !c.leaderReady || c.cfg.LeaderRebalanceInterval <= 0 {
		c.rebalanceDue = 0
		return
	}
	if c.rebalanceDue == 0 {
		im := c.image.Load()
		if im.Offset == c.rebalanceCheckedOffset {
			return
		}
		c.rebalanceCheckedOffset = im.Offset
		if imbalanced(im) {
			c.rebalanceDue = c.tickCount + max(uint64(c.cfg.LeaderRebalanceInterval/c.cfg.TickInterval), 1)
		}
		return
	}
	if c.tickCount < c.rebalanceDue {
		return
	}
	c.rebalanceDue, c.rebalanceCheckedOffset = 0, -1
	more := false
	c.handleRequest(&request{ctx: context.Background(), done: make(chan error, 1), plan: func(w *Image) []Record {
		var recs []Record
		for _, t := range sortedTopics(w) {
			for i := range t.Partitions {
				if len(recs) >= maxElectionsPerRebalance {
					more = true
					return recs
				}
				if rec := preferredElection(w, t.ID, &t.Partitions[i]); rec != nil {
					recs = append(recs, rec)
				}
			}
		}
		if len(recs) > 0 {
			c.logger.Info("auto leader rebalance: moving leadership back to preferred replicas", "partitions", len(recs))
		}
		return recs
	}})
	if more {
		c.rebalanceDue = c.tickCount + 1
	}
}
