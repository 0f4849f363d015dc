package coordinator

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Error codes used often.
var (
	errNotCoordinator      = kerr.NotCoordinator.Code
	errLoadInProgress      = kerr.CoordinatorLoadInProgress.Code
	errCoordNotAvailable   = kerr.CoordinatorNotAvailable.Code
	errUnknownMember       = kerr.UnknownMemberID.Code
	errIllegalGeneration   = kerr.IllegalGeneration.Code
	errRebalanceInProgress = kerr.RebalanceInProgress.Code
	errFencedInstance      = kerr.FencedInstanceID.Code
)

// shard is the group coordinator for one __consumer_offsets partition: the
// group state machine on a runtime (see runtime), so the state below is only
// ever touched by one event at a time, in submission order.
type shard struct {
	runtime
	c *Coordinator

	// The fields below belong to the event loop (and to replay, before the
	// shard is active).

	groups map[string]*group
	// pendingTxnOffsets holds, per transactional producer ID, the offsets
	// its TxnOffsetCommits wrote that no marker has committed or aborted
	// yet, as Kafka's GroupMetadataManager keeps them: invisible to
	// OffsetFetch until the commit marker.
	pendingTxnOffsets map[int64]map[txnOffsetKey]*offsetEntry
	retentionTimer    *shardTimer
}

func newShard(c *Coordinator, partition int32, log PartitionLog) *shard {
	s := &shard{
		c:                 c,
		groups:            make(map[string]*group),
		pendingTxnOffsets: make(map[int64]map[txnOffsetKey]*offsetEntry),
	}
	s.runtime.init(&c.cfg, partition, log)
	s.afterEvent = func() {
		if hook := c.eventHook.Load(); hook != nil {
			(*hook)(s)
		}
	}
	s.onUnload = func() {
		for _, g := range s.groups {
			g.failAllWaiters(errNotCoordinator)
		}
	}
	return s
}

// replayGroups loads the partition's records. REQUIRES: shard event, shard
// not yet active.
func (s *shard) replayGroups() error {
	return s.replay(func(r *logRecord) error {
		if r.control {
			s.applyTxnMarker(r.producerID, r.commit)
			return nil
		}
		if len(r.key) >= 2 {
			kind := int16(binary.BigEndian.Uint16(r.key))
			if isStreamsRecordKind(kind) {
				return s.applyStreamsRecord(r.key, r.value)
			}
			if kind >= keyConsumerGroupLo {
				return s.applyConsumerRecord(r.key, r.value)
			}
		}
		d, err := decodeRecord(r.key, r.value)
		if err != nil {
			return err
		}
		if r.transactional && r.producerID >= 0 && (d.kind == keyOffsetCommit || d.kind == keyOffsetCommitV0) {
			// A TxnOffsetCommit's record: pending until its marker.
			s.loadPendingTxnOffset(r.producerID, &d)
			return nil
		}
		s.applyRecord(&d)
		return nil
	})
}

// applyRecord applies one replayed record to the state.
func (s *shard) applyRecord(d *decodedRecord) {
	switch d.kind {
	case keyOffsetCommitV0, keyOffsetCommit:
		g := s.groups[d.group]
		if d.offset == nil {
			if g != nil {
				g.deleteOffset(d.topic, d.partition)
				s.maybeDropLoadedGroup(g)
			}
			return
		}
		if g == nil {
			g = s.newGroup(d.group)
		}
		v := d.offset
		e := &offsetEntry{
			offset:          v.Offset,
			leaderEpoch:     -1,
			metadata:        v.Metadata,
			commitTimestamp: v.CommitTimestamp,
			expireTimestamp: -1,
			topicID:         v.TopicID,
		}
		if v.Version >= 3 {
			e.leaderEpoch = v.LeaderEpoch
		}
		if v.Version == 1 {
			e.expireTimestamp = v.ExpireTimestamp
		}
		g.setOffset(d.topic, d.partition, e)
	case keyGroupMetadata:
		g := s.groups[d.group]
		if d.groupValue == nil {
			if g != nil {
				g.resetToSimple()
				s.maybeDropLoadedGroup(g)
			}
			return
		}
		if g == nil {
			g = s.newGroup(d.group)
		}
		g.loadMetadata(d.groupValue, s.now())
	default:
		// Newer record types (KIP-848 and later) are skipped.
	}
}

// maybeDropLoadedGroup forgets a replayed group left with neither metadata
// nor offsets.
func (s *shard) maybeDropLoadedGroup(g *group) {
	if g.cg == nil && g.sg == nil && g.protocolType == "" && g.generation == 0 && len(g.members) == 0 && g.numOffsets() == 0 {
		delete(s.groups, g.id)
	}
}

func (s *shard) newGroup(id string) *group {
	g := newGroup(s, id, s.now())
	s.groups[id] = g
	return g
}

// activate starts serving after replay: member session timers and the
// offset retention check. REQUIRES: running as a shard event.
func (s *shard) activate() {
	for _, g := range s.groups {
		for _, m := range g.members {
			g.scheduleHeartbeatExpiry(m)
		}
		if g.cg != nil {
			for _, m := range g.cg.members {
				g.scheduleConsumerSession(m)
			}
		}
		if g.sg != nil {
			for _, m := range g.sg.members {
				g.scheduleStreamsSession(m)
			}
		}
	}
	s.scheduleRetentionCheck()
	// An Unload during the replay wins.
	s.status.CompareAndSwap(shardLoading, shardActive)
}

func (s *shard) numGroups() int {
	n := make(chan int, 1)
	s.submit(func() { n <- len(s.groups) })
	return <-n
}

func (s *shard) scheduleRetentionCheck() {
	s.retentionTimer = s.schedule(s.cfg.OffsetsRetentionCheckInterval, func() {
		s.expireOffsets()
		s.scheduleRetentionCheck()
	})
}
