package broker

// ShareGroupHeartbeat, key 76: v1 (KIP-932 share groups, GA in Kafka 4.1; v0 was the early
// access version, which Kafka 4.1+ clients no longer send).
//
// The share group coordinator (share_groups.go, coordinator/share/group.go) keeps the group in
// memory with the simple assignor: every member is given every partition of the topics it
// subscribes to, and the records of a partition are shared among them by the share partitions.
// A member that misses group.share.session.timeout.ms of heartbeats has its acquired records
// released and its share session closed. One that leaves (MemberEpoch -1) keeps both, as in
// Kafka: its session closes with a final-epoch request or its connection.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/authz"
	"sluice/coordinator/share"
	"sluice/wire"
)

func init() {
	register(76, 1, 1, func(b *Broker, ctx context.Context, w *wire.Request, respond wire.Respond) {
		req, ok := w.Body.(*kmsg.ShareGroupHeartbeatRequest)
		if !ok {
			respond(nil, errUnexpectedBody)
			return
		}
		if b.shareGroupDenied(w.Conn, authz.OpRead, req.GroupID) || b.shareTopicsDenied(w.Conn, req.SubscribedTopicNames) {
			resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
			resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
			if !b.shareGroupDenied(w.Conn, authz.OpRead, req.GroupID) {
				resp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			}
			respond(resp, nil)
			return
		}
		if b.shares.isOtherGroup(ctx, req.GroupID) {
			resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
			resp.ErrorCode = kerr.GroupIDNotFound.Code
			msg := "Group " + req.GroupID + " is not a share group."
			resp.ErrorMessage = &msg
			respond(resp, nil)
			return
		}
		respond(b.shares.heartbeat(w, req), nil)
	})
}

// isOtherGroup reports whether id is a group of another kind (classic, consumer, streams) in the
// group coordinator: a share group may not take its ID, as in Kafka, which checks the group's
// type before the member epoch. Asked only when no share group has that ID.
func (sg *shareGroups) isOtherGroup(ctx context.Context, id string) bool {
	if sg.exists(id) {
		return false
	}
	resp, err := sg.b.coord.ListGroups(ctx, kmsg.NewPtrListGroupsRequest())
	if err != nil {
		return false
	}
	for _, g := range resp.Groups {
		if g.Group == id {
			return true
		}
	}
	return false
}

func (sg *shareGroups) heartbeat(w *wire.Request, req *kmsg.ShareGroupHeartbeatRequest) *kmsg.ShareGroupHeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	client := joinClient(w)
	o := sg.b.shareGroupOverrides(req.GroupID) // share.session.timeout.ms, share.heartbeat.interval.ms
	sg.mu.Lock()
	now := sg.b.clock.Now()
	res := sg.mu.groups.Heartbeat(now, imageTopics{sg.b.ctrl}, share.HeartbeatRequest{
		Group: req.GroupID, Member: req.MemberID, MemberEpoch: req.MemberEpoch, RackID: req.RackID,
		Subscribed: req.SubscribedTopicNames, ClientID: client.ClientID, ClientHost: client.ClientHost,
		SessionTimeout: o.sessionTimeout,
	})
	// A member that leaves keeps its share session and its acquired records, as in Kafka 4.4
	// (the group coordinator does not tell the share partitions): librdkafka's share consumer
	// leaves first and then closes its session with a final-epoch ShareAcknowledge carrying its
	// last acknowledgements. The session ends with that request, with the connection, or the
	// records' locks time out.
	sg.scheduleLocked()
	sg.mu.Unlock()

	resp.ErrorCode = res.Code
	if res.Message != "" {
		msg := res.Message
		resp.ErrorMessage = &msg
	}
	if res.Code != 0 {
		return resp
	}
	member := req.MemberID
	resp.MemberID = &member
	resp.MemberEpoch = res.MemberEpoch
	resp.HeartbeatIntervalMillis = int32(sg.heartbeatInterval.Milliseconds())
	if o.heartbeatPeriod > 0 {
		resp.HeartbeatIntervalMillis = int32(o.heartbeatPeriod.Milliseconds())
	}
	if res.SendAssigned {
		a := kmsg.NewShareGroupHeartbeatResponseAssignment()
		for _, tp := range res.Assignment {
			t := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
			t.TopicID, t.Partitions = tp.TopicID, tp.Partitions
			a.TopicPartitions = append(a.TopicPartitions, t)
		}
		resp.Assignment = &a
	}
	return resp
}

// exists reports whether id is a share group on this node.
func (sg *shareGroups) exists(id string) bool {
	sg.mu.Lock()
	defer sg.mu.Unlock()
	return sg.mu.groups.Get(id) != nil
}
