package coordinator

import (
	"testing"
	"time"
)

// TestConsumerGroupOverrides: a group's consumer.heartbeat.interval.ms is the interval its
// members are told, and its consumer.session.timeout.ms is when a silent member leaves; another
// group keeps the broker's.
func TestConsumerGroupOverrides(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.Topics = fakeTopics{"a": {id: topicA, parts: 4}}
		c.GroupOverrides = func(group string) GroupOverrides {
			if group != "cg" {
				return GroupOverrides{}
			}
			return GroupOverrides{ConsumerSessionTimeout: 10 * time.Second, ConsumerHeartbeatInterval: 2 * time.Second}
		}
	})
	h.load("cg")
	r := h.cgHeartbeat(cgReq{member: "m1", epoch: 0})
	if r.ErrorCode != 0 || r.HeartbeatIntervalMillis != 2000 {
		t.Fatalf("join: code %d interval %d, want the group's 2000", r.ErrorCode, r.HeartbeatIntervalMillis)
	}
	h.advance(9 * time.Second)
	if d := h.cgDescribe(); len(d.Members) != 1 {
		t.Fatalf("member gone before the group's 10 s session: %+v", d)
	}
	h.advance(2 * time.Second)
	if d := h.cgDescribe(); len(d.Members) != 0 || d.State != "Empty" {
		t.Fatalf("member kept past the group's 10 s session (the broker's is 45 s): %+v", d)
	}
}

// TestStreamsGroupOverrides: a streams group's streams.heartbeat.interval.ms is the interval
// its members are told, streams.num.standby.replicas gives a member of another process
// standby tasks (the broker's default is none), and streams.session.timeout.ms is when a
// silent member leaves.
func TestStreamsGroupOverrides(t *testing.T) {
	topics := fakeTopics{"in": {id: [16]byte{1}, parts: 3}, "app-rep": {id: [16]byte{2}, parts: 3}, "app-log": {id: [16]byte{3}, parts: 3}}
	one := 1
	zero := time.Duration(0)
	h := newHarness(t, func(c *Config) {
		c.Topics = topics
		c.GroupOverrides = func(string) GroupOverrides {
			return GroupOverrides{StreamsHeartbeatInterval: 1500 * time.Millisecond, StreamsSessionTimeout: 8 * time.Second,
				StreamsNumStandbyReplicas: &one, StreamsInitialRebalanceDelay: &zero}
		}
	})
	h.load("sg")
	r, _ := h.sgHeartbeat(sgReq{member: "A", epoch: 0, process: "p1"})
	if r.ErrorCode != 0 || r.HeartbeatIntervalMillis != 1500 {
		t.Fatalf("join: code %d interval %d, want the group's 1500", r.ErrorCode, r.HeartbeatIntervalMillis)
	}
	if tasksOf(r.ActiveTasks) != "0:[0 1 2] 1:[0 1 2]" {
		t.Fatalf("A's tasks %q: the group's initial rebalance delay of 0 was not taken", tasksOf(r.ActiveTasks))
	}
	r, _ = h.sgHeartbeat(sgReq{member: "B", epoch: 0, process: "p2"})
	standbys := tasksOf(r.StandbyTasks)
	for i := 0; i < 5 && standbys == ""; i++ {
		r, _ = h.sgHeartbeat(sgReq{member: "B", epoch: r.MemberEpoch})
		standbys = tasksOf(r.StandbyTasks)
	}
	if standbys == "" {
		t.Fatalf("B of another process got no standby tasks with streams.num.standby.replicas=1")
	}
	h.advance(9 * time.Second)
	if d := h.sgDescribe(); len(d.Members) != 0 {
		t.Fatalf("members kept past the group's 8 s session: %+v", d.Members)
	}
}
