package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// retryWhileLoading sends req until its answer's code is not NOT_COORDINATOR or
// COORDINATOR_LOAD_IN_PROGRESS (the group's coordinator shard loads after startup).
func retryWhileLoading[Resp kmsg.Response](ctx context.Context, t *testing.T, tb *testBroker, req kmsg.Request, code func(Resp) int16) Resp {
	t.Helper()
	for {
		resp := tb.direct(t, req).(Resp)
		c := code(resp)
		if c != kerr.NotCoordinator.Code && c != kerr.CoordinatorLoadInProgress.Code {
			return resp
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: the coordinator never loaded: %v", kmsg.NameForKey(req.Key()), kerr.ErrorForCode(c))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestGroupIDClash: group IDs are one namespace, as in Kafka 4.4. A classic JoinGroup for a
// share group's ID is answered INCONSISTENT_GROUP_PROTOCOL, a ConsumerGroupHeartbeat
// GROUP_ID_NOT_FOUND "Group <id> is not a consumer group" and a StreamsGroupHeartbeat
// GROUP_ID_NOT_FOUND "Group <id> is not a streams group." (all took the ID before: the
// coordinator did not know the share groups); a ShareGroupHeartbeat for a classic or KIP-848
// consumer group's ID is GROUP_ID_NOT_FOUND "Group <id> is not a share group.", whatever the
// member epoch.
func TestGroupIDClash(t *testing.T) {
	tb := startTestBroker(t, nil, streamsVersions())
	tb.createTopic(t, "clash", 1, nil)
	ctx := testContext(t)
	// FindCoordinator loads the groups' coordinator shards.
	if err := tb.Admin.FindGroupCoordinators(ctx, "sg", "kg", "cg").Error(); err != nil {
		t.Fatal(err)
	}

	joinReq := func(group string) *kmsg.JoinGroupRequest {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Version = 9
		req.Group, req.ProtocolType = group, "consumer"
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 30000, 30000
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = "range", []byte{}
		req.Protocols = append(req.Protocols, p)
		return req
	}
	consumerHeartbeat := func(group string) *kmsg.ConsumerGroupHeartbeatRequest {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Version = 1
		req.Group, req.MemberID, req.RebalanceTimeoutMillis = group, "m1", 30000
		req.SubscribedTopicNames = []string{"clash"}
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		return req
	}
	joinCode := func(r *kmsg.JoinGroupResponse) int16 { return r.ErrorCode }
	hbCode := func(r *kmsg.ConsumerGroupHeartbeatResponse) int16 { return r.ErrorCode }

	// A share group, then consumer groups of both protocols naming it.
	sg := &shareClient{t: t, tb: tb, group: "sg", member: "s1"}
	joined := sg.heartbeat(0, "clash")
	if joined.ErrorCode != 0 {
		t.Fatalf("share group heartbeat: %v", kerr.ErrorForCode(joined.ErrorCode))
	}
	if r := retryWhileLoading(ctx, t, tb, joinReq("sg"), joinCode); r.ErrorCode != kerr.InconsistentGroupProtocol.Code || r.MemberID != "" {
		t.Errorf("JoinGroup for share group sg: %v member %q, want INCONSISTENT_GROUP_PROTOCOL", kerr.ErrorForCode(r.ErrorCode), r.MemberID)
	}
	r := retryWhileLoading(ctx, t, tb, consumerHeartbeat("sg"), hbCode)
	if r.ErrorCode != kerr.GroupIDNotFound.Code || r.ErrorMessage == nil || *r.ErrorMessage != "Group sg is not a consumer group" {
		t.Errorf("ConsumerGroupHeartbeat for share group sg: %v %v, want GROUP_ID_NOT_FOUND \"Group sg is not a consumer group\"", kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
	}
	if r := streamsJoin(t, tb, "sg", "clash"); r.ErrorCode != kerr.GroupIDNotFound.Code || r.ErrorMessage == nil || *r.ErrorMessage != "Group sg is not a streams group." {
		t.Errorf("StreamsGroupHeartbeat for share group sg: %v %v, want GROUP_ID_NOT_FOUND \"Group sg is not a streams group.\"", kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
	}

	// A KIP-848 consumer group and a classic one, then share members naming them.
	if r := retryWhileLoading(ctx, t, tb, consumerHeartbeat("kg"), hbCode); r.ErrorCode != 0 {
		t.Fatalf("ConsumerGroupHeartbeat for kg: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := retryWhileLoading(ctx, t, tb, joinReq("cg"), joinCode); r.ErrorCode != kerr.MemberIDRequired.Code {
		t.Fatalf("JoinGroup for cg: %v, want MEMBER_ID_REQUIRED", kerr.ErrorForCode(r.ErrorCode))
	}
	for _, group := range []string{"kg", "cg"} {
		for _, epoch := range []int32{0, 1} {
			c := &shareClient{t: t, tb: tb, group: group, member: "s2"}
			r := c.heartbeat(epoch, "clash")
			if want := "Group " + group + " is not a share group."; r.ErrorCode != kerr.GroupIDNotFound.Code || r.ErrorMessage == nil || *r.ErrorMessage != want {
				t.Errorf("ShareGroupHeartbeat epoch %d for consumer group %s: %v %v, want GROUP_ID_NOT_FOUND %q", epoch, group, kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage, want)
			}
		}
	}
	// The share group is still a share group.
	if r := sg.heartbeat(joined.MemberEpoch, "clash"); r.ErrorCode != 0 {
		t.Errorf("share group heartbeat after the refusals: %v", kerr.ErrorForCode(r.ErrorCode))
	}
}
