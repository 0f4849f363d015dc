package broker

// Retention "until consumed" (sluice's own; no Kafka broker has it): a topic with
// retention.consumed.groups=g1,g2 loses a segment as soon as every named group has committed
// an offset at or past the segment's end, as SQS deletes a message once it is processed. Time
// and size retention (retention.ms, retention.bytes) still apply: they delete data whether it
// was consumed or not, so they remain upper bounds of what the topic keeps. Like them it
// applies only when cleanup.policy contains delete.
//
// The leader decides. Every retention pass (log.retention.check.interval.ms) it asks each
// named group's coordinator for the group's committed offsets on the topics naming it — an
// OffsetFetch served by the local coordinator when this node leads the group's
// __consumer_offsets partition, else sent to that node over the inter-broker listener — and
// moves the log start to the end of the last segment every group has consumed (never past the
// high watermark). Followers follow the leader's log start as they do for any retention
// (replica.FollowLeaderLogStart), so the decision is made once, from the coordinator's state.
// When a coordinator cannot be asked (moving, loading, unreachable) its groups hold the data
// until the next pass: the failure only delays deletion.
//
// A named group with no committed offset for a partition holds all of it
// (retention.consumed.require.commit=true, the default) or is left out
// (retention.consumed.require.commit=false; if no named group has committed, nothing holds
// the partition). A consumer that rewinds below the new log start gets OFFSET_OUT_OF_RANGE
// as after any retention.
//
// What each group holds back is kept per partition for operators (ConsumedRetentionHolds,
// the sluice_retention_consumed_held_bytes metric): the bytes of the closed segments below
// the high watermark that the group has not consumed, which would go if it caught up.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
	"sluice/logstore"
)

// consumedRetentionTimeout bounds one pass's OffsetFetch round trips; a group whose
// coordinator does not answer in time holds its topics until the next pass.
const consumedRetentionTimeout = 10 * time.Second

// ConsumedRetentionHold is what one named group holds back on one partition this node leads.
type ConsumedRetentionHold struct {
	Topic     string
	Partition int32
	Group     string
	// Committed is the group's committed offset for the partition; -1 when it has none.
	Committed int64
	// HeldBytes are the bytes of the closed segments below the high watermark that end past
	// Committed: what retention.consumed.groups keeps because of this group.
	HeldBytes int64
	// Unknown: the group's coordinator could not be asked this pass; the group holds every
	// closed segment until it can be.
	Unknown bool
}

// consumedRetentionState is what the last retention pass found.
type consumedRetentionState struct {
	mu sync.Mutex
	// holds are the last pass's holds, sorted by topic, partition and group. Guarded by mu.
	holds []ConsumedRetentionHold
}

// ConsumedRetentionHolds returns, for every partition this node leads whose topic sets
// retention.consumed.groups, what each named group held back at the last retention pass.
func (b *Broker) ConsumedRetentionHolds() []ConsumedRetentionHold {
	b.consumed.mu.Lock()
	defer b.consumed.mu.Unlock()
	return slices.Clone(b.consumed.holds)
}

// consumedPlan is planConsumedRetention's decision for one partition.
type consumedPlan struct {
	// deleteBefore is the segment boundary the log start may move to; -1: nothing goes.
	deleteBefore int64
	holds        []ConsumedRetentionHold // Topic and Partition left for the caller
}

// groupCommit is one group's committed offset for a partition as the pass learnt it.
type groupCommit struct {
	offset  int64 // -1: none committed
	unknown bool  // the coordinator could not be asked
}

// planConsumedRetention decides, for a partition with segments segs (oldest first, the last
// active) and high watermark hw, how far retention.consumed.groups lets the log start move:
// to the end of the last closed segment that every holding group has consumed (a committed
// offset at or past the segment's end; the committed offset is the next record the group
// reads) and that lies below hw. A group whose coordinator could not be asked holds
// everything; one without a commit holds everything when requireCommit, else is left out.
func planConsumedRetention(segs []logstore.SegmentInfo, hw int64, groups []string, commits map[string]groupCommit, requireCommit bool) consumedPlan {
	consumed := hw
	plan := consumedPlan{deleteBefore: -1}
	holding := make([]int64, len(groups)) // per group the offset it holds from; -2: not holding
	for i, g := range groups {
		c, ok := commits[g]
		switch {
		case !ok || c.unknown:
			holding[i] = -1
		case c.offset < 0 && !requireCommit:
			holding[i] = -2
		default:
			holding[i] = c.offset // -1 when never committed: holds everything
		}
		if holding[i] != -2 {
			consumed = min(consumed, holding[i])
		}
	}
	for _, s := range segs {
		if s.Active || s.EndOffset > consumed {
			break
		}
		plan.deleteBefore = s.EndOffset
	}
	for i, g := range groups {
		c := commits[g]
		h := ConsumedRetentionHold{Group: g, Committed: c.offset, Unknown: c.unknown}
		if _, ok := commits[g]; !ok {
			h.Committed, h.Unknown = -1, true
		}
		if holding[i] != -2 {
			for _, s := range segs {
				if !s.Active && s.EndOffset <= hw && s.EndOffset > holding[i] && s.EndOffset > plan.deleteBefore {
					h.HeldBytes += s.Size
				}
			}
		}
		plan.holds = append(plan.holds, h)
	}
	return plan
}

// enforceConsumedRetention is the retention.consumed.groups part of a retention pass, for the
// partitions among parts that this node leads.
func (b *Broker) enforceConsumedRetention(parts []*Partition) {
	type ledPartition struct {
		p      *Partition
		groups []string
	}
	var led []ledPartition
	topicsOf := map[string]map[string]bool{} // group → topics naming it
	for _, p := range parts {
		s := p.settings.Load()
		if s == nil || !s.CleanupDelete || s.RetentionConsumedGroups == "" {
			continue
		}
		groups := s.ConsumedGroups()
		if groups == nil || !p.replica.Snapshot().Leader || b.offlineCause(p.tp) != nil {
			continue
		}
		led = append(led, ledPartition{p, groups})
		for _, g := range groups {
			if topicsOf[g] == nil {
				topicsOf[g] = map[string]bool{}
			}
			topicsOf[g][p.tp.topic] = true
		}
	}
	if len(led) == 0 {
		b.consumed.mu.Lock()
		b.consumed.holds = nil
		b.consumed.mu.Unlock()
		return
	}
	ctx, cancel := b.closingContext(consumedRetentionTimeout)
	defer cancel()
	committed := map[string]map[topicPartition]int64{} // group → committed offsets (≥ 0 only)
	failed := map[string]bool{}
	for g, topics := range topicsOf {
		offsets, err := b.fetchCommittedOffsets(ctx, g, slices.Sorted(maps.Keys(topics)))
		if err != nil {
			b.logger.Warn("retention.consumed.groups: cannot read a group's committed offsets; it holds its topics until the next pass",
				"group", g, "err", err)
			failed[g] = true
			continue
		}
		committed[g] = offsets
	}
	var holds []ConsumedRetentionHold
	for _, lp := range led {
		p := lp.p
		s := p.settings.Load()
		commits := map[string]groupCommit{}
		for _, g := range lp.groups {
			if failed[g] {
				commits[g] = groupCommit{offset: -1, unknown: true}
				continue
			}
			off, ok := committed[g][p.tp]
			if !ok {
				off = -1
			}
			commits[g] = groupCommit{offset: off}
		}
		snap := p.replica.Snapshot()
		plan := planConsumedRetention(p.log.Segments(), snap.HighWatermark, lp.groups, commits, s.RetentionConsumedRequireCommit)
		if plan.deleteBefore > snap.LogStart {
			start, err := p.replica.DeleteRecordsBefore(plan.deleteBefore)
			if err != nil {
				b.logger.Warn("retention.consumed.groups: moving the log start", "partition", p.tp.String(), "err", err)
			} else {
				b.logger.Info("retention.consumed.groups: deleted segments every named group has consumed",
					"partition", p.tp.String(), "newLogStart", start)
			}
		}
		for _, h := range plan.holds {
			h.Topic, h.Partition = p.tp.topic, p.tp.partition
			holds = append(holds, h)
		}
	}
	slices.SortFunc(holds, func(x, y ConsumedRetentionHold) int {
		if c := strings.Compare(x.Topic, y.Topic); c != 0 {
			return c
		}
		if x.Partition != y.Partition {
			return int(x.Partition - y.Partition)
		}
		return strings.Compare(x.Group, y.Group)
	})
	b.consumed.mu.Lock()
	b.consumed.holds = holds
	b.consumed.mu.Unlock()
}

// fetchCommittedOffsets reads group's committed offsets on topics from the group's
// coordinator: the node leading its __consumer_offsets partition, this one or a peer. Only
// partitions with a committed offset are in the result. An error means the offsets are not
// known (the group holds its data).
func (b *Broker) fetchCommittedOffsets(ctx context.Context, group string, topics []string) (map[topicPartition]int64, error) {
	im := b.ctrl.Image()
	out := map[topicPartition]int64{}
	ot := im.Topics[offsetsTopic]
	if ot == nil {
		return out, nil // no group has ever committed anything
	}
	cp := b.coord.PartitionFor(group)
	if int(cp) >= len(ot.Partitions) {
		return nil, fmt.Errorf("group %s maps to %s-%d, which does not exist", group, offsetsTopic, cp)
	}
	leader := ot.Partitions[cp].Leader
	if leader < 0 {
		return nil, kerr.CoordinatorNotAvailable
	}
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 8
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = group
	for _, name := range topics {
		t := im.Topics[name]
		if t == nil {
			continue
		}
		rt := kmsg.NewOffsetFetchRequestGroupTopic()
		rt.Topic, rt.TopicID = name, [16]byte(t.ID) // the name up to v9, the ID from v10
		for i := range t.Partitions {
			rt.Partitions = append(rt.Partitions, int32(i))
		}
		rg.Topics = append(rg.Topics, rt)
	}
	req.Groups = append(req.Groups, rg)
	var resp *kmsg.OffsetFetchResponse
	if leader == b.nodeID {
		r, err := b.coord.OffsetFetch(ctx, req)
		if err != nil {
			return nil, err
		}
		resp = r
	} else {
		cl, err := b.peer(leader)
		if err != nil {
			return nil, err
		}
		seeds := cl.SeedBrokers() // to that node itself: its coordinator answers
		if len(seeds) == 0 {
			return nil, kerr.CoordinatorNotAvailable
		}
		r, err := req.RequestWith(ctx, seeds[0]) // kgo picks the version (v8 or later)
		if err != nil {
			return nil, err
		}
		resp = r
	}
	for _, g := range resp.Groups {
		if g.Group != group {
			continue
		}
		if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
			return nil, err
		}
		for _, t := range g.Topics {
			name := t.Topic
			if name == "" {
				if ti := im.TopicsByID[controller.TopicID(t.TopicID)]; ti != nil {
					name = ti.Name
				}
			}
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					return nil, err
				}
				if p.Offset >= 0 {
					out[topicPartition{name, p.Partition}] = p.Offset
				}
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("OffsetFetch answered without group %s", group)
}
