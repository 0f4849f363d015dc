package controller

import (
	"context"
	"slices"
	"strconv"
	"strings"

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
//   - ElectLeaders UNCLEAN: a partition with a leader needs none; a leaderless one elects
//     from its ISR or ELR if it can, else any live replica (an unclean election, below),
//     whatever unclean.leader.election.enable says; with no live replica it is
//     ELIGIBLE_LEADERS_NOT_AVAILABLE.
//   - Unclean elections on their own (tickUnclean): every leaderless partition of a topic
//     with unclean.leader.election.enable on elects any live replica once one is active, on
//     the active controller's next rebalance tick, as Kafka's controller runs them
//     periodically, so turning the config on brings offline partitions back.
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
		rec := buildChange(w, t.ID, p, currentTarget(p), changeOptions{election: electionUnclean})
		if rec == nil || rec.Leader == -1 {
			return nil, fail(kerr.EligibleLeadersNotAvailable,
				"No replica of %s-%d (replicas %v) is alive to lead it.", topic, partition, p.Replicas)
		}
		return rec, nil
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
	if p.Leader == preferred || !slices.Contains(p.ISR, preferred) || !w.replicaActive(p, preferred) {
		return nil
	}
	return buildChange(w, topic, p, currentTarget(p), changeOptions{election: electionPreferred})
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
	c.tickUnclean()
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

// Partition changes, as Kafka 4.x's PartitionChangeBuilder makes them with eligible leader
// replicas (KIP-966, the eligible.leader.replicas.version feature at level 1, Kafka's default
// for new clusters since 4.1; Config.EligibleLeaderReplicas) and unclean.leader.election.enable:
//
//   - ELR tracking: when the new ISR is smaller than the topic's min.insync.replicas, the
//     replicas of the current ISR (and the current ELR) that are not in the new ISR become
//     the ELR, except a replica whose broker came back from an unclean shutdown (below).
//     With ELR on, a leader's HW only advances while its ISR is at least min.insync.replicas
//     (broker/replica), so these replicas hold every committed record.
//     An ISR of at least min.insync.replicas clears the ELR and the last known ELR.
//   - Unclean shutdown (KIP-966): a broker that registers a new incarnation without proving a
//     clean shutdown (its PreviousBrokerEpoch is not the epoch it last had) leaves every ISR
//     and ELR it is in (uncleanShutdownChange); the last known ELR keeps it.
//   - With ELR on the ISR may become empty (the last ISR member fenced): the partition is
//     then leaderless and its last leader is kept as LastKnownELR. With ELR off the last ISR
//     member stays in the ISR instead, so it remembers who has the data.
//   - Election (the current leader stays if it is still an acceptable ISR member): the first
//     replica in assignment order that is acceptable (active, or being unfenced) and in the
//     new ISR, or, with the ISR empty, in the ELR; one elected from the ELR becomes the ISR
//     alone and leaves the ELR. Failing that, with ISR and ELR empty, the last known leader
//     if it is acceptable (Kafka's balanced recovery, an unclean election). Failing that,
//     with unclean.leader.election.enable (or ElectLeaders UNCLEAN), the first acceptable
//     replica at all: an unclean election, which may lose acknowledged records.
//   - An unclean election sets the ISR to the new leader alone, clears ELR and last known
//     ELR and puts the partition in leader recovery (RECOVERING); its leader tells the
//     controller it recovered with an AlterPartition whose state is RECOVERED, and until
//     then the ISR may not grow (INVALID_REQUEST).
//   - The leader epoch grows when the leader changes or replicas are removed, the partition
//     epoch with every change; a change that changes nothing is no record.

// electionDefaults are the static (server.properties) election configs of the controller
// that plans a change; topic configs and cluster-wide dynamic configs in the image come first.
type electionDefaults struct {
	elr     bool  // eligible.leader.replicas.version = 1
	minISR  int32 // min.insync.replicas
	unclean bool  // unclean.leader.election.enable
}

// elrEnabled reports whether changes planned on im track eligible leader replicas.
func (im *Image) elrEnabled() bool { return im.defaults != nil && im.defaults.elr }

// MinInsyncReplicas is the topic's effective min.insync.replicas: its own config, else the
// cluster-wide dynamic one, else the controller's static one (1 without any).
func (im *Image) MinInsyncReplicas(topic string) int32 {
	if v, ok := im.topicOrClusterConfig(topic, "min.insync.replicas"); ok {
		if n, err := strconv.ParseInt(v, 10, 32); err == nil && n >= 1 {
			return int32(n)
		}
	}
	if im.defaults != nil && im.defaults.minISR >= 1 {
		return im.defaults.minISR
	}
	return 1
}

// uncleanElectionEnabled is the topic's effective unclean.leader.election.enable, resolved as
// MinInsyncReplicas is (false without any).
func (im *Image) uncleanElectionEnabled(topic string) bool {
	if v, ok := im.topicOrClusterConfig(topic, "unclean.leader.election.enable"); ok {
		if b, err := strconv.ParseBool(strings.TrimSpace(v)); err == nil {
			return b
		}
	}
	return im.defaults != nil && im.defaults.unclean
}

func (im *Image) topicOrClusterConfig(topic, key string) (string, bool) {
	if t := im.Topics[topic]; t != nil {
		if v, ok := t.Configs[key]; ok {
			return v, true
		}
	}
	v, ok := im.BrokerConfigs[""][key]
	return v, ok
}

// electionKind is PartitionChangeBuilder's Election.
type electionKind int8

const (
	electionOnline    electionKind = iota // keep the partition online from the ISR (or ELR)
	electionPreferred                     // the preferred replica if it is in the ISR
	electionUnclean                       // as online, else any acceptable replica
)

// changeOptions are the optional parts of a partition change.
type changeOptions struct {
	election electionKind
	// acceptable reports whether a replica may lead; nil: an active broker.
	acceptable func(int32) bool
	// recovered, when set, is the leader recovery state an AlterPartition asks for: true is
	// RECOVERED, false RECOVERING.
	recovered *bool
	// uncleanShutdown are replicas whose broker came back from an unclean shutdown (KIP-966,
	// membership.go): they may not stay in or enter the ELR (their unflushed tail may be gone).
	uncleanShutdown []int32
}

// buildChange is the record that takes p of topic to target, as described above; nil when
// nothing changes.
func buildChange(w *Image, topic TopicID, p *PartitionInfo, target partitionTarget, o changeOptions) *PartitionChangeRecord {
	if replicas, isr, ok := completeReassignment(target); ok {
		target = partitionTarget{isr: isr, replicas: replicas}
	}
	acceptable := o.acceptable
	if acceptable == nil {
		acceptable = func(r int32) bool { return w.replicaActive(p, r) }
	}
	name := ""
	if t := w.TopicsByID[topic]; t != nil {
		name = t.Name
	}
	elr := w.elrEnabled()
	isr := slices.Clone(target.isr)
	if len(isr) == 0 && !elr {
		isr = slices.Clone(p.ISR) // the last ISR member stays: it has all the data
	}
	var targetELR []int32
	if elr && int32(len(isr)) < w.MinInsyncReplicas(name) {
		for _, r := range slices.Concat(p.ELR, p.ISR) {
			if !slices.Contains(isr, r) && !slices.Contains(targetELR, r) && slices.Contains(target.replicas, r) &&
				!slices.Contains(o.uncleanShutdown, r) {
				targetELR = append(targetELR, r)
			}
		}
		slices.Sort(targetELR)
	}
	valid := func(r int32) bool {
		return (slices.Contains(isr, r) || (len(isr) == 0 && slices.Contains(targetELR, r))) && acceptable(r)
	}
	leader, unclean := int32(-1), false
	pick := func(candidates []int32) bool {
		for _, r := range candidates {
			if valid(r) {
				leader = r
				return true
			}
		}
		return false
	}
	lastKnown := func() bool {
		if elr && len(isr) == 0 && len(targetELR) == 0 && len(p.LastKnownELR) == 1 && acceptable(p.LastKnownELR[0]) {
			leader, unclean = p.LastKnownELR[0], true
			return true
		}
		return false
	}
	switch {
	case o.election == electionPreferred && len(target.replicas) > 0 && valid(target.replicas[0]):
		leader = target.replicas[0]
	case p.Leader >= 0 && valid(p.Leader):
		leader = p.Leader
	case pick(target.replicas), lastKnown():
	case o.election == electionUnclean:
		for _, r := range target.replicas {
			if acceptable(r) {
				leader, unclean = r, true
				break
			}
		}
	}
	newLeader := leader
	recovering := p.LeaderRecovering
	if newLeader != p.Leader {
		if slices.Contains(targetELR, newLeader) {
			isr = []int32{newLeader}
			targetELR = slices.DeleteFunc(targetELR, func(r int32) bool { return r == newLeader })
		}
		if unclean {
			isr = []int32{newLeader}
			recovering = true
		}
	}
	if unclean || !elr {
		targetELR = nil
	}
	lastKnownELR := cloneNonEmpty(p.LastKnownELR)
	if elr {
		switch {
		case len(isr) == 0 && len(p.ISR) > 0 && p.Leader >= 0 && !slices.Equal(p.LastKnownELR, []int32{p.Leader}):
			lastKnownELR = []int32{p.Leader} // the partition becomes leaderless: remember its last leader
		case newLeader >= 0:
			lastKnownELR = nil
		}
	}
	if o.recovered != nil && !unclean {
		recovering = !*o.recovered
	}
	assignmentChanged := !slices.Equal(target.replicas, p.Replicas) || !slices.Equal(target.adding, p.AddingReplicas) ||
		!slices.Equal(target.removing, p.RemovingReplicas)
	if newLeader == p.Leader && slices.Equal(isr, p.ISR) && !assignmentChanged && slices.Equal(targetELR, p.ELR) &&
		slices.Equal(lastKnownELR, p.LastKnownELR) && recovering == p.LeaderRecovering {
		return nil
	}
	leaderEpoch := p.LeaderEpoch
	if newLeader != p.Leader || len(without(p.Replicas, target.replicas)) > 0 {
		leaderEpoch++
	}
	rec := &PartitionChangeRecord{TopicID: topic, Partition: p.Partition, Leader: newLeader, ISR: slices.Clone(isr),
		LeaderEpoch: leaderEpoch, PartitionEpoch: p.PartitionEpoch + 1,
		ELR: cloneNonEmpty(targetELR), LastKnownELR: lastKnownELR, LeaderRecovering: recovering}
	if assignmentChanged {
		rec.Replicas = slices.Clone(target.replicas)
		rec.AddingReplicas, rec.RemovingReplicas = cloneNonEmpty(target.adding), cloneNonEmpty(target.removing)
	}
	return rec
}

// currentTarget is p's own state as a target, to change from.
func currentTarget(p *PartitionInfo) partitionTarget {
	return partitionTarget{isr: slices.Clone(p.ISR), replicas: p.Replicas, adding: p.AddingReplicas, removing: p.RemovingReplicas}
}

// topicElection is the election kind for changes of topic's partitions the controller makes
// itself (fencing, unfencing): unclean where unclean.leader.election.enable is on.
func topicElection(w *Image, topic TopicID) electionKind {
	if t := w.TopicsByID[topic]; t != nil && w.uncleanElectionEnabled(t.Name) {
		return electionUnclean
	}
	return electionOnline
}

// removeReplicaChange is the change that takes broker id out of p's leadership and ISR, for
// fencing or controlled shutdown (membership.go); nil when p does not hold id or nothing
// changes.
func removeReplicaChange(w *Image, topic TopicID, p *PartitionInfo, id int32) *PartitionChangeRecord {
	if p.Leader != id && !slices.Contains(p.ISR, id) {
		return nil
	}
	target := currentTarget(p)
	target.isr = slices.DeleteFunc(target.isr, func(r int32) bool { return r == id })
	return buildChange(w, topic, p, target, changeOptions{election: topicElection(w, topic),
		acceptable: func(r int32) bool { return r != id && w.replicaActive(p, r) }})
}

// uncleanShutdownChange is the change that takes broker id, registering again after an
// unclean shutdown (membership.go), out of p's leadership, ISR and ELR, as Kafka's
// ReplicationControlManager.handleBrokerShutdown does for it (KIP-966): its log may have lost
// an unflushed tail, so it no longer holds every committed record and must not be elected
// from the ELR. Its LastKnownELR entry (the last leader of a leaderless partition) is kept, as
// Kafka's balanced recovery keeps it: electing it is already an unclean election, in leader
// recovery, and after a power loss of every replica it is the only way back. nil when p does
// not hold id or nothing changes.
func uncleanShutdownChange(w *Image, topic TopicID, p *PartitionInfo, id int32) *PartitionChangeRecord {
	if p.Leader != id && !slices.Contains(p.ISR, id) && !slices.Contains(p.ELR, id) {
		return nil
	}
	target := currentTarget(p)
	target.isr = slices.DeleteFunc(target.isr, func(r int32) bool { return r == id })
	return buildChange(w, topic, p, target, changeOptions{election: topicElection(w, topic),
		acceptable:      func(r int32) bool { return r != id && w.replicaActive(p, r) },
		uncleanShutdown: []int32{id}})
}

// unfenceChange is the election that broker id's unfencing allows in the leaderless p
// (membership.go); nil when p has a leader or none can be elected.
func unfenceChange(w *Image, topic TopicID, p *PartitionInfo, id int32) *PartitionChangeRecord {
	if p.Leader != -1 {
		return nil
	}
	rec := buildChange(w, topic, p, currentTarget(p), changeOptions{election: topicElection(w, topic),
		acceptable: func(r int32) bool {
			if r == id {
				return !replicaDirOffline(w.Brokers[id], p, id)
			}
			return w.replicaActive(p, r)
		}})
	if rec == nil || rec.Leader == -1 {
		return nil
	}
	return rec
}

// uncleanCheckTicks is how often (in driver ticks) the active controller looks for
// leaderless partitions that unclean.leader.election.enable lets it bring back.
const uncleanCheckTicks = 10

// tickUnclean runs the unclean elections described at the top of this file, at most
// maxElectionsPerRebalance per round. REQUIRES: driver goroutine.
func (c *Controller) tickUnclean() {
	if !c.leaderReady || c.tickCount%uncleanCheckTicks != 0 {
		return
	}
	plan := func(w *Image) []Record {
		var recs []Record
		for _, t := range sortedTopics(w) {
			if !w.uncleanElectionEnabled(t.Name) {
				continue
			}
			for i := range t.Partitions {
				p := &t.Partitions[i]
				if p.Leader != -1 || len(recs) >= maxElectionsPerRebalance {
					continue
				}
				if rec := buildChange(w, t.ID, p, currentTarget(p), changeOptions{election: electionUnclean}); rec != nil && rec.Leader != -1 {
					recs = append(recs, rec)
				}
			}
		}
		return recs
	}
	if len(plan(c.working)) == 0 {
		return
	}
	c.handleRequest(&request{ctx: context.Background(), done: make(chan error, 1), nonAtomic: true, plan: func(w *Image) []Record {
		recs := plan(w)
		if len(recs) > 0 {
			c.logger.Warn("unclean leader election: electing out-of-sync replicas of offline partitions (unclean.leader.election.enable); acknowledged records may be lost",
				"partitions", len(recs))
		}
		return recs
	}})
}
