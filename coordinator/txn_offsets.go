package coordinator

// Transactional offset commits (TxnOffsetCommit, key 28), as Kafka's
// GroupMetadataManager / OffsetMetadataManager serve them: the offsets are
// appended to __consumer_offsets inside the producer's transaction (a
// transactional batch carrying its producer ID and epoch) and held per
// producer, invisible to OffsetFetch, until the transaction coordinator's
// marker in the same partition commits them (they become the group's
// offsets) or aborts them (they are dropped). Replay does the same with the
// stored transactional batches and control batches.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnOffsetKey names one pending transactional offset.
type txnOffsetKey struct {
	group     string
	topic     string
	partition int32
}

// TxnOffsetCommit handles TxnOffsetCommit (key 28) v0–v6. It answers once
// the offsets are appended (committed to the log, still pending in the
// transaction). v3+ carries the group's generation and member, checked by
// validateTxnOffsetCommit (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID,
// FENCED_INSTANCE_ID); v0–v2 carry none and are checked as if they named
// generation -1 and no member, as Kafka does. v6 (KIP-1319) names topics by
// ID (an unknown ID is UNKNOWN_TOPIC_ID for its partitions, as OffsetCommit
// v10's) and answers the errors Kafka 4.4 maps to ILLEGAL_GENERATION for
// older versions with their own codes: GROUP_ID_NOT_FOUND for a member's
// commit to a group that does not exist, STALE_MEMBER_EPOCH for a KIP-848 or
// streams member's other epoch (OffsetMetadataManager.
// validateTransactionalOffsetCommit). It needs Config.Topics to resolve IDs.
func (c *Coordinator) TxnOffsetCommit(ctx context.Context, req *kmsg.TxnOffsetCommitRequest) (*kmsg.TxnOffsetCommitResponse, error) {
	errResp := func(code int16) *kmsg.TxnOffsetCommitResponse {
		return TxnOffsetCommitAnswer(req, func(int) int16 { return code })
	}
	if req.TransactionalID == "" || req.ProducerID < 0 {
		return errResp(kerr.InvalidRequest.Code), nil
	}
	return onGroupShard(ctx, c, req.Group, errResp, func(s *shard, reply func(*kmsg.TxnOffsetCommitResponse)) {
		s.txnOffsetCommit(req, errResp, reply)
	})
}

// TxnOffsetCommitAnswer is the answer to req with every partition of its i-th topic answered
// code(i): the skeleton a commit fills in (code 0), or a refusal of the whole request.
func TxnOffsetCommitAnswer(req *kmsg.TxnOffsetCommitRequest, code func(topic int) int16) *kmsg.TxnOffsetCommitResponse {
	r := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	for i, t := range req.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		c := code(i)
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, c
			rt.Partitions = append(rt.Partitions, rp)
		}
		r.Topics = append(r.Topics, rt)
	}
	return r
}

// txnOffsetCommit validates and appends a transactional commit. REQUIRES:
// shard event.
func (s *shard) txnOffsetCommit(req *kmsg.TxnOffsetCommitRequest, errResp func(int16) *kmsg.TxnOffsetCommitResponse, reply func(*kmsg.TxnOffsetCommitResponse)) {
	gen, member, instance := req.Generation, req.MemberID, req.InstanceID
	if req.Version < 3 {
		gen, member, instance = -1, "", nil // v0–v2 carry none: Kafka's defaults
	}
	byID := req.Version >= 6
	g := s.groups[req.Group]
	if g == nil {
		if gen >= 0 {
			if byID {
				reply(errResp(kerr.GroupIDNotFound.Code))
			} else {
				reply(errResp(errIllegalGeneration))
			}
			return
		}
		g = s.newGroup(req.Group)
	} else if code := g.validateTxnOffsetCommit(gen, member, instance); code != 0 {
		if byID && code == errIllegalGeneration && (g.cg != nil || g.sg != nil) {
			code = s.txnMemberEpochCode(g, req)
		}
		if code != 0 {
			reply(errResp(code))
			return
		}
	}
	resp := TxnOffsetCommitAnswer(req, func(int) int16 { return 0 })
	now := s.now().UnixMilli()
	type pendingOffset struct {
		key   txnOffsetKey
		entry *offsetEntry
		resp  *kmsg.TxnOffsetCommitResponseTopicPartition
	}
	var pend []pendingOffset
	var recs []record
	for i := range req.Topics {
		t := &req.Topics[i]
		rt := &resp.Topics[i]
		name, numPartitions, known, code := s.resolveTopic(byID, t.Topic, t.TopicID)
		for j := range t.Partitions {
			p := &t.Partitions[j]
			rp := &rt.Partitions[j]
			if ec := s.commitPartitionError(code, known, numPartitions, p.Partition, p.Metadata); ec != 0 {
				rp.ErrorCode = ec
				continue
			}
			e := &offsetEntry{offset: p.Offset, leaderEpoch: p.LeaderEpoch, commitTimestamp: now, expireTimestamp: -1}
			if byID {
				e.topicID = t.TopicID
			}
			if p.Metadata != nil {
				e.metadata = *p.Metadata
			}
			key := txnOffsetKey{req.Group, name, p.Partition}
			pend = append(pend, pendingOffset{key, e, rp})
			recs = append(recs, offsetRecord(req.Group, name, p.Partition, e))
		}
	}
	s.writeAs(req.ProducerID, req.ProducerEpoch, recs, func(code int16) {
		for _, po := range pend {
			if code != 0 {
				po.resp.ErrorCode = code
				continue
			}
			s.addPendingTxnOffset(req.ProducerID, po.key, po.entry)
		}
		reply(resp)
	})
}

// validateTxnOffsetCommit checks a transactional commit's generation,
// member and instance against the group, as Kafka's
// validateTransactionalOffsetCommit does, which differs from an
// OffsetCommit's check: a commit naming none of them is accepted whatever
// the classic group's state (older versions carry none; the transaction
// coordinator guards them), and a member may commit while its group
// completes a rebalance. In a KIP-848 group with members a commit must
// name a member and its epoch (another epoch is ILLEGAL_GENERATION, as
// Kafka maps STALE_MEMBER_EPOCH for this API); so must one in a KIP-1071
// streams group with members. REQUIRES: shard event.
func (g *group) validateTxnOffsetCommit(gen int32, member string, instance *string) int16 {
	if g.state == groupDead {
		return errCoordNotAvailable
	}
	if g.cg != nil {
		if gen < 0 && len(g.cg.members) == 0 {
			return 0
		}
		m := g.cg.members[member]
		if m == nil {
			return errUnknownMember
		}
		if gen != m.epoch {
			return errIllegalGeneration
		}
		return 0
	}
	if g.sg != nil {
		// A KIP-1071 streams group: the member epoch stands in for the generation, as in a
		// KIP-848 group (Kafka Streams' exactly_once_v2 commits this way).
		if gen < 0 && len(g.sg.members) == 0 {
			return 0
		}
		m := g.sg.members[member]
		if m == nil {
			return errUnknownMember
		}
		if gen != m.epoch {
			return errIllegalGeneration
		}
		return 0
	}
	if gen < 0 && g.state == groupEmpty {
		return 0 // a commit outside group management
	}
	if gen >= 0 || member != "" || instance != nil {
		if code := g.validateMember(member, instance); code != 0 {
			return code
		}
		if gen != g.generation {
			return errIllegalGeneration
		}
	}
	return 0
}

// txnMemberEpochCode is a v6 commit's answer when its member epoch is not the
// KIP-848 or streams member's (validateTxnOffsetCommit said
// ILLEGAL_GENERATION), as Kafka 4.4's group validators decide it: a newer
// epoch, or any epoch in a streams group, is STALE_MEMBER_EPOCH; an older one
// stands (KIP-1251) when the member has held every partition of the commit
// since that epoch, else STALE_MEMBER_EPOCH too. Partitions the commit refuses
// anyway (unknown topic or partition, metadata too large) are not checked.
// REQUIRES: shard event.
func (s *shard) txnMemberEpochCode(g *group, req *kmsg.TxnOffsetCommitRequest) int16 {
	if g.sg != nil {
		return kerr.StaleMemberEpoch.Code
	}
	m := g.cg.members[req.MemberID]
	if m == nil || req.Generation > m.epoch {
		return kerr.StaleMemberEpoch.Code
	}
	for _, t := range req.Topics {
		_, numPartitions, _, code := s.resolveTopic(true, t.Topic, t.TopicID)
		if code != 0 {
			continue
		}
		for _, p := range t.Partitions {
			if p.Partition < 0 || p.Partition >= numPartitions ||
				(p.Metadata != nil && len(*p.Metadata) > s.cfg.OffsetMetadataMaxBytes) {
				continue
			}
			if !m.heldSince(req.Generation, t.TopicID, p.Partition) {
				return kerr.StaleMemberEpoch.Code
			}
		}
	}
	return 0
}

func (s *shard) addPendingTxnOffset(producerID int64, key txnOffsetKey, e *offsetEntry) {
	m := s.pendingTxnOffsets[producerID]
	if m == nil {
		m = make(map[txnOffsetKey]*offsetEntry)
		s.pendingTxnOffsets[producerID] = m
	}
	m[key] = e
}

// loadPendingTxnOffset records a replayed transactional offset commit.
func (s *shard) loadPendingTxnOffset(producerID int64, d *decodedRecord) {
	key := txnOffsetKey{d.group, d.topic, d.partition}
	if d.offset == nil {
		if m := s.pendingTxnOffsets[producerID]; m != nil {
			delete(m, key)
		}
		return
	}
	v := d.offset
	e := &offsetEntry{offset: v.Offset, leaderEpoch: -1, metadata: v.Metadata, commitTimestamp: v.CommitTimestamp, expireTimestamp: -1}
	if v.Version >= 3 {
		e.leaderEpoch = v.LeaderEpoch
	}
	s.addPendingTxnOffset(producerID, key, e)
}

// applyTxnMarker completes producerID's pending offsets: a commit makes
// them the groups' offsets, an abort drops them. REQUIRES: shard event (or
// replay).
func (s *shard) applyTxnMarker(producerID int64, commit bool) {
	m := s.pendingTxnOffsets[producerID]
	delete(s.pendingTxnOffsets, producerID)
	if !commit {
		return
	}
	for key, e := range m {
		g := s.groups[key.group]
		if g == nil {
			g = s.newGroup(key.group)
		}
		g.setOffset(key.topic, key.partition, e)
	}
}

// hasPendingTxnOffset reports whether some open transaction holds an
// offset for the group's partition (OffsetFetch's RequireStable answers
// UNSTABLE_OFFSET_COMMIT for it).
func (s *shard) hasPendingTxnOffset(group, topic string, partition int32) bool {
	key := txnOffsetKey{group, topic, partition}
	for _, m := range s.pendingTxnOffsets {
		if _, ok := m[key]; ok {
			return true
		}
	}
	return false
}

// CompleteTxnOffsets is called by the broker once a transaction marker is
// committed in __consumer_offsets partition: producerID's pending
// transactional offsets there become visible (commit) or are dropped
// (abort). It only queues the change, so the broker may call it holding
// partition locks; every request the shard takes after the call sees it. A
// partition not loaded here is ignored (its replay will see the marker).
func (c *Coordinator) CompleteTxnOffsets(partition int32, producerID int64, commit bool) {
	c.mu.Lock()
	s := c.mu.shards[partition]
	c.mu.Unlock()
	if s == nil {
		return
	}
	s.submit(func() {
		if !s.unloaded {
			s.applyTxnMarker(producerID, commit)
		}
	})
}
