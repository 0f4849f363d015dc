package coordinator

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// joinNew performs the KIP-394 first join and returns the member ID handed out.
func (h *harness) joinNew(js joinSpec) string {
	h.t.Helper()
	r := h.joinAsync(js).wait(h.t)
	if r.ErrorCode != kerr.MemberIDRequired.Code || r.MemberID == "" {
		h.t.Fatalf("first join: code %d member %q", r.ErrorCode, r.MemberID)
	}
	return r.MemberID
}

// formGroup brings n dynamic members of group to Stable through the initial
// rebalance delay and returns their IDs (leader first) and the generation.
// Each member is assigned its own ID as bytes.
func (h *harness) formGroup(group string, n int) ([]string, int32) {
	h.t.Helper()
	var joins []*async[*kmsg.JoinGroupResponse]
	var ids []string
	for i := 0; i < n; i++ {
		id := h.joinNew(joinSpec{group: group})
		ids = append(ids, id)
		joins = append(joins, h.joinAsync(joinSpec{group: group, memberID: id}))
		h.waitFor(group, awaitingJoin(group, i+1))
	}
	h.advance(2 * h.cfg.GroupInitialRebalanceDelay)
	var leader string
	var gen int32
	for i, j := range joins {
		r := j.wait(h.t)
		if r.ErrorCode != 0 {
			h.t.Fatalf("join %d: code %d", i, r.ErrorCode)
		}
		leader, gen = r.LeaderID, r.Generation
		if (r.LeaderID == r.MemberID) != (len(r.Members) == n) {
			h.t.Fatalf("member %s leader %s got %d members", r.MemberID, r.LeaderID, len(r.Members))
		}
	}
	assign := make(map[string][]byte)
	for _, id := range ids {
		assign[id] = []byte(id)
	}
	var syncs []*async[*kmsg.SyncGroupResponse]
	for _, id := range ids {
		if id != leader {
			syncs = append(syncs, h.syncAsync(group, id, gen, nil))
		}
	}
	h.waitFor(group, awaitingSync(group, n-1))
	syncs = append(syncs, h.syncAsync(group, leader, gen, assign))
	for _, s := range syncs {
		r := s.wait(h.t)
		if r.ErrorCode != 0 {
			h.t.Fatalf("sync: code %d", r.ErrorCode)
		}
	}
	out := []string{leader}
	for _, id := range ids {
		if id != leader {
			out = append(out, id)
		}
	}
	return out, gen
}

func TestJoinSyncHeartbeatLeave(t *testing.T) {
	h := newHarness(t, nil)
	h.load("g")
	a := h.joinNew(joinSpec{group: "g"})
	ja := h.joinAsync(joinSpec{group: "g", memberID: a})
	h.waitFor("g", awaitingJoin("g", 1))
	if st := h.groupState("g"); st != "PreparingRebalance" {
		t.Fatalf("state %s", st)
	}
	b := h.joinNew(joinSpec{group: "g"})
	jb := h.joinAsync(joinSpec{group: "g", memberID: b})
	h.waitFor("g", awaitingJoin("g", 2))

	// The initial delay (3s) expires with a member added meanwhile: Kafka
	// waits one more delay.
	h.advance(3 * time.Second)
	select {
	case <-ja.ch:
		t.Fatal("join completed before the extended initial delay")
	default:
	}
	h.advance(3 * time.Second)
	ra, rb := ja.wait(t), jb.wait(t)
	if ra.ErrorCode != 0 || rb.ErrorCode != 0 || ra.Generation != 1 || rb.Generation != 1 {
		t.Fatalf("joins %+v %+v", ra, rb)
	}
	if ra.LeaderID != a || len(ra.Members) != 2 || len(rb.Members) != 0 || *ra.Protocol != "range" || *ra.ProtocolType != "consumer" {
		t.Fatalf("leader response %+v / follower %+v", ra, rb)
	}
	if st := h.groupState("g"); st != "CompletingRebalance" {
		t.Fatalf("state %s", st)
	}
	// Heartbeats between join and sync are fine.
	if code := h.heartbeat("g", b, 1, nil); code != 0 {
		t.Fatalf("heartbeat %d", code)
	}
	// Commits are not: the assignment is not known yet.
	if codes := commitCodes(h.commit("g", 1, b, 8, "t", map[int32]int64{0: 1})); codes[0] != errRebalanceInProgress {
		t.Fatalf("commit during CompletingRebalance: %v", codes)
	}
	sb := h.syncAsync("g", b, 1, nil)
	h.waitFor("g", awaitingSync("g", 1))
	sa := h.syncAsync("g", a, 1, map[string][]byte{a: []byte("A"), b: []byte("B")})
	if r := sa.wait(t); r.ErrorCode != 0 || string(r.MemberAssignment) != "A" || *r.Protocol != "range" {
		t.Fatalf("leader sync %+v", r)
	}
	if r := sb.wait(t); r.ErrorCode != 0 || string(r.MemberAssignment) != "B" {
		t.Fatalf("follower sync %+v", r)
	}
	if st := h.groupState("g"); st != "Stable" {
		t.Fatalf("state %s", st)
	}
	if codes := commitCodes(h.commit("g", 1, b, 8, "t", map[int32]int64{0: 1})); codes[0] != 0 {
		t.Fatalf("member commit %v", codes)
	}
	for _, tc := range []struct {
		member string
		gen    int32
		want   int16
	}{
		{a, 1, 0},
		{a, 2, errIllegalGeneration},
		{"ghost", 1, errUnknownMember},
	} {
		if code := h.heartbeat("g", tc.member, tc.gen, nil); code != tc.want {
			t.Errorf("heartbeat(%s, %d) = %d, want %d", tc.member, tc.gen, code, tc.want)
		}
	}
	for _, tc := range []struct {
		member string
		gen    int32
		want   int16
	}{
		{b, 2, errIllegalGeneration},
		{"ghost", 1, errUnknownMember},
		{"", -1, errUnknownMember}, // a simple commit to a live group
	} {
		if codes := commitCodes(h.commit("g", tc.gen, tc.member, 8, "t", map[int32]int64{0: 2})); codes[0] != tc.want {
			t.Errorf("commit(%s, %d) = %d, want %d", tc.member, tc.gen, codes[0], tc.want)
		}
	}

	// b leaves (v5 batch form); a learns of the rebalance and rejoins alone.
	lreq := kmsg.NewPtrLeaveGroupRequest()
	lreq.Version = 5
	lreq.Group = "g"
	lreq.Members = []kmsg.LeaveGroupRequestMember{{MemberID: b}, {MemberID: "ghost"}}
	lr, err := h.c.LeaveGroup(ctx, lreq)
	if err != nil {
		t.Fatal(err)
	}
	if lr.ErrorCode != 0 || lr.Members[0].ErrorCode != 0 || lr.Members[1].ErrorCode != errUnknownMember {
		t.Fatalf("leave %+v", lr)
	}
	if code := h.heartbeat("g", a, 1, nil); code != errRebalanceInProgress {
		t.Fatalf("heartbeat after leave %d", code)
	}
	if r := h.syncAsync("g", a, 1, nil).wait(t); r.ErrorCode != errRebalanceInProgress {
		t.Fatalf("sync while preparing: %d", r.ErrorCode)
	}
	ra = h.joinAsync(joinSpec{group: "g", memberID: a}).wait(t) // completes at once: everyone joined
	if ra.ErrorCode != 0 || ra.Generation != 2 || len(ra.Members) != 1 {
		t.Fatalf("rejoin %+v", ra)
	}
	// v0 leave of the last member empties the group.
	lreq = kmsg.NewPtrLeaveGroupRequest()
	lreq.Version = 0
	lreq.Group, lreq.MemberID = "g", a
	if lr, _ := h.c.LeaveGroup(ctx, lreq); lr.ErrorCode != 0 {
		t.Fatalf("v0 leave %d", lr.ErrorCode)
	}
	if st := h.groupState("g"); st != "Empty" {
		t.Fatalf("state %s", st)
	}
	// Offsets of the empty group remain.
	if got := h.fetch("g", "t", 0); got[0] != 1 {
		t.Fatalf("fetch %v", got)
	}
}

func TestJoinValidation(t *testing.T) {
	h := newHarness(t, nil)
	h.load("g")
	for _, tc := range []struct {
		js   joinSpec
		want int16
	}{
		{joinSpec{group: "g", session: time.Second}, kerr.InvalidSessionTimeout.Code},
		{joinSpec{group: "g", memberID: "stranger"}, errUnknownMember},
		{joinSpec{group: "g", version: 3, protocolType: "x", protocols: []string{}}, kerr.InconsistentGroupProtocol.Code},
	} {
		req := h.joinReq(tc.js)
		if tc.js.protocols != nil && len(tc.js.protocols) == 0 {
			req.Protocols = nil
		}
		r, err := h.c.JoinGroup(ctx, JoinClient{ClientID: "c"}, req)
		if err != nil {
			t.Fatal(err)
		}
		if r.ErrorCode != tc.want || r.Generation != -1 {
			t.Errorf("%+v: code %d, want %d", tc.js, r.ErrorCode, tc.want)
		}
	}
	if st := h.groupState("g"); st != "none" {
		t.Fatalf("failed joins left a group: %s", st)
	}
	h.formGroup("g", 1)
	// A different protocol type, or no protocol in common, is inconsistent.
	for _, js := range []joinSpec{
		{group: "g", version: 3, protocolType: "connect"},
		{group: "g", version: 3, protocols: []string{"sticky"}},
	} {
		if r := h.joinAsync(js).wait(t); r.ErrorCode != kerr.InconsistentGroupProtocol.Code {
			t.Errorf("%+v: code %d", js, r.ErrorCode)
		}
	}
	if r, _ := h.c.JoinGroup(ctx, JoinClient{}, h.joinReq(joinSpec{group: "elsewhere-unloaded"})); r.ErrorCode != errNotCoordinator && h.c.PartitionFor("elsewhere-unloaded") != h.c.PartitionFor("g") {
		t.Fatalf("unloaded partition: code %d", r.ErrorCode)
	}
}

func TestGroupMaxSize(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.GroupMaxSize = 1 })
	h.load("g")
	h.formGroup("g", 1)
	if r := h.joinAsync(joinSpec{group: "g"}).wait(t); r.ErrorCode != kerr.GroupMaxSizeReached.Code {
		t.Fatalf("code %d", r.ErrorCode)
	}
}

func TestProtocolSelectionByVote(t *testing.T) {
	h := newHarness(t, nil)
	h.load("g")
	specs := [][]string{{"range", "roundrobin"}, {"roundrobin", "range"}, {"roundrobin", "range", "sticky"}}
	var joins []*async[*kmsg.JoinGroupResponse]
	for i, ps := range specs {
		joins = append(joins, h.joinAsync(joinSpec{group: "g", version: 3, protocols: ps}))
		h.waitFor("g", awaitingJoin("g", i+1))
	}
	h.advance(6 * time.Second)
	for _, j := range joins {
		if r := j.wait(t); r.ErrorCode != 0 || *r.Protocol != "roundrobin" {
			t.Fatalf("join %d protocol %q", r.ErrorCode, *r.Protocol)
		}
	}
	// The group now supports only range and roundrobin.
	if r := h.joinAsync(joinSpec{group: "g", version: 3, protocols: []string{"sticky"}}).wait(t); r.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("sticky-only join: %d", r.ErrorCode)
	}
}

func TestSessionExpiryRebalances(t *testing.T) {
	h := newHarness(t, nil)
	h.load("g")
	ids, gen := h.formGroup("g", 2)
	a, b := ids[0], ids[1]
	// Only a heartbeats; b's 10s session runs out.
	for i := 0; i < 4; i++ {
		h.advance(3 * time.Second)
		if code := h.heartbeat("g", a, gen, nil); i < 3 && code != 0 {
			t.Fatalf("heartbeat %d at step %d", code, i)
		} else if i == 3 && code != errRebalanceInProgress {
			t.Fatalf("after b expired: %d", code)
		}
	}
	if code := h.heartbeat("g", b, gen, nil); code != errUnknownMember {
		t.Fatalf("expired member heartbeat %d", code)
	}
	r := h.joinAsync(joinSpec{group: "g", memberID: a}).wait(t)
	if r.ErrorCode != 0 || r.Generation != gen+1 || len(r.Members) != 1 {
		t.Fatalf("rejoin %+v", r)
	}
	// a never syncs: after the rebalance timeout it is removed, and the
	// group ends Empty (its session would also have ended).
	h.advance(31 * time.Second)
	if st := h.groupState("g"); st != "Empty" {
		t.Fatalf("state %s", st)
	}
}

func TestRebalanceTimeoutDropsMembersThatDoNotRejoin(t *testing.T) {
	h := newHarness(t, nil)
	h.load("g")
	ids, gen := h.formGroup("g", 3)
	leader := ids[0]
	// The leader rejoins (as after a metadata change): a rebalance starts.
	j := h.joinAsync(joinSpec{group: "g", memberID: leader})
	h.waitFor("g", awaitingJoin("g", 1))
	// ids[1] rejoins after learning from its heartbeat; ids[2] keeps
	// heartbeating but never rejoins.
	if code := h.heartbeat("g", ids[1], gen, nil); code != errRebalanceInProgress {
		t.Fatalf("heartbeat %d", code)
	}
	j1 := h.joinAsync(joinSpec{group: "g", memberID: ids[1]})
	h.waitFor("g", awaitingJoin("g", 2))
	for i := 0; i < 10; i++ {
		h.advance(3 * time.Second)
		h.heartbeat("g", ids[2], gen, nil)
	}
	h.advance(3 * time.Second) // rebalance timeout (30s) passed
	r := j.wait(t)
	if r.ErrorCode != 0 || r.Generation != gen+1 || len(r.Members) != 2 {
		t.Fatalf("join %+v", r)
	}
	if r1 := j1.wait(t); r1.ErrorCode != 0 || r1.LeaderID != leader {
		t.Fatalf("join %+v", r1)
	}
	if code := h.heartbeat("g", ids[2], gen, nil); code != errUnknownMember {
		t.Fatalf("dropped member heartbeat %d", code)
	}
}

func TestFollowerRejoinInStableGetsCurrentGeneration(t *testing.T) {
	h := newHarness(t, nil)
	h.load("g")
	ids, gen := h.formGroup("g", 2)
	r := h.joinAsync(joinSpec{group: "g", memberID: ids[1]}).wait(t)
	if r.ErrorCode != 0 || r.Generation != gen || len(r.Members) != 0 {
		t.Fatalf("rejoin %+v", r)
	}
	if st := h.groupState("g"); st != "Stable" {
		t.Fatalf("state %s", st)
	}
	// With changed metadata, it is a rebalance.
	j := h.joinAsync(joinSpec{group: "g", memberID: ids[1], meta: consumerMeta("t", "u")})
	h.waitFor("g", awaitingJoin("g", 1))
	if st := h.groupState("g"); st != "PreparingRebalance" {
		t.Fatalf("state %s", st)
	}
	h.joinAsync(joinSpec{group: "g", memberID: ids[0]}).wait(t)
	if r := j.wait(t); r.Generation != gen+1 {
		t.Fatalf("generation %d", r.Generation)
	}
}

func TestPendingMemberIDExpires(t *testing.T) {
	h := newHarness(t, nil)
	h.load("g")
	ids, _ := h.formGroup("g", 1)
	// A new member gets an ID and never comes back: the rebalance it would
	// have joined completes once the pending ID expires (its session, 10s).
	pending := h.joinNew(joinSpec{group: "g"})
	j := h.joinAsync(joinSpec{group: "g", memberID: ids[0], meta: consumerMeta("x")})
	h.waitFor("g", awaitingJoin("g", 1))
	h.advance(9 * time.Second)
	select {
	case <-j.ch:
		t.Fatal("completed while a member ID was pending")
	default:
	}
	h.advance(2 * time.Second)
	if r := j.wait(t); r.ErrorCode != 0 || len(r.Members) != 1 {
		t.Fatalf("join %+v", r)
	}
	if r := h.joinAsync(joinSpec{group: "g", memberID: pending}).wait(t); r.ErrorCode != errUnknownMember {
		t.Fatalf("expired pending id: %d", r.ErrorCode)
	}
}

func TestStaticMembership(t *testing.T) {
	h := newHarness(t, nil)
	h.load("g")
	// Static members skip MEMBER_ID_REQUIRED.
	j1 := h.joinAsync(joinSpec{group: "g", instance: str("i1")})
	h.waitFor("g", awaitingJoin("g", 1))
	j2 := h.joinAsync(joinSpec{group: "g", instance: str("i2")})
	h.waitFor("g", awaitingJoin("g", 2))
	h.advance(6 * time.Second)
	r1, r2 := j1.wait(t), j2.wait(t)
	if r1.ErrorCode != 0 || r2.ErrorCode != 0 {
		t.Fatalf("joins %d %d", r1.ErrorCode, r2.ErrorCode)
	}
	leader, follower := r1.MemberID, r2.MemberID
	gen := r1.Generation
	s2 := h.syncAsync("g", follower, gen, nil)
	h.waitFor("g", awaitingSync("g", 1))
	h.syncAsync("g", leader, gen, map[string][]byte{leader: []byte("L"), follower: []byte("F")}).wait(t)
	s2.wait(t)

	// The leader's instance restarts and joins without its member ID: it
	// replaces the old member without a rebalance and, as the leader, is
	// told to keep the assignment (KIP-814).
	r := h.joinAsync(joinSpec{group: "g", instance: str("i1")}).wait(t)
	if r.ErrorCode != 0 || r.Generation != gen || r.MemberID == leader || r.LeaderID != r.MemberID || !r.SkipAssignment || len(r.Members) != 2 {
		t.Fatalf("static rejoin %+v", r)
	}
	newLeader := r.MemberID
	if st := h.groupState("g"); st != "Stable" {
		t.Fatalf("state %s", st)
	}
	// The old member ID is fenced.
	if code := h.heartbeat("g", leader, gen, str("i1")); code != errFencedInstance {
		t.Fatalf("old member heartbeat %d", code)
	}
	if code := h.heartbeat("g", newLeader, gen, str("i1")); code != 0 {
		t.Fatalf("new member heartbeat %d", code)
	}
	if sr := h.syncAsync("g", newLeader, gen, nil).wait(t); sr.ErrorCode != 0 || string(sr.MemberAssignment) != "L" {
		t.Fatalf("sync keeps the assignment: %+v", sr)
	}
	// Leaving by instance ID with a stale member ID is fenced; with the
	// current one (or none) it works.
	lreq := kmsg.NewPtrLeaveGroupRequest()
	lreq.Version = 4
	lreq.Group = "g"
	lreq.Members = []kmsg.LeaveGroupRequestMember{
		{MemberID: leader, InstanceID: str("i1")},
		{InstanceID: str("i2")},
		{InstanceID: str("i3")},
	}
	lr, _ := h.c.LeaveGroup(ctx, lreq)
	if got := []int16{lr.Members[0].ErrorCode, lr.Members[1].ErrorCode, lr.Members[2].ErrorCode}; !slices.Equal(got, []int16{errFencedInstance, 0, errUnknownMember}) {
		t.Fatalf("leave codes %v", got)
	}
	// A static member that does not rejoin during a rebalance is kept (it
	// may come back), unlike a dynamic one... until its session ends.
	if code := h.heartbeat("g", newLeader, gen, str("i1")); code != errRebalanceInProgress {
		t.Fatalf("heartbeat %d", code)
	}
}

func TestStaticMemberTakesOverWaitingJoin(t *testing.T) {
	h := newHarness(t, nil)
	h.load("g")
	j1 := h.joinAsync(joinSpec{group: "g", instance: str("i1")})
	h.waitFor("g", awaitingJoin("g", 1))
	// The same instance joins again while the first join waits: the first
	// request is fenced, the second takes its place.
	j1b := h.joinAsync(joinSpec{group: "g", instance: str("i1")})
	if r := j1.wait(t); r.ErrorCode != errFencedInstance {
		t.Fatalf("old join %d", r.ErrorCode)
	}
	h.advance(3 * time.Second)
	if r := j1b.wait(t); r.ErrorCode != 0 || r.Generation != 1 || len(r.Members) != 1 {
		t.Fatalf("new join %+v", r)
	}
}

func TestGroupSurvivesRestart(t *testing.T) {
	h := newHarness(t, nil)
	h.load("g")
	ids, gen := h.formGroup("g", 3)
	if codes := commitCodes(h.commit("g", gen, ids[1], 8, "t", map[int32]int64{0: 10, 1: 11})); codes[0] != 0 {
		t.Fatalf("commit %v", codes)
	}
	before := h.describe("g")
	h.restart()
	after := h.describe("g")
	if fmt.Sprintf("%+v", before) != fmt.Sprintf("%+v", after) {
		t.Fatalf("describe differs after restart:\n%+v\n%+v", before, after)
	}
	if after.State != "Stable" || len(after.Members) != 3 || string(after.Members[1].MemberAssignment) != ids[1] {
		t.Fatalf("after restart %+v", after)
	}
	for _, id := range ids {
		if code := h.heartbeat("g", id, gen, nil); code != 0 {
			t.Fatalf("heartbeat after restart %d", code)
		}
	}
	if got := h.fetch("g", "t", 0, 1); !slices.Equal(got, []int64{10, 11}) {
		t.Fatalf("fetch %v", got)
	}
	// Nobody heartbeats any more: sessions expire and the group empties
	// through a rebalance.
	h.advance(11 * time.Second)
	h.advance(31 * time.Second)
	if st := h.groupState("g"); st != "Empty" {
		t.Fatalf("state %s", st)
	}
	h.restart()
	if d := h.describe("g"); d.State != "Empty" || d.ProtocolType != "consumer" {
		t.Fatalf("after second restart %+v", d)
	}
}

func (h *harness) describe(group string) kmsg.DescribeGroupsResponseGroup {
	h.t.Helper()
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Version = 5
	req.Groups = []string{group}
	r, err := h.c.DescribeGroups(ctx, req)
	if err != nil {
		h.t.Fatal(err)
	}
	return r.Groups[0]
}

func TestSyncAppendFailureRebalances(t *testing.T) {
	h := newHarness(t, nil)
	l := h.load("g")
	id := h.joinNew(joinSpec{group: "g"})
	j := h.joinAsync(joinSpec{group: "g", memberID: id})
	h.waitFor("g", awaitingJoin("g", 1))
	h.advance(3 * time.Second)
	r := j.wait(t)
	l.failErr = kerr.NotEnoughReplicas
	if sr := h.syncAsync("g", id, r.Generation, map[string][]byte{id: []byte("x")}).wait(t); sr.ErrorCode != errCoordNotAvailable {
		t.Fatalf("sync %d", sr.ErrorCode)
	}
	if st := h.groupState("g"); st != "PreparingRebalance" {
		t.Fatalf("state %s", st)
	}
}

func TestNewMemberDuringCompletingRebalance(t *testing.T) {
	h := newHarness(t, nil)
	h.load("g")
	a := h.joinNew(joinSpec{group: "g"})
	ja := h.joinAsync(joinSpec{group: "g", memberID: a})
	h.waitFor("g", awaitingJoin("g", 1))
	h.advance(3 * time.Second)
	ra := ja.wait(t)
	// The follower-less leader has not synced yet when b arrives: the
	// pending assignment is abandoned and a new rebalance starts.
	b := h.joinNew(joinSpec{group: "g"})
	jb := h.joinAsync(joinSpec{group: "g", memberID: b})
	h.waitFor("g", awaitingJoin("g", 1))
	if st := h.groupState("g"); st != "PreparingRebalance" {
		t.Fatalf("state %s", st)
	}
	if r := h.syncAsync("g", a, ra.Generation, map[string][]byte{a: []byte("x")}).wait(t); r.ErrorCode != errRebalanceInProgress {
		t.Fatalf("stale sync %d", r.ErrorCode)
	}
	ra = h.joinAsync(joinSpec{group: "g", memberID: a}).wait(t)
	rb := jb.wait(t)
	if ra.Generation != 2 || rb.Generation != 2 || ra.LeaderID != a || len(ra.Members) != 2 {
		t.Fatalf("gen 2: %+v %+v", ra, rb)
	}
	// A sync with the old generation is refused.
	if r := h.syncAsync("g", b, 1, nil).wait(t); r.ErrorCode != errIllegalGeneration {
		t.Fatalf("old generation sync %d", r.ErrorCode)
	}
}

func TestStaticLeaderRejoinOldVersion(t *testing.T) {
	h := newHarness(t, nil)
	h.load("g")
	j := h.joinAsync(joinSpec{group: "g", instance: str("i1"), version: 5})
	h.waitFor("g", awaitingJoin("g", 1))
	h.advance(3 * time.Second)
	r := j.wait(t)
	h.syncAsync("g", r.MemberID, r.Generation, map[string][]byte{r.MemberID: []byte("A")}).wait(t)
	// Before KIP-814 (v9) the returning leader is not told it leads, so it
	// does not compute a new assignment.
	r2 := h.joinAsync(joinSpec{group: "g", instance: str("i1"), version: 5}).wait(t)
	if r2.ErrorCode != 0 || r2.LeaderID != r.MemberID || r2.MemberID == r.MemberID || len(r2.Members) != 0 || r2.Generation != r.Generation {
		t.Fatalf("v5 static rejoin %+v", r2)
	}
	if s := h.syncAsync("g", r2.MemberID, r2.Generation, nil).wait(t); s.ErrorCode != 0 || string(s.MemberAssignment) != "A" {
		t.Fatalf("sync %+v", s)
	}
}
