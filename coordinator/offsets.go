package coordinator

import (
	"context"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// await runs start as a shard event and waits for the reply it eventually
// gives. If the shard was unloaded first, it answers onUnloaded() instead.
// onGroupShard runs start on the shard of group and returns what it replies: an empty group ID
// answers INVALID_GROUP_ID, a group not coordinated here the lookup's code (NOT_COORDINATOR,
// COORDINATOR_LOAD_IN_PROGRESS), a shard unloaded meanwhile NOT_COORDINATOR.
func onGroupShard[R any](ctx context.Context, c *Coordinator, group string, errResp func(code int16) R, start func(s *shard, reply func(R))) (R, error) {
	if group == "" {
		return errResp(kerr.InvalidGroupID.Code), nil
	}
	s, code := c.lookup(group)
	if code != 0 {
		return errResp(code), nil
	}
	return await(ctx, s, func(reply func(R)) { start(s, reply) }, func() R { return errResp(errNotCoordinator) })
}

func await[T any](ctx context.Context, s *shard, start func(reply func(T)), onUnloaded func() T) (T, error) {
	ch := make(chan T, 1) // reply is called at most once, so it never blocks
	s.submit(func() {
		if s.unloaded {
			ch <- onUnloaded()
			return
		}
		start(func(r T) { ch <- r })
	})
	select {
	case r := <-ch:
		return r, nil
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// OffsetCommit handles OffsetCommit (key 8) v0–v10. It answers once the
// offsets are committed to __consumer_offsets. With v10 (topic IDs) it needs
// Config.Topics to resolve IDs.
func (c *Coordinator) OffsetCommit(ctx context.Context, req *kmsg.OffsetCommitRequest) (*kmsg.OffsetCommitResponse, error) {
	errResp := func(code int16) *kmsg.OffsetCommitResponse {
		r := offsetCommitSkeleton(req)
		setCommitErrors(r, code)
		return r
	}
	return onGroupShard(ctx, c, req.Group, errResp, func(s *shard, reply func(*kmsg.OffsetCommitResponse)) {
		s.offsetCommit(req, reply)
	})
}

func offsetCommitSkeleton(req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	r := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			rt.Partitions = append(rt.Partitions, rp)
		}
		r.Topics = append(r.Topics, rt)
	}
	return r
}

func setCommitErrors(r *kmsg.OffsetCommitResponse, code int16) {
	for i := range r.Topics {
		for j := range r.Topics[i].Partitions {
			r.Topics[i].Partitions[j].ErrorCode = code
		}
	}
}

// validateMember checks a member's identity as Kafka's
// validateExistingMember: UNKNOWN_MEMBER_ID for an unknown member or
// instance, FENCED_INSTANCE_ID when the instance belongs to another member.
func (g *group) validateMember(memberID string, instanceID *string) int16 {
	if instanceID != nil {
		holder, ok := g.static[*instanceID]
		if !ok {
			return errUnknownMember
		}
		if holder != memberID {
			return errFencedInstance
		}
		return 0
	}
	if _, ok := g.members[memberID]; !ok {
		return errUnknownMember
	}
	return 0
}

// offsetCommit validates and writes a commit. REQUIRES: shard event.
func (s *shard) offsetCommit(req *kmsg.OffsetCommitRequest, reply func(*kmsg.OffsetCommitResponse)) {
	resp := offsetCommitSkeleton(req)
	fail := func(code int16) {
		setCommitErrors(resp, code)
		reply(resp)
	}
	g := s.groups[req.Group]
	created := false
	if g == nil {
		if req.Generation >= 0 {
			// Kafka: only a commit outside group management (generation
			// -1) may create a group; v9+ says so precisely.
			if req.Version >= 9 {
				fail(kerr.GroupIDNotFound.Code)
			} else {
				fail(errIllegalGeneration)
			}
			return
		}
		g = s.newGroup(req.Group)
		created = true
	} else if code := g.validateOffsetCommit(req); code != 0 {
		fail(code)
		return
	}

	now := s.now().UnixMilli()
	type pendingOffset struct {
		tp    topicPartition
		entry *offsetEntry
		resp  *kmsg.OffsetCommitResponseTopicPartition
	}
	var pend []pendingOffset
	var recs []record
	for i := range req.Topics {
		t := &req.Topics[i]
		rt := &resp.Topics[i]
		name, numPartitions, known, code := s.resolveTopic(req.Version >= 10, t.Topic, t.TopicID)
		for j := range t.Partitions {
			p := &t.Partitions[j]
			rp := &rt.Partitions[j]
			if ec := s.commitPartitionError(code, known, numPartitions, p.Partition, p.Metadata); ec != 0 {
				rp.ErrorCode = ec
				continue
			}
			e := &offsetEntry{
				offset:          p.Offset,
				leaderEpoch:     p.LeaderEpoch,
				commitTimestamp: now,
				expireTimestamp: -1,
				topicID:         t.TopicID,
			}
			if p.Metadata != nil {
				e.metadata = *p.Metadata
			}
			if req.Version == 1 && p.Timestamp != -1 {
				e.commitTimestamp = p.Timestamp
			}
			if req.Version >= 2 && req.Version <= 4 && req.RetentionTimeMillis != -1 {
				e.expireTimestamp = now + req.RetentionTimeMillis
			}
			tp := topicPartition{name, p.Partition}
			g.pendingCommits[tp]++
			pend = append(pend, pendingOffset{tp, e, rp})
			recs = append(recs, offsetRecord(req.Group, name, p.Partition, e))
		}
	}
	s.write(recs, func(code int16) {
		for _, po := range pend {
			if g.pendingCommits[po.tp]--; g.pendingCommits[po.tp] <= 0 {
				delete(g.pendingCommits, po.tp)
			}
			if code != 0 {
				po.resp.ErrorCode = code
				continue
			}
			g.setOffset(po.tp.topic, po.tp.partition, po.entry)
		}
		if created && g.isSimple() && g.numOffsets() == 0 && len(g.pendingCommits) == 0 && s.groups[g.id] == g {
			delete(s.groups, g.id)
		}
		reply(resp)
	})
}

// validateOffsetCommit is Kafka's ClassicGroup.validateOffsetCommit.
func (g *group) validateOffsetCommit(req *kmsg.OffsetCommitRequest) int16 {
	if g.state == groupDead {
		return errCoordNotAvailable
	}
	if g.sg != nil {
		return g.validateStreamsOffsetCommit(req.MemberID, req.Generation, req.Version)
	}
	if g.cg != nil {
		// KIP-848: the member epoch stands in for the generation.
		if req.Generation < 0 && len(g.cg.members) == 0 {
			return 0
		}
		m := g.cg.members[req.MemberID]
		if m == nil {
			return errUnknownMember
		}
		if req.Generation != m.epoch {
			if req.Version < 9 {
				return errIllegalGeneration
			}
			// KIP-1251 (Kafka 4.3+): a commit carrying an older member
			// epoch — it raced a heartbeat that advanced the member —
			// still stands for partitions the member has held since that
			// epoch; a newer epoch, or any other partition, is stale.
			if req.Generation > m.epoch || !g.s.heldSinceCommitEpoch(m, req) {
				return kerr.StaleMemberEpoch.Code
			}
		}
		return 0
	}
	if req.Generation < 0 && g.state == groupEmpty {
		return 0 // a commit outside group management
	}
	if g.state == groupCompletingRebalance {
		// Members must not commit until they have their new assignment.
		return errRebalanceInProgress
	}
	if code := g.validateMember(req.MemberID, req.InstanceID); code != 0 {
		return code
	}
	if req.Generation != g.generation {
		return errIllegalGeneration
	}
	return 0
}

// heldSinceCommitEpoch reports whether m has held every partition of the
// commit since the commit's member epoch (KIP-1251). Partitions the commit
// refuses anyway — unknown topics or partitions, metadata too large — are
// not checked, as Kafka checks them before the group does. A topic named
// without an ID cannot be matched when topic metadata is absent: it fails.
func (s *shard) heldSinceCommitEpoch(m *cgMember, req *kmsg.OffsetCommitRequest) bool {
	for _, t := range req.Topics {
		name, numPartitions, known, code := s.resolveTopic(req.Version >= 10, t.Topic, t.TopicID)
		if code != 0 {
			continue
		}
		id := t.TopicID
		if req.Version < 10 {
			if !known {
				return false
			}
			id, _, _ = s.cfg.Topics.TopicByName(name)
		}
		for _, p := range t.Partitions {
			if p.Partition < 0 || p.Partition >= numPartitions ||
				(p.Metadata != nil && len(*p.Metadata) > s.cfg.OffsetMetadataMaxBytes) {
				continue
			}
			if !m.heldSince(req.Generation, id, p.Partition) {
				return false
			}
		}
	}
	return true
}

// resolveTopic returns a topic's name and partition count. byID selects the
// v10 form (topic IDs). known is false when Config.Topics is nil, in which
// case any name is accepted. code is UNKNOWN_TOPIC_OR_PARTITION or
// UNKNOWN_TOPIC_ID for topics that do not exist.
func (s *shard) resolveTopic(byID bool, name string, id [16]byte) (string, int32, bool, int16) {
	tm := s.cfg.Topics
	if byID {
		if tm == nil {
			return "", 0, false, kerr.UnknownTopicID.Code
		}
		n, parts, ok := tm.TopicByID(id)
		if !ok {
			return "", 0, false, kerr.UnknownTopicID.Code
		}
		return n, parts, true, 0
	}
	if tm == nil {
		return name, 0, false, 0
	}
	_, parts, ok := tm.TopicByName(name)
	if !ok {
		return name, 0, false, kerr.UnknownTopicOrPartition.Code
	}
	return name, parts, true, 0
}

// fetchTopic is one topic of an OffsetFetch in version-neutral form.
type fetchTopic struct {
	name       string
	id         [16]byte
	partitions []int32
}

// OffsetFetch handles OffsetFetch (key 9) v0–v10, including the multi-group
// form of v8+. Offsets that are not committed come back as offset -1.
func (c *Coordinator) OffsetFetch(ctx context.Context, req *kmsg.OffsetFetchRequest) (*kmsg.OffsetFetchResponse, error) {
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	if req.Version >= 8 {
		for _, rg := range req.Groups {
			var topics []fetchTopic
			if rg.Topics != nil {
				topics = []fetchTopic{}
				for _, t := range rg.Topics {
					topics = append(topics, fetchTopic{t.Topic, t.TopicID, t.Partitions})
				}
			}
			out, code, err := c.fetchGroup(ctx, req.Version, rg.Group, topics, rg.MemberID, rg.MemberEpoch, req.RequireStable)
			if err != nil {
				return nil, err
			}
			g := kmsg.NewOffsetFetchResponseGroup()
			g.Group = rg.Group
			g.ErrorCode = code
			g.Topics = out
			resp.Groups = append(resp.Groups, g)
		}
		return resp, nil
	}
	var topics []fetchTopic
	if req.Topics != nil || req.Version < 2 {
		topics = []fetchTopic{}
		for _, t := range req.Topics {
			topics = append(topics, fetchTopic{name: t.Topic, partitions: t.Partitions})
		}
	}
	out, code, err := c.fetchGroup(ctx, req.Version, req.Group, topics, nil, -1, req.RequireStable)
	if err != nil {
		return nil, err
	}
	if code != 0 && req.Version < 2 {
		// v0–v1 have no group-level error: Kafka puts it on each partition.
		for _, t := range topics {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = t.name
			for _, p := range t.partitions {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset, rp.ErrorCode = p, -1, code
				empty := ""
				rp.Metadata = &empty
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	resp.ErrorCode = code
	for _, t := range out {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata, rp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// fetchGroup returns one group's offsets (all of them when topics is nil)
// or a group-level error code.
//
// With RequireStable (v7+) a partition that an open transaction holds a
// pending offset for answers UNSTABLE_OFFSET_COMMIT, as Kafka's does.
// memberID/memberEpoch (v9+) are checked against KIP-848 groups.
func (c *Coordinator) fetchGroup(ctx context.Context, version int16, groupID string, topics []fetchTopic, memberID *string, memberEpoch int32, requireStable bool) ([]kmsg.OffsetFetchResponseGroupTopic, int16, error) {
	if groupID == "" && version >= 8 {
		return nil, kerr.InvalidGroupID.Code, nil
	}
	s, code := c.lookup(groupID)
	if code != 0 {
		return nil, code, nil
	}
	type result struct {
		topics []kmsg.OffsetFetchResponseGroupTopic
		code   int16
	}
	r, err := await(ctx, s, func(reply func(result)) {
		if g := s.groups[groupID]; g != nil && g.sg != nil && memberID != nil {
			if m := g.sg.members[*memberID]; m == nil {
				reply(result{code: errUnknownMember})
				return
			} else if m.epoch != memberEpoch {
				reply(result{code: kerr.StaleMemberEpoch.Code})
				return
			}
		}
		if g := s.groups[groupID]; g != nil && g.cg != nil && memberID != nil {
			m := g.cg.members[*memberID]
			if m == nil {
				reply(result{code: errUnknownMember})
				return
			}
			if m.epoch != memberEpoch {
				reply(result{code: kerr.StaleMemberEpoch.Code})
				return
			}
		}
		t, code := s.offsetFetch(version, groupID, topics, requireStable)
		reply(result{t, code})
	}, func() result { return result{code: errNotCoordinator} })
	return r.topics, r.code, err
}

// offsetFetch reads committed offsets. Only committed writes are visible:
// offsets whose append is still in flight are not (Kafka's pending offsets).
// REQUIRES: shard event.
func (s *shard) offsetFetch(version int16, groupID string, topics []fetchTopic, requireStable bool) ([]kmsg.OffsetFetchResponseGroupTopic, int16) {
	g := s.groups[groupID]
	byID := version >= 10
	partResp := func(p int32, e *offsetEntry) kmsg.OffsetFetchResponseGroupTopicPartition {
		rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
		rp.Partition = p
		md := ""
		rp.Metadata = &md
		rp.Offset = -1
		if e != nil {
			rp.Offset = e.offset
			rp.LeaderEpoch = e.leaderEpoch
			md = e.metadata
		}
		return rp
	}
	var out []kmsg.OffsetFetchResponseGroupTopic
	if topics == nil {
		if g == nil {
			return []kmsg.OffsetFetchResponseGroupTopic{}, 0
		}
		names := make([]string, 0, len(g.offsets))
		for name := range g.offsets {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			rt := kmsg.NewOffsetFetchResponseGroupTopic()
			rt.Topic = name
			ps := g.offsets[name]
			parts := make([]int32, 0, len(ps))
			for p := range ps {
				parts = append(parts, p)
			}
			slices.Sort(parts)
			for _, p := range parts {
				if byID && rt.TopicID == [16]byte{} {
					rt.TopicID = ps[p].topicID
				}
				rp := partResp(p, ps[p])
				if requireStable && s.hasPendingTxnOffset(groupID, name, p) {
					rp.Offset, rp.ErrorCode = -1, kerr.UnstableOffsetCommit.Code
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			if byID {
				if s.cfg.Topics == nil {
					continue
				}
				id, _, ok := s.cfg.Topics.TopicByName(name)
				if !ok {
					continue // deleted topic: it has no ID to report
				}
				rt.TopicID = id
			}
			out = append(out, rt)
		}
		return out, 0
	}
	for _, t := range topics {
		rt := kmsg.NewOffsetFetchResponseGroupTopic()
		rt.Topic, rt.TopicID = t.name, t.id
		name := t.name
		var code int16
		if byID {
			name, _, _, code = s.resolveTopic(true, "", t.id)
		}
		for _, p := range t.partitions {
			var e *offsetEntry
			if g != nil && code == 0 {
				e = g.offsets[name][p]
			}
			rp := partResp(p, e)
			rp.ErrorCode = code
			if code == 0 && requireStable && s.hasPendingTxnOffset(groupID, name, p) {
				rp.Offset, rp.ErrorCode = -1, kerr.UnstableOffsetCommit.Code
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		out = append(out, rt)
	}
	return out, 0
}

// OffsetDelete handles OffsetDelete (key 47) v0.
func (c *Coordinator) OffsetDelete(ctx context.Context, req *kmsg.OffsetDeleteRequest) (*kmsg.OffsetDeleteResponse, error) {
	errResp := func(code int16) *kmsg.OffsetDeleteResponse {
		r := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
		r.ErrorCode = code
		return r
	}
	return onGroupShard(ctx, c, req.Group, errResp, func(s *shard, reply func(*kmsg.OffsetDeleteResponse)) {
		s.offsetDelete(req, reply)
	})
}

func (s *shard) offsetDelete(req *kmsg.OffsetDeleteRequest, reply func(*kmsg.OffsetDeleteResponse)) {
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	g := s.groups[req.Group]
	if g == nil || g.state == groupDead {
		resp.ErrorCode = kerr.GroupIDNotFound.Code
		reply(resp)
		return
	}
	var subscribed map[string]bool // nil: not known, treat every topic as subscribed
	if g.sg != nil && len(g.sg.members) > 0 && g.sg.topology != nil {
		subscribed = g.sg.topology.inputTopics()
	} else if g.cg != nil && len(g.cg.members) > 0 {
		subscribed = make(map[string]bool)
		for _, t := range s.subscribedTopics(g.cg) {
			subscribed[t.name] = true
		}
		for _, m := range g.cg.members {
			for _, t := range m.meta.subscribedTopics {
				subscribed[t] = true
			}
		}
	} else if g.state != groupEmpty {
		if g.protocolType != "consumer" {
			resp.ErrorCode = kerr.NonEmptyGroup.Code
			reply(resp)
			return
		}
		subscribed = g.subscribedTopics()
	}
	var recs []record
	var deletes []topicPartition
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition = p.Partition
			if !g.isEmpty() && (subscribed == nil || subscribed[t.Topic]) {
				rp.ErrorCode = kerr.GroupSubscribedToTopic.Code
			} else if _, ok := g.offsets[t.Topic][p.Partition]; ok {
				recs = append(recs, offsetTombstone(g.id, t.Topic, p.Partition))
				deletes = append(deletes, topicPartition{t.Topic, p.Partition})
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	s.write(recs, func(code int16) {
		if code != 0 {
			resp.ErrorCode = code
			resp.Topics = nil
			reply(resp)
			return
		}
		for _, tp := range deletes {
			g.deleteOffset(tp.topic, tp.partition)
		}
		reply(resp)
	})
}

// subscribedTopics parses the consumer protocol subscriptions of the members
// for the selected protocol; nil if any cannot be parsed (then every topic
// counts as subscribed, the safe answer).
func (g *group) subscribedTopics() map[string]bool {
	out := make(map[string]bool)
	for _, m := range g.members {
		md := m.metadataFor(g.protocol)
		if md == nil && len(m.protocols) > 0 {
			md = m.protocols[0].metadata
		}
		var cm kmsg.ConsumerMemberMetadata
		if err := cm.ReadFrom(md); err != nil {
			return nil
		}
		for _, t := range cm.Topics {
			out[t] = true
		}
	}
	return out
}

// expireOffsets removes offsets past offsets.retention.minutes, as Kafka's
// periodic cleanup: for a group with a protocol, only while it is Empty, and
// counted from when it became empty; for a simple group, counted from each
// commit. An explicit expire timestamp (OffsetCommit v2–v4) wins. An empty
// group left without offsets is deleted. REQUIRES: shard event.
func (s *shard) expireOffsets() {
	now := s.now().UnixMilli()
	retention := s.cfg.OffsetsRetention.Milliseconds()
	for _, g := range s.groups {
		if g.state != groupEmpty || !g.isEmpty() {
			continue
		}
		var recs []record
		var expired []topicPartition
		for topic, ps := range g.offsets {
			for p, e := range ps {
				tp := topicPartition{topic, p}
				if g.pendingCommits[tp] > 0 {
					continue
				}
				var exp bool
				switch {
				case e.expireTimestamp >= 0:
					exp = now >= e.expireTimestamp
				case g.protocolType != "":
					exp = now >= max(g.stateTime.UnixMilli(), 0)+retention
				default:
					exp = now >= e.commitTimestamp+retention
				}
				if exp {
					recs = append(recs, offsetTombstone(g.id, topic, p))
					expired = append(expired, tp)
				}
			}
		}
		dropGroup := len(expired) == g.numOffsets() && len(g.pendingCommits) == 0 && len(g.pending) == 0
		if dropGroup {
			recs = append(recs, g.deletionRecords()...)
			g.transition(groupDead)
		}
		if len(recs) == 0 {
			continue
		}
		g := g
		s.write(recs, func(code int16) {
			if code != 0 {
				if g.state == groupDead {
					g.transition(groupEmpty)
				}
				return
			}
			for _, tp := range expired {
				g.deleteOffset(tp.topic, tp.partition)
			}
			if dropGroup && s.groups[g.id] == g {
				delete(s.groups, g.id)
			}
		})
		s.c.log.Debug("expired offsets", "group", g.id, "offsets", len(expired), "groupRemoved", dropGroup)
	}
}

// commitPartitionError is the per-partition check OffsetCommit and TxnOffsetCommit share: the
// topic's resolution error, a partition outside a known topic, metadata over
// offset.metadata.max.bytes; 0 when the commit may be stored.
func (s *shard) commitPartitionError(topicCode int16, known bool, numPartitions, partition int32, metadata *string) int16 {
	switch {
	case topicCode != 0:
		return topicCode
	case known && (partition < 0 || partition >= numPartitions):
		return kerr.UnknownTopicOrPartition.Code
	case metadata != nil && len(*metadata) > s.cfg.OffsetMetadataMaxBytes:
		return kerr.OffsetMetadataTooLarge.Code
	}
	return 0
}
