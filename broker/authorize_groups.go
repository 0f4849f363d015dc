package broker

// Authorization of the group APIs (authorize.go has the table), in one place: registerGroupAPI
// calls authorizeGroupCall before the coordinator sees the request. A refused group answers the
// whole request; refused topics are taken out of the request and put back into the answer with
// TOPIC_AUTHORIZATION_FAILED, as Kafka's KafkaApis does, so the coordinator never sees them.

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/authz"
	"sluice/controller"
	"sluice/coordinator"
	"sluice/wire"
)

// authorizeGroupCall returns deny, a complete answer, when the request is refused outright;
// otherwise the request may have been narrowed to what conn may do, and post (when non-nil)
// completes the coordinator's answer with what was taken out.
func (b *Broker) authorizeGroupCall(conn *wire.ConnInfo, req kmsg.Request) (deny kmsg.Response, post func(kmsg.Response)) {
	if !b.authzOn() {
		return nil, nil
	}
	groupDenied := kerr.GroupAuthorizationFailed.Code
	switch r := req.(type) {
	case *kmsg.JoinGroupRequest:
		if !b.allowedGroup(conn, authz.OpRead, r.Group) {
			resp := r.ResponseKind().(*kmsg.JoinGroupResponse)
			resp.ErrorCode, resp.Generation = groupDenied, -1
			return resp, nil
		}
	case *kmsg.SyncGroupRequest:
		if !b.allowedGroup(conn, authz.OpRead, r.Group) {
			resp := r.ResponseKind().(*kmsg.SyncGroupResponse)
			resp.ErrorCode = groupDenied
			return resp, nil
		}
	case *kmsg.HeartbeatRequest:
		if !b.allowedGroup(conn, authz.OpRead, r.Group) {
			resp := r.ResponseKind().(*kmsg.HeartbeatResponse)
			resp.ErrorCode = groupDenied
			return resp, nil
		}
	case *kmsg.LeaveGroupRequest:
		if !b.allowedGroup(conn, authz.OpRead, r.Group) {
			resp := r.ResponseKind().(*kmsg.LeaveGroupResponse)
			resp.ErrorCode = groupDenied
			return resp, nil
		}
	case *kmsg.ConsumerGroupHeartbeatRequest:
		resp := r.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		if !b.allowedGroup(conn, authz.OpRead, r.Group) {
			resp.ErrorCode = groupDenied
			return resp, nil
		}
		for _, t := range r.SubscribedTopicNames {
			if !b.allowedTopic(conn, authz.OpDescribe, t) {
				resp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				return resp, nil
			}
		}
	case *kmsg.OffsetCommitRequest:
		return b.authorizeOffsetCommit(conn, r)
	case *kmsg.OffsetFetchRequest:
		return b.authorizeOffsetFetch(conn, r)
	case *kmsg.DescribeGroupsRequest:
		kept, denied := b.splitGroups(conn, authz.OpDescribe, r.Groups)
		if len(denied) == 0 {
			return nil, nil
		}
		r.Groups = kept
		return nil, func(resp kmsg.Response) {
			out := resp.(*kmsg.DescribeGroupsResponse)
			for _, g := range denied {
				d := kmsg.NewDescribeGroupsResponseGroup()
				d.Group, d.ErrorCode = g, groupDenied
				out.Groups = append(out.Groups, d)
			}
		}
	case *kmsg.ListGroupsRequest:
		if b.allowedCluster(conn, authz.OpDescribe) {
			return nil, nil
		}
		return nil, func(resp kmsg.Response) {
			out := resp.(*kmsg.ListGroupsResponse)
			kept := out.Groups[:0]
			for _, g := range out.Groups {
				if b.allowedGroup(conn, authz.OpDescribe, g.Group) {
					kept = append(kept, g)
				}
			}
			out.Groups = kept
		}
	case *kmsg.DeleteGroupsRequest:
		kept, denied := b.splitGroups(conn, authz.OpDelete, r.Groups)
		if len(denied) == 0 {
			return nil, nil
		}
		r.Groups = kept
		return nil, func(resp kmsg.Response) {
			out := resp.(*kmsg.DeleteGroupsResponse)
			for _, g := range denied {
				d := kmsg.NewDeleteGroupsResponseGroup()
				d.Group, d.ErrorCode = g, groupDenied
				out.Groups = append(out.Groups, d)
			}
		}
	case *kmsg.OffsetDeleteRequest:
		if !b.allowedGroup(conn, authz.OpDelete, r.Group) {
			resp := r.ResponseKind().(*kmsg.OffsetDeleteResponse)
			resp.ErrorCode = groupDenied
			return resp, nil
		}
	case *kmsg.StreamsGroupDescribeRequest:
		return b.authorizeStreamsDescribe(conn, r)
	case *kmsg.ConsumerGroupDescribeRequest:
		return b.authorizeConsumerGroupDescribe(conn, r)
	}
	return nil, nil
}

// topicName is the name of a request's topic (by ID from the versions that use IDs; "" for
// an ID this broker does not know, which is left to the coordinator).
func topicName(im *controller.Image, name string, id [16]byte) string {
	if id != ([16]byte{}) {
		return topicNameOf(im, id)
	}
	return name
}

// authorizeOffsetCommit: READ on the group, else every partition GROUP_AUTHORIZATION_FAILED;
// READ on each topic, else its partitions TOPIC_AUTHORIZATION_FAILED.
func (b *Broker) authorizeOffsetCommit(conn *wire.ConnInfo, r *kmsg.OffsetCommitRequest) (kmsg.Response, func(kmsg.Response)) {
	groupOK := b.allowedGroup(conn, authz.OpRead, r.Group)
	im := b.ctrl.Image()
	var denied []kmsg.OffsetCommitResponseTopic
	kept := r.Topics[:0:0]
	for _, t := range r.Topics {
		code := int16(0)
		if !groupOK {
			code = kerr.GroupAuthorizationFailed.Code
		} else if name := topicName(im, t.Topic, t.TopicID); name != "" && !b.allowedTopic(conn, authz.OpRead, name) {
			code = kerr.TopicAuthorizationFailed.Code
		}
		if code == 0 {
			kept = append(kept, t)
			continue
		}
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		denied = append(denied, rt)
	}
	if !groupOK {
		resp := r.ResponseKind().(*kmsg.OffsetCommitResponse)
		resp.Topics = denied
		return resp, nil
	}
	if len(denied) == 0 {
		return nil, nil
	}
	r.Topics = kept
	return nil, func(resp kmsg.Response) {
		out := resp.(*kmsg.OffsetCommitResponse)
		out.Topics = append(out.Topics, denied...)
	}
}

// authorizeOffsetFetch: DESCRIBE on each group, else the group's GROUP_AUTHORIZATION_FAILED;
// DESCRIBE on each named topic, else its partitions TOPIC_AUTHORIZATION_FAILED; a fetch of
// all a group's topics leaves out those conn may not describe.
func (b *Broker) authorizeOffsetFetch(conn *wire.ConnInfo, r *kmsg.OffsetFetchRequest) (kmsg.Response, func(kmsg.Response)) {
	im := b.ctrl.Image()
	describable := func(name string, id [16]byte) bool {
		n := topicName(im, name, id)
		return n == "" || b.allowedTopic(conn, authz.OpDescribe, n)
	}
	if r.Version < 8 {
		if !b.allowedGroup(conn, authz.OpDescribe, r.Group) {
			resp := r.ResponseKind().(*kmsg.OffsetFetchResponse)
			resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
			return resp, nil
		}
		var denied []kmsg.OffsetFetchResponseTopic
		if r.Topics != nil {
			kept := r.Topics[:0:0]
			for _, t := range r.Topics {
				if describable(t.Topic, [16]byte{}) {
					kept = append(kept, t)
					continue
				}
				rt := kmsg.NewOffsetFetchResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetFetchResponseTopicPartition()
					rp.Partition, rp.Offset, rp.LeaderEpoch, rp.ErrorCode = p, -1, -1, kerr.TopicAuthorizationFailed.Code
					rt.Partitions = append(rt.Partitions, rp)
				}
				denied = append(denied, rt)
			}
			r.Topics = kept
		}
		all := r.Topics == nil
		return nil, func(resp kmsg.Response) {
			out := resp.(*kmsg.OffsetFetchResponse)
			if all {
				kept := out.Topics[:0]
				for _, t := range out.Topics {
					if describable(t.Topic, [16]byte{}) {
						kept = append(kept, t)
					}
				}
				out.Topics = kept
			}
			out.Topics = append(out.Topics, denied...)
		}
	}
	deniedGroups := map[string]bool{}
	deniedTopics := map[string][]kmsg.OffsetFetchResponseGroupTopic{}
	allTopics := map[string]bool{}
	keptGroups := r.Groups[:0:0]
	for _, g := range r.Groups {
		if !b.allowedGroup(conn, authz.OpDescribe, g.Group) {
			deniedGroups[g.Group] = true
			continue
		}
		if g.Topics == nil {
			allTopics[g.Group] = true
		} else {
			kept := g.Topics[:0:0]
			for _, t := range g.Topics {
				if describable(t.Topic, t.TopicID) {
					kept = append(kept, t)
					continue
				}
				rt := kmsg.NewOffsetFetchResponseGroupTopic()
				rt.Topic, rt.TopicID = t.Topic, t.TopicID
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					rp.Partition, rp.Offset, rp.LeaderEpoch, rp.ErrorCode = p, -1, -1, kerr.TopicAuthorizationFailed.Code
					rt.Partitions = append(rt.Partitions, rp)
				}
				deniedTopics[g.Group] = append(deniedTopics[g.Group], rt)
			}
			g.Topics = kept
		}
		keptGroups = append(keptGroups, g)
	}
	if len(keptGroups) == 0 {
		resp := r.ResponseKind().(*kmsg.OffsetFetchResponse)
		for _, g := range r.Groups {
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group, rg.ErrorCode = g.Group, kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, rg)
		}
		return resp, nil
	}
	r.Groups = keptGroups
	return nil, func(resp kmsg.Response) {
		out := resp.(*kmsg.OffsetFetchResponse)
		for i := range out.Groups {
			g := &out.Groups[i]
			if allTopics[g.Group] {
				kept := g.Topics[:0]
				for _, t := range g.Topics {
					if describable(t.Topic, t.TopicID) {
						kept = append(kept, t)
					}
				}
				g.Topics = kept
			}
			g.Topics = append(g.Topics, deniedTopics[g.Group]...)
		}
		for name := range deniedGroups {
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group, rg.ErrorCode = name, kerr.GroupAuthorizationFailed.Code
			out.Groups = append(out.Groups, rg)
		}
	}
}

// splitGroups separates the groups conn may do op on (kept, in a new slice) from the others.
func (b *Broker) splitGroups(conn *wire.ConnInfo, op int8, groups []string) (kept, denied []string) {
	kept = groups[:0:0]
	for _, g := range groups {
		if b.allowedGroup(conn, op, g) {
			kept = append(kept, g)
		} else {
			denied = append(denied, g)
		}
	}
	return kept, denied
}

// consumerDescribeTopicsDenied is Kafka's message for a described consumer group one of whose
// members is assigned (or has as target) a topic the caller may not describe.
const consumerDescribeTopicsDenied = "The group has described topic(s) that the client is not authorized to describe."

// authorizeConsumerGroupDescribe is Kafka's KafkaApis.handleConsumerGroupDescribe: DESCRIBE on
// each group, else its GROUP_AUTHORIZATION_FAILED; then a described group any of whose members'
// current or target assignment names a topic conn may not describe is answered
// TOPIC_AUTHORIZATION_FAILED with no members, so neither the topic's name nor who owns which of
// its partitions leaks. Subscribed topic names are not checked (Kafka checks only the
// assignments); a topic deleted since it was assigned has no name and is not checked.
func (b *Broker) authorizeConsumerGroupDescribe(conn *wire.ConnInfo, r *kmsg.ConsumerGroupDescribeRequest) (kmsg.Response, func(kmsg.Response)) {
	kept, denied := b.splitGroups(conn, authz.OpDescribe, r.Groups)
	r.Groups = kept
	return nil, func(resp kmsg.Response) {
		out := resp.(*kmsg.ConsumerGroupDescribeResponse)
		for i := range out.Groups {
			g := &out.Groups[i]
			if g.ErrorCode != 0 || b.consumerAssignmentsDescribable(conn, g.Members) {
				continue
			}
			d := kmsg.NewConsumerGroupDescribeResponseGroup()
			d.Group, d.ErrorCode = g.Group, kerr.TopicAuthorizationFailed.Code
			msg := consumerDescribeTopicsDenied
			d.ErrorMessage = &msg
			d.Members = []kmsg.ConsumerGroupDescribeResponseGroupMember{}
			*g = d
		}
		for _, g := range denied {
			d := kmsg.NewConsumerGroupDescribeResponseGroup()
			d.Group, d.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
			out.Groups = append(out.Groups, d)
		}
	}
}

// consumerAssignmentsDescribable reports whether conn may describe every named topic of the
// members' current and target assignments.
func (b *Broker) consumerAssignmentsDescribable(conn *wire.ConnInfo, members []kmsg.ConsumerGroupDescribeResponseGroupMember) bool {
	for _, m := range members {
		for _, a := range [2]kmsg.Assignment{m.Assignment, m.TargetAssignment} {
			for _, tp := range a.TopicPartitions {
				if tp.Topic != "" && !b.allowedTopic(conn, authz.OpDescribe, tp.Topic) {
					return false
				}
			}
		}
	}
	return true
}

// streamsTopologyTopics are the topics a streams topology names — source, repartition sink,
// repartition source and changelog topics — which Kafka's KafkaApis requires DESCRIBE on
// (source topic regexes are not checked, as in Kafka).
func streamsTopologyTopics(t *kmsg.StreamsGroupHeartbeatRequestTopology) []string {
	if t == nil {
		return nil
	}
	var out []string
	for _, s := range t.Subtopologies {
		out = append(out, s.SourceTopics...)
		out = append(out, s.RepartitionSinkTopics...)
		for _, r := range s.RepartitionSourceTopics {
			out = append(out, r.Topic)
		}
		for _, c := range s.StateChangelogTopics {
			out = append(out, c.Topic)
		}
	}
	return out
}

// authorizeStreamsHeartbeat is Kafka's check of a StreamsGroupHeartbeat before the coordinator
// sees it: READ on the group, else GROUP_AUTHORIZATION_FAILED; DESCRIBE on every topic the
// topology names (when the heartbeat carries one), else TOPIC_AUTHORIZATION_FAILED. It returns
// the refusal, nil when the heartbeat may go on.
func (b *Broker) authorizeStreamsHeartbeat(conn *wire.ConnInfo, r *kmsg.StreamsGroupHeartbeatRequest) kmsg.Response {
	if !b.authzOn() {
		return nil
	}
	resp := r.ResponseKind().(*kmsg.StreamsGroupHeartbeatResponse)
	if !b.allowedGroup(conn, authz.OpRead, r.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp
	}
	for _, t := range streamsTopologyTopics(r.Topology) {
		if !b.allowedTopic(conn, authz.OpDescribe, t) {
			resp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			return resp
		}
	}
	return nil
}

// streamsCreateDenied returns the internal topics of a streams heartbeat conn may not create:
// none with CREATE on the cluster, else those without CREATE on the topic. As in Kafka, when
// any is refused none is created, and the heartbeat's MISSING_INTERNAL_TOPICS status says so
// (denyStreamsCreate).
func (b *Broker) streamsCreateDenied(conn *wire.ConnInfo, topics []coordinator.StreamsInternalTopic) []string {
	if !b.authzOn() || b.allowedCluster(conn, authz.OpCreate) {
		return nil
	}
	var denied []string
	for _, t := range topics {
		if !b.allowedTopic(conn, authz.OpCreate, t.Name) {
			denied = append(denied, t.Name)
		}
	}
	return denied
}

// denyStreamsCreate adds to resp's MISSING_INTERNAL_TOPICS status (or a new one) that conn
// may not create the topics denied, as Kafka's KafkaApis words it.
func denyStreamsCreate(resp *kmsg.StreamsGroupHeartbeatResponse, denied []string) {
	detail := "Unauthorized to CREATE on topics " + strings.Join(denied, ", ") + "."
	for i := range resp.Status {
		if resp.Status[i].StatusCode == streamsStatusMissingInternalTopics {
			resp.Status[i].StatusDetail += "; " + detail
			return
		}
	}
	st := kmsg.NewStreamsGroupHeartbeatResponseStatus()
	st.StatusCode, st.StatusDetail = streamsStatusMissingInternalTopics, detail
	resp.Status = append(resp.Status, st)
}

// streamsStatusMissingInternalTopics is KIP-1071's MISSING_INTERNAL_TOPICS status code.
const streamsStatusMissingInternalTopics = 3

// streamsDescribeTopicsDenied is Kafka's message for a described streams group whose topology
// names a topic the caller may not describe.
const streamsDescribeTopicsDenied = "The described group uses topics that the client is not authorized to describe."

// authorizeStreamsDescribe: DESCRIBE on each group, else its GROUP_AUTHORIZATION_FAILED; a
// described group whose topology names a topic conn may not describe is answered
// TOPIC_AUTHORIZATION_FAILED instead of its description, as Kafka does.
func (b *Broker) authorizeStreamsDescribe(conn *wire.ConnInfo, r *kmsg.StreamsGroupDescribeRequest) (kmsg.Response, func(kmsg.Response)) {
	kept, denied := b.splitGroups(conn, authz.OpDescribe, r.Groups)
	r.Groups = kept
	return nil, func(resp kmsg.Response) {
		out := resp.(*kmsg.StreamsGroupDescribeResponse)
		for i := range out.Groups {
			g := &out.Groups[i]
			if g.ErrorCode != 0 || g.Topology == nil || b.streamsTopologyDescribable(conn, g.Topology) {
				continue
			}
			d := kmsg.NewStreamsGroupDescribeResponseGroup()
			d.Group, d.ErrorCode = g.Group, kerr.TopicAuthorizationFailed.Code
			msg := streamsDescribeTopicsDenied
			d.ErrorMessage = &msg
			*g = d
		}
		for _, g := range denied {
			d := kmsg.NewStreamsGroupDescribeResponseGroup()
			d.Group, d.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
			out.Groups = append(out.Groups, d)
		}
	}
}

func (b *Broker) streamsTopologyDescribable(conn *wire.ConnInfo, t *kmsg.StreamsGroupDescribeResponseGroupTopology) bool {
	for _, s := range t.Subtopologies {
		names := append(append([]string(nil), s.SourceTopics...), s.RepartitionSinkTopics...)
		for _, r := range s.RepartitionSourceTopics {
			names = append(names, r.Topic)
		}
		for _, c := range s.StateChangelogTopics {
			names = append(names, c.Topic)
		}
		for _, n := range names {
			if !b.allowedTopic(conn, authz.OpDescribe, n) {
				return false
			}
		}
	}
	return true
}
