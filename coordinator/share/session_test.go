package share

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestSessions walks one member's share session through Kafka's rules: epoch 0 opens (and
// replaces), the epoch must follow, -1 closes, and each error leaves the cache as it was.
func TestSessions(t *testing.T) {
	tp := func(p int32) TopicIDPartition { return TopicIDPartition{TopicID: [16]byte{1}, Partition: p} }
	key := SessionKey{"g", "m"}
	c := NewSessions(1)
	step := func(name string, got FetchOutcome, wantCode int16) FetchOutcome {
		t.Helper()
		if got.Code != wantCode {
			t.Fatalf("%s: code %v, want %v", name, kerr.ErrorForCode(got.Code), kerr.ErrorForCode(wantCode))
		}
		return got
	}
	step("subsequent without a session", c.Fetch(key, 1, nil, nil, false), kerr.ShareSessionNotFound.Code)
	step("close without a session", c.Fetch(key, FinalEpoch, nil, nil, false), kerr.ShareSessionNotFound.Code)
	step("initial with acknowledgements", c.Fetch(key, InitialEpoch, []TopicIDPartition{tp(0)}, nil, true), kerr.InvalidRequest.Code)
	if c.Len() != 0 {
		t.Fatalf("a refused request opened a session")
	}
	out := step("open", c.Fetch(key, InitialEpoch, []TopicIDPartition{tp(0)}, nil, false), 0)
	if out.Session.Epoch != 1 || len(out.Session.Partitions) != 1 || out.Replaced != nil {
		t.Fatalf("open: %+v", out)
	}
	step("cache full", c.Fetch(SessionKey{"g", "other"}, InitialEpoch, nil, nil, false), kerr.ShareSessionLimitReached.Code)
	step("wrong epoch", c.Fetch(key, 5, nil, nil, false), kerr.InvalidShareSessionEpoch.Code)
	step("negative epoch", c.Fetch(key, -2, nil, nil, false), kerr.InvalidShareSessionEpoch.Code)
	out = step("add and forget", c.Fetch(key, 1, []TopicIDPartition{tp(1), tp(2)}, []TopicIDPartition{tp(0)}, true), 0)
	if out.Session.Epoch != 2 || len(out.Session.Partitions) != 2 || out.Session.Has(tp(0)) || !out.Session.Has(tp(2)) {
		t.Fatalf("add and forget: %+v", out.Session)
	}
	step("acknowledge at epoch 0", c.Acknowledge(key, InitialEpoch), kerr.InvalidShareSessionEpoch.Code)
	step("acknowledge at a stale epoch", c.Acknowledge(key, 1), kerr.InvalidShareSessionEpoch.Code)
	if out = step("acknowledge", c.Acknowledge(key, 2), 0); out.Session.Epoch != 3 {
		t.Fatalf("acknowledge did not move the epoch: %d", out.Session.Epoch)
	}
	step("close naming partitions", c.Fetch(key, FinalEpoch, []TopicIDPartition{tp(1)}, nil, false), kerr.InvalidRequest.Code)
	out = step("reopen", c.Fetch(key, InitialEpoch, []TopicIDPartition{tp(3)}, nil, false), 0)
	if out.Replaced == nil || len(out.Replaced.Partitions) != 2 || out.Session.Epoch != 1 {
		t.Fatalf("reopen: %+v", out)
	}
	if out = step("close", c.Fetch(key, FinalEpoch, nil, nil, false), 0); !out.Final || c.Len() != 0 {
		t.Fatalf("close: %+v, %d sessions", out, c.Len())
	}
	if got := nextEpoch(1<<31 - 1); got != 1 {
		t.Fatalf("nextEpoch wraps to %d, want 1", got)
	}
}

type fakeTopics map[string]int32

func (f fakeTopics) TopicByName(name string) ([16]byte, int32, bool) {
	n, ok := f[name]
	return [16]byte{byte(len(name))}, n, ok
}

// TestGroupHeartbeats covers membership: the simple assignor gives every member every
// partition, epochs follow Kafka's fencing rules, and silent members expire.
func TestGroupHeartbeats(t *testing.T) {
	now := time.Unix(1000, 0)
	gs := NewGroups(GroupConfig{SessionTimeout: 10 * time.Second, HeartbeatInterval: time.Second, MaxSize: 2})
	topics := fakeTopics{"t": 3}
	hb := func(member string, epoch int32, subscribed ...string) HeartbeatResult {
		return gs.Heartbeat(now, topics, HeartbeatRequest{Group: "g", Member: member, MemberEpoch: epoch, Subscribed: subscribed})
	}
	if r := gs.Heartbeat(now, topics, HeartbeatRequest{Group: "", Member: "a", Subscribed: []string{"t"}}); r.Code != kerr.InvalidRequest.Code {
		t.Fatalf("empty group: %v", r)
	}
	if r := hb("", 0, "t"); r.Code != kerr.InvalidRequest.Code {
		t.Fatalf("empty member: %v", r)
	}
	if r := hb("a", 0); r.Code != kerr.InvalidRequest.Code {
		t.Fatalf("join without subscription: %v", r)
	}
	a := hb("a", 0, "t", "missing")
	if a.Code != 0 || !a.SendAssigned || len(a.Assignment) != 1 || len(a.Assignment[0].Partitions) != 3 {
		t.Fatalf("a joins: %+v", a)
	}
	b := hb("b", 0, "t")
	if b.Code != 0 || len(b.Assignment) != 1 || len(b.Assignment[0].Partitions) != 3 || b.MemberEpoch <= a.MemberEpoch {
		t.Fatalf("b joins: %+v (a at %d)", b, a.MemberEpoch)
	}
	if r := hb("c", 0, "t"); r.Code != kerr.GroupMaxSizeReached.Code {
		t.Fatalf("third member over group.share.max.size=2: %+v", r)
	}
	if r := hb("a", a.MemberEpoch+10); r.Code != kerr.FencedMemberEpoch.Code {
		t.Fatalf("a at a future epoch: %+v", r)
	}
	if r := hb("zz", 3); r.Code != kerr.UnknownMemberID.Code {
		t.Fatalf("unknown member: %+v", r)
	}
	// a catches up with the group epoch b's join made, and is told its assignment again.
	if r := hb("a", a.MemberEpoch); r.Code != 0 || r.MemberEpoch != b.MemberEpoch || !r.SendAssigned {
		t.Fatalf("a's next heartbeat: %+v", r)
	}
	// The topic grows: the next heartbeat carries the new partition.
	topics["t"] = 4
	r := hb("b", b.MemberEpoch)
	if r.Code != 0 || !r.SendAssigned || len(r.Assignment[0].Partitions) != 4 || r.MemberEpoch <= b.MemberEpoch {
		t.Fatalf("b after the topic grew: %+v", r)
	}
	// a stays silent past the session timeout; b heartbeats in time.
	now = now.Add(6 * time.Second)
	hb("b", r.MemberEpoch)
	now = now.Add(5 * time.Second)
	if gone := gs.Expire(now); len(gone) != 1 || gone[0].Member != "a" {
		t.Fatalf("expired %v, want a", gone)
	}
	if r := hb("b", -1); r.Code != 0 || r.MemberEpoch != -1 || r.Left != "b" {
		t.Fatalf("b leaves: %+v", r)
	}
	if g := gs.Get("g"); g.State() != "Empty" {
		t.Fatalf("state %s after everyone left", g.State())
	}
	if code := gs.Delete("g"); code != 0 || gs.Get("g") != nil {
		t.Fatalf("delete: %v", kerr.ErrorForCode(code))
	}
}

// TestGroupSessionTimeoutOverride: a heartbeat carrying the group's share.session.timeout.ms
// gives the member that deadline instead of the broker's group.share.session.timeout.ms.
func TestGroupSessionTimeoutOverride(t *testing.T) {
	now := time.Unix(1000, 0)
	gs := NewGroups(GroupConfig{SessionTimeout: 45 * time.Second, HeartbeatInterval: 5 * time.Second})
	topics := fakeTopics{"t": 1}
	short := gs.Heartbeat(now, topics, HeartbeatRequest{Group: "short", Member: "a", Subscribed: []string{"t"}, SessionTimeout: 20 * time.Second})
	long := gs.Heartbeat(now, topics, HeartbeatRequest{Group: "long", Member: "a", Subscribed: []string{"t"}})
	if short.Code != 0 || long.Code != 0 {
		t.Fatalf("joins: %+v %+v", short, long)
	}
	if next, ok := gs.NextExpiry(); !ok || !next.Equal(now.Add(20*time.Second)) {
		t.Fatalf("next expiry %v, want the overridden group's at +20s", next)
	}
	if gone := gs.Expire(now.Add(20 * time.Second)); len(gone) != 1 || gone[0].Group != "short" {
		t.Fatalf("expired at +20s: %v, want only the member of the group with the 20 s timeout", gone)
	}
	if gone := gs.Expire(now.Add(45 * time.Second)); len(gone) != 1 || gone[0].Group != "long" {
		t.Fatalf("expired at +45s: %v, want the member on the broker's timeout", gone)
	}
}
