package broker

// ShareAcknowledge, key 79: v1–v2 (KIP-932; v0 was early access). v2 adds IsRenewAck (RENEW
// acknowledgements are refused INVALID_REQUEST without it) and AcquisitionLockTimeoutMillis.
//
// The session part follows Kafka's acknowledgeSessionUpdate (coordinator/share/session.go):
// epoch 0 is INVALID_SHARE_SESSION_EPOCH, a missing session SHARE_SESSION_NOT_FOUND, any other
// epoch but -1 must be the session's. Each partition's acknowledgements apply all or nothing
// (coordinator/share/partition.go) and answer INVALID_REQUEST for a malformed batch list and
// INVALID_RECORD_STATE for records not acquired by this member. Epoch -1 closes the session
// after the acknowledgements, releasing whatever the member still holds on its partitions.

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
	registerSync(79, 1, 2, func(b *Broker, ctx context.Context, conn *wire.ConnInfo, req *kmsg.ShareAcknowledgeRequest) (kmsg.Response, error) {
		return b.shares.acknowledge(ctx, conn, req), nil
	})
}

func (sg *shareGroups) acknowledge(ctx context.Context, conn *wire.ConnInfo, req *kmsg.ShareAcknowledgeRequest) *kmsg.ShareAcknowledgeResponse {
	resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
	resp.AcquisitionLockTimeoutMillis = int32(sg.partCfg.LockDuration.Milliseconds())
	group, member := derefString(req.GroupID), derefString(req.MemberID)
	if group == "" || member == "" {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	if sg.b.shareGroupDenied(conn, authz.OpRead, group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp
	}
	im := sg.b.ctrl.Image()
	sg.mu.Lock()
	out := sg.mu.sessions.Acknowledge(share.SessionKey{Group: group, Member: member}, req.ShareSessionEpoch)
	if out.Code != 0 {
		sg.mu.Unlock()
		resp.ErrorCode = out.Code
		return resp
	}
	var wake []topicPartition
	for _, t := range req.Topics {
		rt := kmsg.NewShareAcknowledgeResponseTopic()
		rt.TopicID = t.TopicID
		readable := sg.b.shareTopicReadable(conn, t.TopicID)
		for _, p := range t.Partitions {
			if !readable {
				rp := kmsg.NewShareAcknowledgeResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
				rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = -1, -1
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			batches := make([]share.AckBatch, 0, len(p.AcknowledgementBatches))
			for _, ab := range p.AcknowledgementBatches {
				batches = append(batches, share.AckBatch{FirstOffset: ab.FirstOffset, LastOffset: ab.LastOffset, Types: ackTypes(ab.AcknowledgeTypes)})
			}
			code, woke := sg.acknowledgeLocked(group, member, im, controller.TopicID(t.TopicID), p.Partition, batches, req.IsRenewAck)
			if woke != nil {
				wake = append(wake, *woke)
			}
			rp := kmsg.NewShareAcknowledgeResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = sg.currentLeader(share.TopicIDPartition{TopicID: t.TopicID, Partition: p.Partition})
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if out.Final {
		wake = append(wake, sg.closeSessionLocked(group, member, out.Session)...)
	}
	sg.scheduleLocked()
	sg.mu.Unlock()
	sg.wake(wake)
	// Durable before the answer says so.
	acked := make(map[share.TopicIDPartition]*int16)
	for i := range resp.Topics {
		rt := &resp.Topics[i]
		for j := range rt.Partitions {
			acked[share.TopicIDPartition{TopicID: rt.TopicID, Partition: rt.Partitions[j].Partition}] = &rt.Partitions[j].ErrorCode
		}
	}
	sg.persistAcked(ctx, group, acked)
	return resp
}
