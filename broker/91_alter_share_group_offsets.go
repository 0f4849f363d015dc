package broker

// AlterShareGroupOffsets, key 91: v0 (KIP-932), and DeleteShareGroupOffsets, key 92: v0.
// Both change an empty share group only (NON_EMPTY_GROUP otherwise, as Kafka answers): Alter
// starts each named partition's share partition afresh at the given start offset (a group that
// does not exist yet is created empty, so an offset can be set before the first consumer
// starts); Delete forgets the group's share partitions of the named topics, so the next fetch
// starts them from share.auto.offset.reset again. The state is this node's in-memory share
// partitions (share_groups.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/authz"
	"sluice/controller"
	"sluice/coordinator/share"
	"sluice/wire"
)

func init() {
	registerSync(91, 0, 0, func(b *Broker, _ context.Context, conn *wire.ConnInfo, req *kmsg.AlterShareGroupOffsetsRequest) (kmsg.Response, error) {
		if b.shareGroupDenied(conn, authz.OpRead, req.GroupID) {
			resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
			resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
			return resp, nil
		}
		return b.shares.alterOffsets(req), nil
	})
	registerSync(92, 0, 0, func(b *Broker, _ context.Context, conn *wire.ConnInfo, req *kmsg.DeleteShareGroupOffsetsRequest) (kmsg.Response, error) {
		if b.shareGroupDenied(conn, authz.OpDelete, req.GroupID) {
			resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
			resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
			return resp, nil
		}
		return b.shares.deleteOffsets(req), nil
	})
}

func (sg *shareGroups) alterOffsets(req *kmsg.AlterShareGroupOffsetsRequest) *kmsg.AlterShareGroupOffsetsResponse {
	resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	if req.GroupID == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp
	}
	im := sg.b.ctrl.Image()
	sg.mu.Lock()
	defer sg.mu.Unlock()
	if g := sg.mu.groups.Get(req.GroupID); g != nil && g.State() != "Empty" {
		resp.ErrorCode = kerr.NonEmptyGroup.Code
		msg := "The group " + req.GroupID + " is not empty."
		resp.ErrorMessage = &msg
		return resp
	}
	sg.mu.groups.Ensure(req.GroupID)
	for _, rt := range req.Topics {
		t := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		t.Topic = rt.Topic
		info := im.Topics[rt.Topic]
		if info != nil {
			t.TopicID = info.ID
		}
		for _, p := range rt.Partitions {
			rp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			switch {
			case info == nil || p.Partition < 0 || int(p.Partition) >= len(info.Partitions):
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case p.StartOffset < 0:
				rp.ErrorCode = kerr.InvalidRequest.Code
			default:
				sp, err := share.NewPartition(sg.partCfg, p.StartOffset)
				if err != nil {
					rp.ErrorCode = kerr.InvalidRequest.Code
					break
				}
				sg.mu.partitions[sharePartitionKey{req.GroupID, controller.TopicID(info.ID), p.Partition}] = sp
			}
			t.Partitions = append(t.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}

func (sg *shareGroups) deleteOffsets(req *kmsg.DeleteShareGroupOffsetsRequest) *kmsg.DeleteShareGroupOffsetsResponse {
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	im := sg.b.ctrl.Image()
	sg.mu.Lock()
	defer sg.mu.Unlock()
	g := sg.mu.groups.Get(req.GroupID)
	switch {
	case g == nil:
		resp.ErrorCode = kerr.GroupIDNotFound.Code
		return resp
	case g.State() != "Empty":
		resp.ErrorCode = kerr.NonEmptyGroup.Code
		return resp
	}
	for _, rt := range req.Topics {
		t := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		t.Topic = rt.Topic
		info := im.Topics[rt.Topic]
		if info == nil {
			t.ErrorCode = kerr.UnknownTopicOrPartition.Code
			resp.Topics = append(resp.Topics, t)
			continue
		}
		t.TopicID = info.ID
		for key := range sg.mu.partitions {
			if key.group == req.GroupID && key.topicID == info.ID {
				delete(sg.mu.partitions, key)
			}
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}
