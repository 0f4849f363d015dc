package broker

// ShareGroupDescribe, key 77: v1 (KIP-932). Members with their subscriptions and assignments,
// the group and assignment epochs and the assignor ("simple"), from the in-memory share group
// coordinator (share_groups.go). A group that does not exist (or is not a share group) is
// GROUP_ID_NOT_FOUND, as Kafka answers.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/authz"
	"sluice/wire"
)

func init() {
	registerSync(77, 1, 1, func(b *Broker, _ context.Context, conn *wire.ConnInfo, req *kmsg.ShareGroupDescribeRequest) (kmsg.Response, error) {
		return b.shares.describe(req, func(group string) bool { return b.shareGroupDenied(conn, authz.OpDescribe, group) }), nil
	})
}

func (sg *shareGroups) describe(req *kmsg.ShareGroupDescribeRequest, denied func(group string) bool) *kmsg.ShareGroupDescribeResponse {
	resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	sg.mu.Lock()
	defer sg.mu.Unlock()
	for _, id := range req.GroupIDs {
		g := kmsg.NewShareGroupDescribeResponseGroup()
		g.GroupID = id
		g.AuthorizedOperations = -2147483648
		if denied(id) {
			g.ErrorCode = kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, g)
			continue
		}
		group := sg.mu.groups.Get(id)
		if group == nil {
			g.ErrorCode = kerr.GroupIDNotFound.Code
			msg := "Group " + id + " not found."
			g.ErrorMessage = &msg
			resp.Groups = append(resp.Groups, g)
			continue
		}
		g.GroupState = group.State()
		g.GroupEpoch, g.AssignmentEpoch = group.Epoch, group.Epoch
		g.Assignor = "simple"
		for _, m := range group.Members() {
			dm := kmsg.NewShareGroupDescribeResponseGroupMember()
			dm.MemberID, dm.RackID, dm.MemberEpoch = m.ID, m.RackID, m.Epoch
			dm.ClientID, dm.ClientHost = m.ClientID, m.ClientHost
			dm.SubscribedTopicNames = append([]string(nil), m.Subscribed...)
			for _, tp := range m.Assignment {
				t := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
				t.TopicID, t.Topic, t.Partitions = tp.TopicID, tp.Topic, append([]int32(nil), tp.Partitions...)
				dm.Assignment.TopicPartitions = append(dm.Assignment.TopicPartitions, t)
			}
			g.Members = append(g.Members, dm)
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp
}
