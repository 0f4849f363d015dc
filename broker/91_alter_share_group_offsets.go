package broker

// AlterShareGroupOffsets, key 91: v0 (KIP-932), and DeleteShareGroupOffsets, key 92: v0.
// Both change an empty share group only (NON_EMPTY_GROUP otherwise, as Kafka answers): Alter
// starts each named partition's share partition afresh at the given start offset (a group that
// does not exist yet is created empty, so an offset can be set before the first consumer
// starts): InitializeShareGroupState with the next state epoch, so a stale copy of the old state
// is fenced, and the share partition reloads from it; Delete forgets the group's share
// partitions of the named topics and their persisted state, so the next fetch starts them from
// share.auto.offset.reset again.

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
	registerSync(91, 0, 0, func(b *Broker, ctx context.Context, conn *wire.ConnInfo, req *kmsg.AlterShareGroupOffsetsRequest) (kmsg.Response, error) {
		if b.shareGroupDenied(conn, authz.OpRead, req.GroupID) {
			resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
			resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
			return resp, nil
		}
		return b.shares.alterOffsets(ctx, req), nil
	})
	registerSync(92, 0, 0, func(b *Broker, ctx context.Context, conn *wire.ConnInfo, req *kmsg.DeleteShareGroupOffsetsRequest) (kmsg.Response, error) {
		if b.shareGroupDenied(conn, authz.OpDelete, req.GroupID) {
			resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
			resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
			return resp, nil
		}
		return b.shares.deleteOffsets(ctx, req), nil
	})
}

func (sg *shareGroups) alterOffsets(ctx context.Context, req *kmsg.AlterShareGroupOffsetsRequest) *kmsg.AlterShareGroupOffsetsResponse {
	resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	if req.GroupID == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp
	}
	im := sg.b.ctrl.Image()
	type initAt struct {
		key   sharePartitionKey
		start int64
		code  *int16
	}
	var inits []initAt
	sg.mu.Lock()
	if g := sg.mu.groups.Get(req.GroupID); g != nil && g.State() != "Empty" {
		sg.mu.Unlock()
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
				inits = append(inits, initAt{key: sharePartitionKey{req.GroupID, controller.TopicID(info.ID), p.Partition}, start: p.StartOffset})
			}
			t.Partitions = append(t.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, t)
	}
	sg.mu.Unlock()
	// The codes, now that the response's slices no longer grow.
	i := 0
	for ti := range resp.Topics {
		for pi := range resp.Topics[ti].Partitions {
			rp := &resp.Topics[ti].Partitions[pi]
			if i < len(inits) && rp.ErrorCode == 0 && resp.Topics[ti].TopicID == [16]byte(inits[i].key.topicID) && rp.Partition == inits[i].key.partition {
				inits[i].code = &rp.ErrorCode
				i++
			}
		}
	}
	for _, in := range inits {
		if sg.inMemory {
			if sp, err := share.NewPartition(sg.partCfg, in.start); err == nil {
				sg.mu.Lock()
				sg.mu.partitions[in.key] = sp
				sg.mu.Unlock()
			}
			continue
		}
		cur := sg.b.persistRead(ctx, in.key.coordinatorKey(), -1)
		code := cur.ErrorCode
		if code == 0 {
			code = sg.b.persistInitialize(ctx, in.key.coordinatorKey(), cur.StateEpoch+1, in.start)
		}
		if code == 0 {
			sg.mu.Lock()
			sg.dropLocked(in.key) // the next fetch loads the new state
			sg.mu.known[in.key] = true
			sg.mu.Unlock()
		}
		if in.code != nil {
			*in.code = code
		}
	}
	return resp
}

func (sg *shareGroups) deleteOffsets(ctx context.Context, req *kmsg.DeleteShareGroupOffsetsRequest) *kmsg.DeleteShareGroupOffsetsResponse {
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	im := sg.b.ctrl.Image()
	var deleted []sharePartitionKey
	defer func() {
		for _, key := range deleted {
			sg.b.persistDelete(ctx, key.coordinatorKey())
		}
	}()
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
				sg.dropLocked(key)
				deleted = append(deleted, key)
			}
		}
		for key := range sg.mu.known {
			if key.group == req.GroupID && key.topicID == info.ID {
				delete(sg.mu.known, key)
				deleted = append(deleted, key)
			}
		}
		for _, k := range sg.b.shareCoord.Keys() {
			if k.Group == req.GroupID && k.TopicID == [16]byte(info.ID) {
				deleted = append(deleted, sharePartitionKey{k.Group, controller.TopicID(k.TopicID), k.Partition})
			}
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}
