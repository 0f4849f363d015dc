package broker

// DescribeShareGroupOffsets, key 90: v0–v1 (KIP-932; v1 adds each partition's lag, KIP-1226).
// For each share group, per partition, the share-partition start offset (SPSO) and the lag: the
// records between the SPSO and the high watermark that are not yet acknowledged or archived.
// A partition the group has never fetched has StartOffset -1 and Lag -1, as in Kafka; no
// topics in the request means every partition the group has fetched. The state is this node's
// in-memory share partitions (share_groups.go), or, for one not in memory, its persisted state
// (ReadShareGroupState through the persister). An unknown group is GROUP_ID_NOT_FOUND.

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/authz"
	"sluice/controller"
	"sluice/wire"
)

func init() {
	registerSync(90, 0, 1, func(b *Broker, ctx context.Context, conn *wire.ConnInfo, req *kmsg.DescribeShareGroupOffsetsRequest) (kmsg.Response, error) {
		resp := b.shares.describeOffsets(req, func(group string) bool { return b.shareGroupDenied(conn, authz.OpDescribe, group) })
		b.shares.describePersisted(ctx, resp)
		return resp, nil
	})
}

func (sg *shareGroups) describeOffsets(req *kmsg.DescribeShareGroupOffsetsRequest, denied func(group string) bool) *kmsg.DescribeShareGroupOffsetsResponse {
	resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	im := sg.b.ctrl.Image()
	sg.mu.Lock()
	defer sg.mu.Unlock()
	for _, rg := range req.Groups {
		g := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		g.GroupID = rg.GroupID
		if denied(rg.GroupID) {
			g.ErrorCode = kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, g)
			continue
		}
		if sg.mu.groups.Get(rg.GroupID) == nil {
			g.ErrorCode = kerr.GroupIDNotFound.Code
			msg := "Group " + rg.GroupID + " not found."
			g.ErrorMessage = &msg
			resp.Groups = append(resp.Groups, g)
			continue
		}
		topics := rg.Topics
		if topics == nil {
			// Every partition the group has fetched, by topic name.
			byTopic := make(map[string][]int32)
			seen := make(map[sharePartitionKey]bool)
			for key := range sg.mu.partitions {
				if t := im.TopicsByID[key.topicID]; key.group == rg.GroupID && t != nil {
					byTopic[t.Name] = append(byTopic[t.Name], key.partition)
					seen[key] = true
				}
			}
			for key := range sg.mu.known { // started or initialized here, not in memory
				if t := im.TopicsByID[key.topicID]; key.group == rg.GroupID && t != nil && !seen[key] {
					byTopic[t.Name] = append(byTopic[t.Name], key.partition)
					seen[key] = true
				}
			}
			for _, k := range sg.b.shareCoord.Keys() { // persisted here, not in memory
				key := sharePartitionKey{k.Group, controller.TopicID(k.TopicID), k.Partition}
				if t := im.TopicsByID[key.topicID]; key.group == rg.GroupID && t != nil && !seen[key] {
					byTopic[t.Name] = append(byTopic[t.Name], key.partition)
				}
			}
			for name, ps := range byTopic {
				sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
				topics = append(topics, kmsg.DescribeShareGroupOffsetsRequestGroupTopic{Topic: name, Partitions: ps})
			}
			sort.Slice(topics, func(i, j int) bool { return topics[i].Topic < topics[j].Topic })
		}
		for _, rt := range topics {
			t := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
			t.Topic = rt.Topic
			info := im.Topics[rt.Topic]
			if info != nil {
				t.TopicID = info.ID
			}
			for _, p := range rt.Partitions {
				rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
				rp.Partition, rp.StartOffset, rp.LeaderEpoch, rp.Lag = p, -1, -1, -1
				if info == nil || p < 0 || int(p) >= len(info.Partitions) {
					rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
					t.Partitions = append(t.Partitions, rp)
					continue
				}
				rp.LeaderEpoch = info.Partitions[p].LeaderEpoch
				if sp := sg.mu.partitions[sharePartitionKey{rg.GroupID, controller.TopicID(info.ID), p}]; sp != nil {
					rp.StartOffset = sp.StartOffset()
					if part := sg.b.partition(rt.Topic, p); part != nil {
						hw := part.highWatermark()
						rp.Lag = max(hw-sp.StartOffset()-int64(sp.DoneInWindow()), 0)
					}
				}
				t.Partitions = append(t.Partitions, rp)
			}
			g.Topics = append(g.Topics, t)
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp
}

// describePersisted fills in, from the persister, the partitions describeOffsets found no share
// partition in memory for (StartOffset -1 without an error).
func (sg *shareGroups) describePersisted(ctx context.Context, resp *kmsg.DescribeShareGroupOffsetsResponse) {
	for gi := range resp.Groups {
		g := &resp.Groups[gi]
		if g.ErrorCode != 0 {
			continue
		}
		for ti := range g.Topics {
			t := &g.Topics[ti]
			for pi := range t.Partitions {
				rp := &t.Partitions[pi]
				if rp.ErrorCode != 0 || rp.StartOffset >= 0 {
					continue
				}
				r := sg.b.persistRead(ctx, sharePartitionKey{g.GroupID, controller.TopicID(t.TopicID), rp.Partition}.coordinatorKey(), -1)
				if r.ErrorCode != 0 || r.StartOffset < 0 {
					continue
				}
				rp.StartOffset = r.StartOffset
				if part := sg.b.partition(t.Topic, rp.Partition); part != nil {
					done := int64(0)
					if r.DeliveryCompleteCount > 0 {
						done = int64(r.DeliveryCompleteCount)
					}
					rp.Lag = max(part.highWatermark()-r.StartOffset-done, 0)
				}
			}
		}
	}
}
