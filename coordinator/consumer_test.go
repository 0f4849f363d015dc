package coordinator

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var (
	topicA = [16]byte{0xA}
	topicB = [16]byte{0xB}
)

func cgHarness(t *testing.T) *harness {
	topics := fakeTopics{
		"a": {id: topicA, parts: 4},
		"b": {id: topicB, parts: 3},
	}
	h := newHarness(t, func(c *Config) { c.Topics = topics })
	h.load("cg")
	return h
}

type cgReq struct {
	member   string
	epoch    int32
	topics   []string
	owned    map[[16]byte][]int32 // nil: not sent
	assignor *string
	instance *string
}

func (h *harness) cgHeartbeat(r cgReq) *kmsg.ConsumerGroupHeartbeatResponse {
	h.t.Helper()
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = 1
	req.Group = "cg"
	req.MemberID = r.member
	req.MemberEpoch = r.epoch
	req.InstanceID = r.instance
	req.ServerAssignor = r.assignor
	req.SubscribedTopicNames = r.topics
	if r.epoch == 0 {
		req.RebalanceTimeoutMillis = 30000
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		if req.SubscribedTopicNames == nil {
			req.SubscribedTopicNames = []string{"a"}
		}
	} else if r.owned != nil {
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		for id, ps := range r.owned {
			req.Topics = append(req.Topics, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: id, Partitions: ps})
		}
	}
	resp, err := h.c.ConsumerGroupHeartbeat(ctx, JoinClient{ClientID: "cc", ClientHost: "/10.0.0.1"}, req)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp
}

// assigned renders a heartbeat's assignment ("-" when none was sent).
func assigned(r *kmsg.ConsumerGroupHeartbeatResponse) string {
	if r.Assignment == nil {
		return "-"
	}
	out := ""
	for _, t := range r.Assignment.Topics {
		out += fmt.Sprintf("%x:%v ", t.TopicID[0], t.Partitions)
	}
	return out
}

func TestConsumerGroupJoinRevokeAndRelease(t *testing.T) {
	h := cgHarness(t)
	r := h.cgHeartbeat(cgReq{member: "m1", epoch: 0})
	if r.ErrorCode != 0 || r.MemberEpoch != 1 || assigned(r) != "a:[0 1 2 3] " || r.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("m1 join: %+v %s", r, assigned(r))
	}
	// Steady heartbeat: nothing changes, no assignment sent.
	if r = h.cgHeartbeat(cgReq{member: "m1", epoch: 1}); r.ErrorCode != 0 || r.MemberEpoch != 1 || assigned(r) != "-" {
		t.Fatalf("m1 steady: %+v %s", r, assigned(r))
	}
	// m2 joins: epoch 2; its target partitions are still owned by m1.
	r = h.cgHeartbeat(cgReq{member: "m2", epoch: 0})
	if r.ErrorCode != 0 || r.MemberEpoch != 2 || assigned(r) != "" {
		t.Fatalf("m2 join: %+v %s", r, assigned(r))
	}
	// m1 must revoke two partitions; it stays at epoch 1 meanwhile.
	r = h.cgHeartbeat(cgReq{member: "m1", epoch: 1})
	if r.MemberEpoch != 1 || assigned(r) != "a:[0 1] " {
		t.Fatalf("m1 revoke: %+v %s", r, assigned(r))
	}
	if d := h.cgDescribe(); d.State != "Reconciling" || d.Epoch != 2 || d.AssignmentEpoch != 2 {
		t.Fatalf("describe %+v", d)
	}
	// Still reporting the revoked partitions: still revoking.
	r = h.cgHeartbeat(cgReq{member: "m1", epoch: 1, owned: map[[16]byte][]int32{topicA: {0, 1, 2, 3}}})
	if r.MemberEpoch != 1 {
		t.Fatalf("m1 still revoking: %+v", r)
	}
	// m2 cannot have them yet.
	if r = h.cgHeartbeat(cgReq{member: "m2", epoch: 2}); r.MemberEpoch != 2 || assigned(r) != "-" {
		t.Fatalf("m2 waiting: %+v %s", r, assigned(r))
	}
	// m1 revoked: it moves to epoch 2.
	r = h.cgHeartbeat(cgReq{member: "m1", epoch: 1, owned: map[[16]byte][]int32{topicA: {0, 1}}})
	if r.ErrorCode != 0 || r.MemberEpoch != 2 || assigned(r) != "a:[0 1] " {
		t.Fatalf("m1 revoked: %+v %s", r, assigned(r))
	}
	// Now m2 gets the released partitions.
	r = h.cgHeartbeat(cgReq{member: "m2", epoch: 2})
	if r.MemberEpoch != 2 || assigned(r) != "a:[2 3] " {
		t.Fatalf("m2 released: %+v %s", r, assigned(r))
	}
	d := h.cgDescribe()
	if d.State != "Stable" || len(d.Members) != 2 || d.AssignorName != "uniform" || d.Members[1].Assignment.TopicPartitions[0].Topic != "a" || d.Members[0].ClientHost != "/10.0.0.1" {
		t.Fatalf("describe %+v", d)
	}

	// Errors: a stale epoch is fenced, an unknown member is unknown.
	if r = h.cgHeartbeat(cgReq{member: "m2", epoch: 7}); r.ErrorCode != kerr.FencedMemberEpoch.Code {
		t.Fatalf("fenced: %d", r.ErrorCode)
	}
	if r = h.cgHeartbeat(cgReq{member: "ghost", epoch: 1}); r.ErrorCode != errUnknownMember {
		t.Fatalf("unknown: %d", r.ErrorCode)
	}
	// The previous epoch is accepted with owned partitions that are a
	// subset of the assignment (a lost response).
	if r = h.cgHeartbeat(cgReq{member: "m1", epoch: 1, owned: map[[16]byte][]int32{topicA: {0}}}); r.ErrorCode != 0 || r.MemberEpoch != 2 {
		t.Fatalf("previous epoch: %+v", r)
	}

	// Offsets: commits carry the member epoch.
	if codes := commitCodes(h.commit("cg", 2, "m1", 9, "a", map[int32]int64{0: 5})); codes[0] != 0 {
		t.Fatalf("commit %v", codes)
	}
	// An older epoch stands for a partition held since then (KIP-1251):
	// m1 has held a-0 since epoch 1.
	if codes := commitCodes(h.commit("cg", 1, "m1", 9, "a", map[int32]int64{0: 6})); codes[0] != 0 {
		t.Fatalf("older-epoch commit %v", codes)
	}
	if codes := commitCodes(h.commit("cg", 3, "m1", 9, "a", map[int32]int64{0: 6})); codes[0] != kerr.StaleMemberEpoch.Code {
		t.Fatalf("newer-epoch commit %v", codes)
	}
	if codes := commitCodes(h.commit("cg", 2, "ghost", 9, "a", map[int32]int64{0: 6})); codes[0] != errUnknownMember {
		t.Fatalf("unknown commit %v", codes)
	}
	freq := kmsg.NewPtrOffsetFetchRequest()
	freq.Version = 9
	freq.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "cg", MemberID: str("m1"), MemberEpoch: 1, Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "a", Partitions: []int32{0}}}}}
	if fr, _ := h.c.OffsetFetch(ctx, freq); fr.Groups[0].ErrorCode != kerr.StaleMemberEpoch.Code {
		t.Fatalf("fetch with stale epoch: %+v", fr.Groups[0])
	}
	freq.Groups[0].MemberEpoch = 2
	if fr, _ := h.c.OffsetFetch(ctx, freq); fr.Groups[0].ErrorCode != 0 || fr.Groups[0].Topics[0].Partitions[0].Offset != 6 {
		t.Fatalf("fetch: %+v", fr.Groups[0])
	}

	// m2 leaves: m1 gets everything at epoch 3.
	if r = h.cgHeartbeat(cgReq{member: "m2", epoch: -1}); r.ErrorCode != 0 || r.MemberEpoch != -1 {
		t.Fatalf("leave: %+v", r)
	}
	if r = h.cgHeartbeat(cgReq{member: "m1", epoch: 2}); r.MemberEpoch != 3 || assigned(r) != "a:[0 1 2 3] " {
		t.Fatalf("after leave: %+v %s", r, assigned(r))
	}
	// The classic APIs see a group of another type.
	if r := h.joinAsync(joinSpec{group: "cg", version: 5}).wait(t); r.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("classic join into consumer group: %d", r.ErrorCode)
	}
	lr := kmsg.NewPtrListGroupsRequest()
	lr.Version = 5
	if l, _ := h.c.ListGroups(ctx, lr); len(l.Groups) != 1 || l.Groups[0].GroupType != "consumer" || l.Groups[0].GroupState != "Stable" {
		t.Fatalf("list %+v", l.Groups)
	}
}

func (h *harness) cgDescribe() kmsg.ConsumerGroupDescribeResponseGroup {
	h.t.Helper()
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Version = 1
	req.Groups = []string{"cg"}
	r, err := h.c.ConsumerGroupDescribe(ctx, req)
	if err != nil {
		h.t.Fatal(err)
	}
	return r.Groups[0]
}

func TestConsumerGroupSessionExpiryAndRestart(t *testing.T) {
	h := cgHarness(t)
	h.cgHeartbeat(cgReq{member: "m1", epoch: 0, topics: []string{"a", "b"}})
	h.cgHeartbeat(cgReq{member: "m2", epoch: 0, topics: []string{"a", "b"}})
	// Converge: m1 revokes what the target moved to m2, m2 picks it up.
	r := h.cgHeartbeat(cgReq{member: "m1", epoch: 1})
	var keep map[[16]byte][]int32 = map[[16]byte][]int32{}
	for _, tp := range r.Assignment.Topics {
		keep[tp.TopicID] = tp.Partitions
	}
	r = h.cgHeartbeat(cgReq{member: "m1", epoch: 1, owned: keep})
	if r.MemberEpoch != 2 {
		t.Fatalf("m1 %+v", r)
	}
	r = h.cgHeartbeat(cgReq{member: "m2", epoch: 2})
	if d := h.cgDescribe(); d.State != "Stable" {
		t.Fatalf("not stable: %+v", d)
	}
	total := 0
	for _, m := range h.cgDescribe().Members {
		n := 0
		for _, tp := range m.Assignment.TopicPartitions {
			n += len(tp.Partitions)
		}
		if n < 3 || n > 4 {
			t.Fatalf("unbalanced: %+v", m.Assignment)
		}
		total += n
	}
	if total != 7 {
		t.Fatalf("assigned %d partitions", total)
	}

	before := fmt.Sprintf("%+v", h.cgDescribe())
	h.restart()
	if after := fmt.Sprintf("%+v", h.cgDescribe()); after != before {
		t.Fatalf("describe differs after restart:\n%s\n%s", before, after)
	}
	// Members carry on with their epochs.
	if r = h.cgHeartbeat(cgReq{member: "m2", epoch: 2}); r.ErrorCode != 0 || r.MemberEpoch != 2 {
		t.Fatalf("after restart %+v", r)
	}
	// Only m1 heartbeats from now on; m2's 45s session ends.
	for i := 0; i < 10; i++ {
		h.advance(5 * time.Second)
		h.cgHeartbeat(cgReq{member: "m1", epoch: 2})
	}
	if d := h.cgDescribe(); len(d.Members) != 1 || d.Epoch != 3 {
		t.Fatalf("after expiry %+v", d)
	}
	r = h.cgHeartbeat(cgReq{member: "m1", epoch: 3})
	if r.MemberEpoch != 3 {
		t.Fatalf("m1 %+v", r)
	}
	// m1 stops too: the group empties, and it can then be deleted.
	h.advance(46 * time.Second)
	if d := h.cgDescribe(); d.State != "Empty" {
		t.Fatalf("state %s", d.State)
	}
	dreq := kmsg.NewPtrDeleteGroupsRequest()
	dreq.Groups = []string{"cg"}
	if dr, _ := h.c.DeleteGroups(ctx, dreq); dr.Groups[0].ErrorCode != 0 {
		t.Fatalf("delete %d", dr.Groups[0].ErrorCode)
	}
	h.restart()
	if d := h.cgDescribe(); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("deleted group after restart %+v", d)
	}
}

func TestConsumerGroupRevocationTimeoutFences(t *testing.T) {
	h := cgHarness(t)
	h.cgHeartbeat(cgReq{member: "m1", epoch: 0})
	h.cgHeartbeat(cgReq{member: "m2", epoch: 0})
	r := h.cgHeartbeat(cgReq{member: "m1", epoch: 1})
	if r.MemberEpoch != 1 || assigned(r) != "a:[0 1] " {
		t.Fatalf("m1 revoke: %s", assigned(r))
	}
	// m1 keeps heartbeating but never revokes; after its 30s rebalance
	// timeout it is fenced and its partitions go to m2.
	epoch := int32(2)
	var got []string
	for i := 0; i < 7; i++ {
		h.advance(5 * time.Second)
		r = h.cgHeartbeat(cgReq{member: "m2", epoch: epoch})
		if r.ErrorCode != 0 {
			t.Fatalf("m2 heartbeat %d", r.ErrorCode)
		}
		epoch = r.MemberEpoch
		got = append(got, assigned(r))
	}
	if r = h.cgHeartbeat(cgReq{member: "m1", epoch: 1}); r.ErrorCode != errUnknownMember {
		t.Fatalf("m1 should be fenced: %+v", r)
	}
	// At 30s m1 is gone: m2 moves to epoch 3 with all partitions.
	if epoch != 3 || !slices.Contains(got, "a:[0 1 2 3] ") {
		t.Fatalf("m2 epoch %d, assignments %q", epoch, got)
	}
}

func TestConsumerGroupValidation(t *testing.T) {
	h := cgHarness(t)
	for _, tc := range []struct {
		mutate func(*kmsg.ConsumerGroupHeartbeatRequest)
		want   int16
	}{
		{func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID = "" }, kerr.InvalidRequest.Code},
		{func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.RebalanceTimeoutMillis = -1 }, kerr.InvalidRequest.Code},
		{func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicNames = nil }, kerr.InvalidRequest.Code},
		{func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.ServerAssignor = str("sticky") }, kerr.UnsupportedAssignor.Code},
		{func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicRegex = str("(") }, kerr.InvalidRegularExpression.Code},
		{func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -3 }, kerr.InvalidRequest.Code},
	} {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Version = 1
		req.Group, req.MemberID, req.RebalanceTimeoutMillis = "cg", "m", 1000
		req.SubscribedTopicNames = []string{"a"}
		tc.mutate(req)
		r, _ := h.c.ConsumerGroupHeartbeat(ctx, JoinClient{}, req)
		if r.ErrorCode != tc.want {
			t.Errorf("code %d, want %d", r.ErrorCode, tc.want)
		}
	}
	// v0 lets the coordinator choose the member ID.
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = 0
	req.Group, req.RebalanceTimeoutMillis = "cg", 1000
	req.SubscribedTopicRegex = str("^[ab]$")
	req.ServerAssignor = str("range")
	r, _ := h.c.ConsumerGroupHeartbeat(ctx, JoinClient{}, req)
	if r.ErrorCode != 0 || r.MemberID == nil || *r.MemberID == "" || r.MemberEpoch != 1 || assigned(r) != "a:[0 1 2 3] b:[0 1 2] " {
		t.Fatalf("v0 regex join: %+v %s", r, assigned(r))
	}
	if d := h.cgDescribe(); d.AssignorName != "range" {
		t.Fatalf("assignor %s", d.AssignorName)
	}
}

func TestConsumerGroupStaticMember(t *testing.T) {
	h := cgHarness(t)
	r := h.cgHeartbeat(cgReq{member: "m1", epoch: 0, instance: str("i1")})
	if r.MemberEpoch != 1 {
		t.Fatalf("join %+v", r)
	}
	// Another member ID with the same instance while m1 is active.
	if r = h.cgHeartbeat(cgReq{member: "m1b", epoch: 0, instance: str("i1")}); r.ErrorCode != kerr.UnreleasedInstanceID.Code {
		t.Fatalf("duplicate instance %d", r.ErrorCode)
	}
	// m1 leaves temporarily (-2), the new process takes over its partitions
	// without a new group epoch.
	if r = h.cgHeartbeat(cgReq{member: "m1", epoch: -2, instance: str("i1")}); r.ErrorCode != 0 || r.MemberEpoch != -2 {
		t.Fatalf("static leave %+v", r)
	}
	r = h.cgHeartbeat(cgReq{member: "m1b", epoch: 0, instance: str("i1")})
	if r.ErrorCode != 0 || r.MemberEpoch != 1 || assigned(r) != "a:[0 1 2 3] " {
		t.Fatalf("static rejoin %+v %s", r, assigned(r))
	}
	if d := h.cgDescribe(); d.Epoch != 1 || len(d.Members) != 1 || d.Members[0].MemberID != "m1b" {
		t.Fatalf("describe %+v", d)
	}
}

func TestAssignors(t *testing.T) {
	topics := []topicInfo{{"a", topicA, 4}, {"b", topicB, 3}}
	both := map[string]bool{"a": true, "b": true}
	render := func(out map[string]topicPartitions) string {
		s := ""
		for _, id := range []string{"m1", "m2", "m3"} {
			if tp, ok := out[id]; ok {
				s += fmt.Sprintf("%s=%v/%v ", id, tp[topicA], tp[topicB])
			}
		}
		return s
	}
	members := []assignorMember{{id: "m1", topics: both}, {id: "m2", topics: both}}
	if got := render(assign(assignorRange, members, topics)); got != "m1=[0 1]/[0 1] m2=[2 3]/[2] " {
		t.Fatalf("range %s", got)
	}
	u := assign(assignorUniform, members, topics)
	if n1, n2 := u["m1"].count(), u["m2"].count(); n1+n2 != 7 || n1-n2 > 1 || n2-n1 > 1 {
		t.Fatalf("uniform %s", render(u))
	}
	// Sticky: a third member takes partitions without moving the others'
	// remaining ones.
	members = []assignorMember{{id: "m1", topics: both, prev: u["m1"]}, {id: "m2", topics: both, prev: u["m2"]}, {id: "m3", topics: both}}
	u3 := assign(assignorUniform, members, topics)
	for _, id := range []string{"m1", "m2"} {
		if !u3[id].subsetOf(u[id]) {
			t.Fatalf("%s moved partitions: %s -> %s", id, render(u), render(u3))
		}
	}
	counts := []int{u3["m1"].count(), u3["m2"].count(), u3["m3"].count()}
	if slices.Max(counts)-slices.Min(counts) > 1 {
		t.Fatalf("unbalanced %v", counts)
	}
	// Heterogeneous subscriptions: only subscribers get a topic.
	members = []assignorMember{{id: "m1", topics: map[string]bool{"a": true}}, {id: "m2", topics: map[string]bool{"b": true}}}
	if got := render(assign(assignorUniform, members, topics)); got != "m1=[0 1 2 3]/[] m2=[]/[0 1 2] " {
		t.Fatalf("heterogeneous %s", got)
	}
}

func FuzzDecodeConsumerRecords(f *testing.F) {
	id := "m"
	f.Add(cgKey(keyConsumerGroupMemberMetadata, "g", &id), (&cgMemberMeta{clientID: "c", subscribedTopics: []string{"a"}}).encode())
	f.Add(cgKey(keyConsumerGroupCurrentAssigment, "g", &id), (&cgCurrent{assigned: topicPartitions{topicA: {1, 2}}, pendingRevoke: topicPartitions{}}).encode())
	f.Fuzz(func(t *testing.T, key, value []byte) {
		s := newShard(New(Config{Clock: newManualClock()}), 0, nil)
		_ = s.applyConsumerRecord(key, value)
		_, _ = decodeCGMemberMeta(value)
		_, _ = decodeCGCurrent(value)
		_, _ = decodeCGTargetMember(value)
	})
}

// TestConsumerGroupCommitWithOlderEpochKIP1251 is the regression test for
// franz-go's TestGroupETL KIP-848 cases on three nodes: a member's
// OffsetCommit raced a heartbeat that had just advanced its epoch, was
// refused STALE_MEMBER_EPOCH for partitions the member still owned, and the
// client's retry half a second later had lost some of them to a rebalance
// (so the commit failed and their records were consumed twice). Kafka 4.3+
// (KIP-1251) accepts an older member epoch for partitions the member has
// held since that epoch, and refuses it for any other.
func TestConsumerGroupCommitWithOlderEpochKIP1251(t *testing.T) {
	h := cgHarness(t)
	owned := func(ps ...int32) map[[16]byte][]int32 { return map[[16]byte][]int32{topicA: ps} }
	if r := h.cgHeartbeat(cgReq{member: "m1", epoch: 0}); r.MemberEpoch != 1 || assigned(r) != "a:[0 1 2 3] " {
		t.Fatalf("m1 join: %+v %s", r, assigned(r))
	}
	// m2 joins (epoch 2); m1 must give up a-2 and a-3 and stays at epoch 1
	// until it has.
	h.cgHeartbeat(cgReq{member: "m2", epoch: 0})
	if r := h.cgHeartbeat(cgReq{member: "m1", epoch: 1, owned: owned(0, 1, 2, 3)}); r.MemberEpoch != 1 || assigned(r) != "a:[0 1] " {
		t.Fatalf("m1 revoking: %+v %s", r, assigned(r))
	}
	// m1 releases them and advances to epoch 2; a commit it sent with
	// epoch 1 just before arrives now.
	if r := h.cgHeartbeat(cgReq{member: "m1", epoch: 1, owned: owned(0, 1)}); r.MemberEpoch != 2 {
		t.Fatalf("m1 revoked: %+v", r)
	}
	if codes := commitCodes(h.commit("cg", 1, "m1", 9, "a", map[int32]int64{0: 10, 1: 11})); codes[0] != 0 || codes[1] != 0 {
		t.Fatalf("m1 commit at its previous epoch for partitions it kept: %v", codes)
	}
	// m2 receives a-2 and a-3 at epoch 2: a commit naming epoch 1 is not
	// its to make for them.
	if r := h.cgHeartbeat(cgReq{member: "m2", epoch: 2}); r.MemberEpoch != 2 || assigned(r) != "a:[2 3] " {
		t.Fatalf("m2 receives: %+v %s", r, assigned(r))
	}
	if codes := commitCodes(h.commit("cg", 1, "m2", 9, "a", map[int32]int64{2: 20})); codes[0] != kerr.StaleMemberEpoch.Code {
		t.Fatalf("m2 commit at an epoch before it held a-2: %v", codes)
	}
	// m1 no longer holds a-2: one such partition refuses the whole commit,
	// and nothing of it is written.
	if codes := commitCodes(h.commit("cg", 1, "m1", 9, "a", map[int32]int64{0: 12, 2: 21})); codes[0] != kerr.StaleMemberEpoch.Code || codes[1] != kerr.StaleMemberEpoch.Code {
		t.Fatalf("m1 commit including a partition it gave up: %v", codes)
	}
	if got := h.fetch("cg", "a", 0, 1, 2); !slices.Equal(got, []int64{10, 11, -1}) {
		t.Fatalf("committed offsets %v", got)
	}
	// v10 names topics by ID: the same check.
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version, req.Group, req.Generation, req.MemberID = 10, "cg", 1, "m1"
	req.Topics = []kmsg.OffsetCommitRequestTopic{{TopicID: topicA, Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 1, Offset: 13, LeaderEpoch: -1}}}}
	if r, err := h.c.OffsetCommit(ctx, req); err != nil || commitCodes(r)[0] != 0 {
		t.Fatalf("v10 older-epoch commit: %v %v", err, r)
	}
	// A rejoin (epoch 0) starts the member's holdings afresh.
	if r := h.cgHeartbeat(cgReq{member: "m1", epoch: 0}); r.MemberEpoch != 2 {
		t.Fatalf("m1 rejoin: %+v", r)
	}
	if codes := commitCodes(h.commit("cg", 1, "m1", 9, "a", map[int32]int64{0: 14})); codes[0] != kerr.StaleMemberEpoch.Code {
		t.Fatalf("commit at an epoch before the rejoin: %v", codes)
	}
}
