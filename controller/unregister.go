package controller

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	pb "go.etcd.io/raft/v3/raftpb"
)

// Unregistering brokers (Kafka's UnregisterBroker, API 64, `kafka-cluster unregister`), and
// the liveness rule DUPLICATE_BROKER_REGISTRATION uses.
//
// As Kafka's ReplicationControlManager.unregisterBroker does, unregistering does not check
// whether the broker is running: it takes the broker out of leadership and out of every ISR
// it is not the last member of (removeBrokerRecords, the rules of fencing), then removes the
// registration (UnregisterBrokerRecord). It is meant for a decommissioned broker. A sluice
// broker that is still running is answered BROKER_ID_NOT_REGISTERED at its next heartbeat and
// registers again (cluster.Link does), as a new incarnation.
//
// A broker-only node follows the metadata log as a raft learner, which the active controller
// added at its registration (ensureLearner). Unregistering it removes that learner too, so a
// decommissioned node does not stay in DescribeQuorum's observers for ever: etcd-raft allows
// one pending configuration change at a time, so the removal is proposed, and proposed again
// every learnerRetryTicks until it applied, from the driver's tick (tickLearnerRemovals). The
// pending removals live on the active controller only: one that has not applied when
// leadership moves is not retried by the next leader (the learner then stays until the node
// registers again and is unregistered again). A voter is never removed here: the quorum's
// voters change only through its own membership changes.

// UnregisterBrokerRecord removes the registration BrokerID/BrokerEpoch (as Kafka's record of
// the same name). A record for another epoch than the registered one is skipped.
type UnregisterBrokerRecord struct {
	BrokerID    int32 `json:"broker_id"`
	BrokerEpoch int64 `json:"broker_epoch"`
}

func (*UnregisterBrokerRecord) Type() RecordType { return RecordUnregisterBroker }

// UnregisterBroker removes broker id's registration through this node, which must be the
// active controller (else NOT_CONTROLLER); BROKER_ID_NOT_REGISTERED for a broker that is not
// registered. It returns once the change is applied here; the learner removal of a
// broker-only node follows on its own (see the top of this file).
func (c *Controller) UnregisterBroker(ctx context.Context, id int32) error {
	var verr *validationError
	req := &request{nonAtomic: true, plan: func(w *Image) []Record {
		verr = nil
		b := w.Brokers[id]
		if b == nil {
			verr = fail(kerr.BrokerIDNotRegistered, "Broker ID %d is not registered.", id)
			return nil
		}
		if c.sessionLive(b) {
			c.logger.Warn("unregistering a broker that is still heartbeating; it will register again", "broker", id, "epoch", b.Epoch)
		} else {
			c.logger.Info("unregistering broker", "broker", id, "epoch", b.Epoch)
		}
		delete(c.sessions, id)
		delete(c.learnerProposed, raftID(id))
		if !slices.Contains(c.confState.GetVoters(), raftID(id)) {
			c.learnerRemovals[raftID(id)] = 0 // proposed at the next tick
		}
		return append(removeBrokerRecords(w, id), &UnregisterBrokerRecord{BrokerID: id, BrokerEpoch: b.Epoch})
	}}
	if err := c.submit(ctx, req); err != nil {
		return codeOf(err)
	}
	if verr != nil {
		return verr.code
	}
	return nil
}

// sessionLive reports whether broker b's registration has a live session on this active
// controller: it is not fenced and was heard from within the session timeout. A broker this
// leader has not heard from yet counts as live, since it gets a full session from this
// leader's first tick (tickSessions); with no session timeout every unfenced broker is live.
// REQUIRES: driver goroutine.
func (c *Controller) sessionLive(b *BrokerInfo) bool {
	if b == nil || b.Fenced {
		return false
	}
	s := c.sessions[b.ID]
	if c.sessionTicks == 0 || s == nil || s.epoch != b.Epoch {
		return true
	}
	return c.tickCount-s.lastHeartbeat < c.sessionTicks
}

// tickLearnerRemovals proposes the pending learner removals that are due (see the top of
// this file). REQUIRES: driver goroutine.
func (c *Controller) tickLearnerRemovals() {
	if !c.leaderReady || len(c.learnerRemovals) == 0 {
		return
	}
	for _, rid := range sortedRaftIDs(c.learnerRemovals) {
		id := kafkaID(rid)
		if c.working.Brokers[id] != nil || slices.Contains(c.confState.GetVoters(), rid) ||
			!slices.Contains(c.confState.GetLearners(), rid) {
			// Registered again (its learner stays), a voter, or no longer a learner: done.
			delete(c.learnerRemovals, rid)
			continue
		}
		if at := c.learnerRemovals[rid]; at != 0 && c.tickCount-at < learnerRetryTicks {
			continue
		}
		cc := &pb.ConfChange{Type: pb.ConfChangeRemoveNode.Enum(), NodeId: &rid}
		if err := c.node.ProposeConfChange(cc); err != nil {
			c.logger.Warn("could not propose removing an unregistered broker from the metadata quorum's observers", "broker", id, "err", err)
			continue
		}
		c.learnerRemovals[rid] = max(c.tickCount, 1)
		c.logger.Info("removing unregistered broker from the metadata quorum's observers (raft learners)", "broker", id)
		return // one configuration change at a time
	}
}

func sortedRaftIDs(m map[uint64]uint64) []uint64 {
	ids := make([]uint64, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// formatUUID is a UUID as Kafka prints it (URL-safe base64 without padding).
func formatUUID(u [16]byte) string { return TopicID(u).String() }
