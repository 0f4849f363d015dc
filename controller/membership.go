package controller

import (
	"cmp"
	"context"
	"math"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	pb "go.etcd.io/raft/v3/raftpb"
)

// Broker membership, as Kafka's ClusterControlManager and BrokerHeartbeatManager keep it. A
// broker registers through the active controller with its node ID, the incarnation ID its
// process made at start, its endpoints and rack; a new incarnation gets a new broker epoch and
// starts fenced. It then heartbeats; the active controller unfences it once it has caught up
// with the metadata log (its offset reaches the registration's), fences it when heartbeats
// stop for Config.SessionTimeout, and takes it through controlled shutdown when it asks.
//
// Sessions are not replicated: they live in the driver of the active controller only, and a
// node that becomes the active controller gives every broker a full session from then on (as
// Kafka's new active controller does). Time is the driver's ticks.
//
// Leadership rules (ReplicationControlManager; the changes themselves are built as
// elections.go describes, with eligible leader replicas and unclean.leader.election.enable):
//   - Removing a broker (fenced, or entering controlled shutdown) takes it out of the ISR of
//     every partition it is in (the last member stays without ELR) and elects another leader
//     where it led.
//   - When a broker is unfenced, every leaderless partition that can elect a leader now (from
//     its ISR or ELR, or uncleanly where that is enabled) does.

// defaultSessionTimeout is broker.session.timeout.ms's default (9000).
const defaultSessionTimeout = 9 * time.Second

// BrokerRegistration is a BrokerRegistration request (API 62).
type BrokerRegistration struct {
	BrokerID int32
	// ClusterID must be the cluster's; another is refused with INCONSISTENT_CLUSTER_ID.
	ClusterID     string
	IncarnationID [16]byte
	Endpoints     []Endpoint
	Rack          *string
	// PreviousBrokerEpoch is the broker epoch the broker's previous process wrote to its clean
	// shutdown file (KIP-966; -1: none, an unclean shutdown). A new incarnation whose previous
	// epoch is not the one the controller last gave that broker is treated as coming back
	// from an unclean shutdown: it leaves every ISR and ELR (see RegisterBroker).
	PreviousBrokerEpoch int64
	// LogDirs are the IDs of the broker's log directories (v2+; log_dirs.go).
	LogDirs [][16]byte
}

// BrokerHeartbeat is a BrokerHeartbeat request (API 63).
type BrokerHeartbeat struct {
	BrokerID    int32
	BrokerEpoch int64
	// MetadataOffset is the offset of the newest metadata the broker has applied.
	MetadataOffset int64
	WantFence      bool
	WantShutDown   bool
	// OfflineLogDirs are the IDs of the broker's log directories that failed (BrokerHeartbeat
	// v1+). Some of several registered directories: their replicas move (log_dirs.go); all of
	// them, or any from a broker with one: the broker leads nothing and is in no ISR.
	OfflineLogDirs [][16]byte
}

// HeartbeatResult is the answer to a heartbeat, as of the image after it was handled.
type HeartbeatResult struct {
	IsCaughtUp     bool
	IsFenced       bool
	ShouldShutDown bool
}

// brokerSession is the active controller's view of one broker's heartbeats.
type brokerSession struct {
	epoch         int64
	lastHeartbeat uint64 // in driver ticks
	// shutdownOffset is the offset of the entry that took this broker into controlled
	// shutdown (0: none seen by this leader; MaxInt64 while that entry is in flight): it is
	// told to shut down once it reports having applied it.
	shutdownOffset int64
}

// RegisterBroker registers a broker (through this node, which must be the active controller:
// else NOT_CONTROLLER) and returns its broker epoch. A registration repeated by the same
// incarnation (a retry) is answered with the epoch it already has. A new incarnation of a
// registered broker whose session is still live (unfenced, heard from within
// Config.SessionTimeout) is refused with DUPLICATE_BROKER_REGISTRATION, as Kafka's
// ClusterControlManager refuses it: it may be a second process started with the same node.id,
// which must not steal the ID from the one that heartbeats. The refusal is also a reason to
// probe the old incarnation (evidence.go): after a crash and a quick restart its listeners
// refuse connections, it is fenced at once, and the new incarnation's next attempt succeeds.
// A new incarnation of a fenced broker, or of one whose session expired, gets a new epoch and
// starts fenced, replacing the old registration in the same entry (an expired but unfenced
// one's leadership and ISR memberships move first, as on fencing).
//
// Unclean shutdown detection (KIP-966, Kafka's ClusterControlManager.registerBroker): with
// eligible leader replicas on, a new incarnation whose PreviousBrokerEpoch is not the epoch of
// the registration it replaces (-1, or no registration at all) shut down uncleanly, so its
// log may have lost records it had acknowledged as a follower; in the same entry it is taken
// out of every ISR and ELR (uncleanShutdownChange, elections.go), so it cannot be elected from
// them. One whose previous epoch matches shut down cleanly and keeps its ELR memberships.
// Per-call problems are *kerr.Error values.
func (c *Controller) RegisterBroker(ctx context.Context, reg BrokerRegistration) (int64, error) {
	var epoch int64
	var verr *validationError
	req := &request{nonAtomic: true, plan: func(w *Image) []Record {
		epoch, verr = 0, nil
		if reg.ClusterID != w.ClusterID {
			verr = fail(kerr.InconsistentClusterID, "Expected cluster ID %s, but got cluster ID %s.", w.ClusterID, reg.ClusterID)
			c.refusals.log(c.logger, "register-cluster", "refused broker registration: wrong cluster ID",
				"broker", reg.BrokerID, "cluster_id", reg.ClusterID, "own_cluster_id", w.ClusterID)
			return nil
		}
		if reg.BrokerID < 0 {
			verr = fail(kerr.InvalidRequest, "Invalid broker ID %d.", reg.BrokerID)
			c.refusals.log(c.logger, "register-id", "refused broker registration: negative broker ID", "broker", reg.BrokerID)
			return nil
		}
		old := w.Brokers[reg.BrokerID]
		if old != nil && old.IncarnationID == reg.IncarnationID && reg.IncarnationID != ([16]byte{}) {
			c.ensureLearner(reg.BrokerID)
			epoch = old.Epoch
			return nil
		}
		ownRestart := c.isOwnRestart(reg, old)
		if old != nil && c.sessionLive(old) && !ownRestart {
			verr = fail(kerr.DuplicateBrokerRegistration,
				"Broker %d is registered by another live process (incarnation %s, broker epoch %d); a second process cannot take its node ID while that one heartbeats.",
				reg.BrokerID, formatUUID(old.IncarnationID), old.Epoch)
			c.refusals.log(c.logger, "register-duplicate", "refused broker registration: another incarnation of that node ID is live",
				"broker", reg.BrokerID, "incarnation", formatUUID(reg.IncarnationID), "live_incarnation", formatUUID(old.IncarnationID),
				"live_epoch", old.Epoch)
			c.suspect(reg.BrokerID, old.Epoch)
			return nil
		}
		c.ensureLearner(reg.BrokerID)
		delete(c.learnerRemovals, raftID(reg.BrokerID))
		epoch = 1
		var recs []Record
		clean := old != nil && reg.PreviousBrokerEpoch == old.Epoch
		if old != nil {
			epoch = old.Epoch + 1
			switch {
			case ownRestart && !old.Fenced:
				c.logger.Info("this node's broker restarted: its new incarnation replaces the previous process's registration at once", "broker", reg.BrokerID, "old_epoch", old.Epoch)
			case !old.Fenced:
				c.logger.Info("a new incarnation of a broker whose session expired replaces the old one", "broker", reg.BrokerID, "old_epoch", old.Epoch)
			}
		}
		switch {
		case !clean && w.elrEnabled():
			recs = uncleanShutdownRecords(w, reg.BrokerID)
			if old != nil {
				c.logger.Warn("broker registers after an unclean shutdown (its previous broker epoch is not its last one); removing it from every ISR and ELR",
					"broker", reg.BrokerID, "previous_epoch", reg.PreviousBrokerEpoch, "last_epoch", old.Epoch, "partitions", len(recs))
			}
		case old != nil:
			recs = removeBrokerRecords(w, reg.BrokerID)
		}
		c.sessions[reg.BrokerID] = &brokerSession{epoch: epoch, lastHeartbeat: c.tickCount}
		return append(recs, &RegisterBrokerRecord{
			BrokerID:      reg.BrokerID,
			BrokerEpoch:   epoch,
			Endpoints:     slices.Clone(reg.Endpoints),
			Rack:          cloneStringPtr(reg.Rack),
			Fenced:        true,
			IncarnationID: reg.IncarnationID,
			LogDirs:       slices.Clone(reg.LogDirs),
		})
	}}
	if err := c.submit(ctx, req); err != nil {
		return 0, codeOf(err)
	}
	if verr != nil {
		return 0, verr.code
	}
	return epoch, nil
}

// SetLocalIncarnation tells the controller the incarnation ID of the broker that runs in its
// own process (cluster.NewLink calls it before the broker registers). A process runs one
// broker: the first call sets it, later ones are ignored.
func (c *Controller) SetLocalIncarnation(id [16]byte) { c.localIncarnation.CompareAndSwap(nil, &id) }

// isOwnRestart reports whether reg is the broker of this very process registering over an
// earlier incarnation of this node ID. That incarnation cannot be live: a node ID names one
// controller voter, this process holds that seat (it is the active controller), so the earlier
// incarnation was a previous process of this node — stopped or crashed, since a second process
// with a voter's node ID cannot hold the seat at the same time. It is replaced at once instead
// of after its session timeout, which no probe can shorten here (the new process now answers
// on the old one's listeners). Kafka waits out the session (broker.session.timeout.ms) after a
// combined node's kill -9; this is where sluice restarts faster.
func (c *Controller) isOwnRestart(reg BrokerRegistration, old *BrokerInfo) bool {
	own := c.localIncarnation.Load()
	return own != nil && old != nil && reg.BrokerID == c.cfg.NodeID && reg.IncarnationID == *own &&
		old.IncarnationID != reg.IncarnationID
}

// Heartbeat handles a broker's heartbeat on the active controller (else NOT_CONTROLLER):
// BROKER_ID_NOT_REGISTERED for an unknown broker, STALE_BROKER_EPOCH for another epoch than
// the registered one. It renews the broker's session and, as the broker's state asks, unfences
// it (once caught up), fences it (WantFence), or takes it through controlled shutdown
// (WantShutDown): the first such heartbeat moves leadership off the broker and out of the
// ISRs and marks it shutting down, in one entry; a later heartbeat that finds it leading
// nothing and reporting a metadata offset at or past that entry (so it has stopped leading and
// has answered its clients with the new leaders) fences it and answers ShouldShutDown, as
// Kafka's BrokerHeartbeatManager waits for the broker to catch up to its controlled shutdown.
// A broker fenced otherwise may shut down at once.
func (c *Controller) Heartbeat(ctx context.Context, hb BrokerHeartbeat) (HeartbeatResult, error) {
	var res HeartbeatResult
	var verr *validationError
	req := &request{nonAtomic: true}
	result := func(im *Image) {
		b := im.Brokers[hb.BrokerID]
		if b == nil || b.Epoch != hb.BrokerEpoch {
			return
		}
		res.IsCaughtUp = hb.MetadataOffset >= b.RegisteredOffset
		res.IsFenced = b.Fenced
		res.ShouldShutDown = hb.WantShutDown && b.Fenced
	}
	req.plan = func(w *Image) []Record {
		verr = nil
		b := w.Brokers[hb.BrokerID]
		switch {
		case b == nil:
			verr = fail(kerr.BrokerIDNotRegistered, "Broker %d is not registered.", hb.BrokerID)
			c.refusals.log(c.logger, "heartbeat-unknown", "refused broker heartbeat: broker not registered", "broker", hb.BrokerID)
			return nil
		case b.Epoch != hb.BrokerEpoch:
			verr = fail(kerr.StaleBrokerEpoch, "Expected broker epoch %d, but got broker epoch %d.", b.Epoch, hb.BrokerEpoch)
			c.refusals.log(c.logger, "heartbeat-epoch", "refused broker heartbeat: stale broker epoch",
				"broker", hb.BrokerID, "epoch", hb.BrokerEpoch, "registered_epoch", b.Epoch)
			return nil
		}
		if s := c.sessions[hb.BrokerID]; s != nil && s.epoch == b.Epoch {
			s.lastHeartbeat = c.tickCount
		} else {
			c.sessions[hb.BrokerID] = &brokerSession{epoch: b.Epoch, lastHeartbeat: c.tickCount}
		}
		c.ensureLearner(hb.BrokerID)
		c.noteHeartbeat(b)
		var recs []Record
		offline := len(hb.OfflineLogDirs) > 0
		partial := offline && partialDirsOffline(b, hb.OfflineLogDirs)
		switch {
		case partial && (b.LogDirOffline || !sameDirSet(b.OfflineLogDirs, hb.OfflineLogDirs)):
			// Some of its log directories failed: only their replicas move (log_dirs.go).
			recs = logDirStateRecords(w, b.ID, hb.OfflineLogDirs)
			c.logger.Warn("broker reports some of its log directories offline; moving the leadership and ISR memberships of their replicas",
				"broker", b.ID, "offline_dirs", len(hb.OfflineLogDirs), "of", len(b.LogDirs), "partitions", len(recs)-1)
		case partial:
		case !offline && len(b.OfflineLogDirs) > 0 && !b.LogDirOffline:
			recs = logDirStateRecords(w, b.ID, nil)
			c.logger.Info("broker reports its log directories online again; its replicas in them may lead and rejoin ISRs", "broker", b.ID)
		case offline && !b.LogDirOffline:
			// The broker's storage failed: its partitions move to other ISR members, as
			// Kafka's handleDirectoriesOffline moves those of a failed directory.
			none := [][16]byte{}
			recs = append(removeBrokerRecords(w, b.ID),
				&BrokerChangeRecord{BrokerID: b.ID, BrokerEpoch: b.Epoch, LogDirOffline: ptr(true), OfflineLogDirs: &none})
			c.logger.Warn("broker reports its log directory offline; moving its leadership and ISR memberships to other replicas",
				"broker", b.ID, "partitions", len(recs)-1)
		case !offline && b.LogDirOffline:
			recs = logDirOnlineRecords(w, b.ID)
			c.logger.Info("broker reports its log directory online again; it may lead and rejoin ISRs", "broker", b.ID)
		case hb.WantShutDown && !b.Fenced && !b.InControlledShutdown:
			recs = append(removeBrokerRecords(w, b.ID),
				&BrokerChangeRecord{BrokerID: b.ID, BrokerEpoch: b.Epoch, InControlledShutdown: ptr(true)})
			// Until the entry applied its offset is unknown: no heartbeat has applied it yet.
			c.sessions[hb.BrokerID].shutdownOffset = math.MaxInt64
			req.applied = func(im *Image) {
				if s := c.sessions[hb.BrokerID]; s != nil && s.epoch == b.Epoch {
					s.shutdownOffset = im.Offset
				}
				result(im)
			}
		case hb.WantShutDown && !b.Fenced && leadsNothing(w, b.ID) && c.appliedShutdown(hb, b):
			recs = append(removeBrokerRecords(w, b.ID),
				&BrokerChangeRecord{BrokerID: b.ID, BrokerEpoch: b.Epoch, Fenced: ptr(true)})
		case hb.WantFence && !b.Fenced:
			recs = append(removeBrokerRecords(w, b.ID),
				&BrokerChangeRecord{BrokerID: b.ID, BrokerEpoch: b.Epoch, Fenced: ptr(true)})
		case !hb.WantFence && !hb.WantShutDown && b.Fenced && !b.InControlledShutdown:
			// Caught up is judged on the published image: the working image's registration
			// offsets are not known before commit.
			pub := c.image.Load().Brokers[b.ID]
			if pub != nil && pub.Epoch == b.Epoch && hb.MetadataOffset >= pub.RegisteredOffset {
				recs = unfenceRecords(w, b.ID)
			}
		}
		if len(recs) == 0 {
			result(c.image.Load())
		}
		return recs
	}
	req.applied = result // or, entering controlled shutdown, the plan's own
	if err := c.submit(ctx, req); err != nil {
		return HeartbeatResult{}, codeOf(err)
	}
	if verr != nil {
		return HeartbeatResult{}, verr.code
	}
	return res, nil
}

// appliedShutdown reports whether a heartbeat of broker b reports a metadata offset at or past
// the entry that took b into controlled shutdown (true when this leader did not see that
// entry proposed: it cannot tell, and lets the broker go). REQUIRES: driver goroutine.
func (c *Controller) appliedShutdown(hb BrokerHeartbeat, b *BrokerInfo) bool {
	s := c.sessions[b.ID]
	return s == nil || s.epoch != b.Epoch || hb.MetadataOffset >= s.shutdownOffset
}

// codeOf turns a validation error that failed a whole proposal into its Kafka error.
func codeOf(err error) error {
	if verr, ok := err.(*validationError); ok {
		return verr.code
	}
	return err
}

func ptr[T any](v T) *T { return &v }

// leadsNothing reports whether broker id leads no partition in im.
func leadsNothing(im *Image, id int32) bool {
	for _, t := range im.Topics {
		for i := range t.Partitions {
			if t.Partitions[i].Leader == id {
				return false
			}
		}
	}
	return true
}

// sortedTopics returns im's topics by name, so generated records are in a stable order.
func sortedTopics(im *Image) []*TopicInfo {
	ts := make([]*TopicInfo, 0, len(im.Topics))
	for _, t := range im.Topics {
		ts = append(ts, t)
	}
	slices.SortFunc(ts, func(a, b *TopicInfo) int { return cmp.Compare(a.Name, b.Name) })
	return ts
}

// partitionChanges appends to recs the change(w, topic, partition, id) of every partition
// that has one, in topic-name order.
func partitionChanges(recs []Record, w *Image, id int32, change func(*Image, TopicID, *PartitionInfo, int32) *PartitionChangeRecord) []Record {
	for _, t := range sortedTopics(w) {
		for i := range t.Partitions {
			if rec := change(w, t.ID, &t.Partitions[i], id); rec != nil {
				recs = append(recs, rec)
			}
		}
	}
	return recs
}

// removeBrokerRecords are the partition changes that take broker id out of leadership and
// ISRs (see the rules at the top of this file), for fencing or controlled shutdown.
func removeBrokerRecords(w *Image, id int32) []Record {
	return partitionChanges(nil, w, id, removeReplicaChange)
}

// logDirOnlineRecords mark broker id's log directory online again and, when it is unfenced
// and not shutting down, elect it in every leaderless partition it may now lead (the last
// member of an ISR or ELR whose storage failed while no one else was in sync).
func logDirOnlineRecords(w *Image, id int32) []Record {
	b := w.Brokers[id]
	recs := []Record{&BrokerChangeRecord{BrokerID: id, BrokerEpoch: b.Epoch, LogDirOffline: ptr(false)}}
	if b.Fenced || b.InControlledShutdown {
		return recs
	}
	return partitionChanges(recs, w, id, unfenceChange)
}

// uncleanShutdownRecords are the partition changes that take broker id out of leadership,
// ISRs and ELRs after an unclean shutdown (RegisterBroker).
func uncleanShutdownRecords(w *Image, id int32) []Record {
	return partitionChanges(nil, w, id, uncleanShutdownChange)
}

// unfenceRecords unfences broker id and elects a leader for every leaderless partition that
// now has an active ISR member (none while its log directory is offline).
func unfenceRecords(w *Image, id int32) []Record {
	b := w.Brokers[id]
	recs := []Record{&BrokerChangeRecord{BrokerID: id, BrokerEpoch: b.Epoch, Fenced: ptr(false)}}
	if b.LogDirOffline {
		return recs // it leads nothing until its storage is back (logDirOnlineRecords)
	}
	return partitionChanges(recs, w, id, unfenceChange)
}

// tickSessions advances the driver's clock by one tick and, on the active controller, fences
// every active broker whose session expired. REQUIRES: driver goroutine.
func (c *Controller) tickSessions() {
	c.tickCount++
	c.tickLearnerRemovals()
	if !c.leaderReady || c.sessionTicks == 0 {
		return
	}
	var expired []int32
	for id, b := range c.working.Brokers {
		if b.Fenced {
			continue
		}
		s := c.sessions[id]
		if s == nil || s.epoch != b.Epoch {
			// A broker this leader has not heard from yet gets a full session from now.
			c.sessions[id] = &brokerSession{epoch: b.Epoch, lastHeartbeat: c.tickCount}
			continue
		}
		if c.tickCount-s.lastHeartbeat >= c.sessionTicks {
			expired = append(expired, id)
		}
	}
	if len(expired) == 0 {
		return
	}
	c.fenceBrokers(expired, "fencing broker: its session expired")
}

// proposeClusterID proposes the cluster ID record when this node leads a log that has none:
// exactly one node, the first to lead the new log, mints it. REQUIRES: driver goroutine.
func (c *Controller) proposeClusterID() {
	if !c.leaderReady || c.working.ClusterID != "" || c.clusterIDTerm == c.leaderTerm {
		return
	}
	c.clusterIDTerm = c.leaderTerm
	c.handleRequest(&request{ctx: context.Background(), done: make(chan error, 1), plan: func(w *Image) []Record {
		if w.ClusterID != "" {
			return nil
		}
		return append([]Record{&ClusterIDRecord{ClusterID: c.newClusterID()}}, c.cfg.BootstrapRecords...)
	}})
}

// newClusterID is the cluster ID a new log gets: Config.ClusterID, else a random one.
func (c *Controller) newClusterID() string {
	if c.cfg.ClusterID != "" {
		return c.cfg.ClusterID
	}
	return newClusterID()
}

// storeLearners publishes the voters and learners of c.confState for the transport.
// REQUIRES: driver goroutine (or open, before the driver starts).
func (c *Controller) storeLearners() {
	var m quorumMembers
	for _, id := range c.confState.GetVoters() {
		m.voters = append(m.voters, kafkaID(id))
	}
	for _, id := range c.confState.GetLearners() {
		m.learners = append(m.learners, kafkaID(id))
	}
	c.members.Store(&m)
}

// quorumMembers are the node IDs of an applied raft configuration.
type quorumMembers struct{ voters, learners []int32 }

// AcceptsObserver reports whether node id may open an observer's raft connection to this
// voter: it is a learner of the applied configuration, or a registered broker that is not a
// voter (the learner change its registration caused may not be applied here yet). Anyone
// else is an unknown node.
func (c *Controller) AcceptsObserver(id int32) bool {
	m := c.members.Load()
	if slices.Contains(m.learners, id) {
		return true
	}
	if slices.Contains(m.voters, id) {
		return false
	}
	return c.Image().Brokers[id] != nil
}

// learnerRetryTicks is how long the active controller waits for a proposed learner change to
// apply before proposing it again.
const learnerRetryTicks = 20

// ensureLearner makes sure the broker id follows the metadata log: a node that is neither a
// voter nor a learner of the applied configuration is added as a raft learner (an observer,
// as Kafka's broker-only nodes are). etcd-raft allows one pending configuration change at a
// time and turns another into an empty entry, so a change that has not applied after
// learnerRetryTicks is proposed again (registration and every heartbeat call this).
// REQUIRES: driver goroutine, this node leads.
func (c *Controller) ensureLearner(id int32) {
	rid := raftID(id)
	if slices.Contains(c.confState.GetVoters(), rid) || slices.Contains(c.confState.GetLearners(), rid) {
		delete(c.learnerProposed, rid)
		return
	}
	if at, ok := c.learnerProposed[rid]; ok && c.tickCount-at < learnerRetryTicks {
		return
	}
	cc := &pb.ConfChange{Type: pb.ConfChangeAddLearnerNode.Enum(), NodeId: &rid}
	if err := c.node.ProposeConfChange(cc); err != nil {
		c.logger.Warn("could not propose adding an observer to the metadata quorum", "broker", id, "err", err)
		return
	}
	c.learnerProposed[rid] = c.tickCount
	c.logger.Info("adding broker to the metadata quorum as an observer (raft learner)", "broker", id)
}
