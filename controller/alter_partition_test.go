package controller

import (
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// alterQuorum is a three-voter quorum with brokers 1–4 registered and unfenced (no session
// expiry: brokers are fenced only when a test asks) and topic "t" with partition 0 on
// replicas 1,2,3,4 and partition 1 on 2,3,4,1. It returns the broker epochs.
func alterQuorum(t *testing.T) (*testQuorum, map[int32]int64) {
	q := newTestQuorumWith(t, func(cfg *Config) { cfg.SessionTimeout = -1 }, 1, 2, 3)
	q.waitFor(q.leader().cfg.NodeID, "a cluster ID", func(im *Image) bool { return im.ClusterID != "" })
	epochs := map[int32]int64{}
	for id := int32(1); id <= 4; id++ {
		epochs[id] = q.register(id, 1)
		if res := q.heartbeat(BrokerHeartbeat{BrokerID: id, BrokerEpoch: epochs[id]}); res.IsFenced {
			t.Fatalf("broker %d stays fenced: %+v", id, res)
		}
	}
	q.call(func(c *Controller) error {
		res, err := c.CreateTopics(testCtx(t), []CreateTopic{{Name: "t", NumPartitions: -1, ReplicationFactor: -1,
			Assignments: map[int32][]int32{0: {1, 2, 3, 4}, 1: {2, 3, 4, 1}}}}, false)
		if err == nil && res[0].Err != nil {
			err = fmt.Errorf("%v: %s", res[0].Err, res[0].Message)
		}
		return err
	})
	return q, epochs
}

// alter runs one AlterPartition call on the active controller.
func (q *testQuorum) alter(reqs ...AlterPartition) []AlterPartitionResult {
	q.t.Helper()
	var out []AlterPartitionResult
	q.call(func(c *Controller) error {
		var err error
		out, err = c.AlterPartition(testCtx(q.t), reqs)
		return err
	})
	if len(out) != len(reqs) {
		q.t.Fatalf("%d results for %d partitions", len(out), len(reqs))
	}
	return out
}

// proposal is the AlterPartition that partition p's current leader would send for isr.
func proposal(q *testQuorum, epochs map[int32]int64, p int32, isr ...int32) AlterPartition {
	t := q.leader().Image().Topics["t"]
	part := t.Partitions[p]
	return AlterPartition{TopicID: t.ID, Partition: p, LeaderID: part.Leader, BrokerEpoch: epochs[part.Leader],
		LeaderEpoch: part.LeaderEpoch, PartitionEpoch: part.PartitionEpoch, NewISR: isr}
}

// wantAccepted checks that r committed isr at partition epoch pe (leader and leader epoch
// unchanged) and that every node's image shows it.
func wantAccepted(t *testing.T, q *testQuorum, r AlterPartitionResult, p, leader, leaderEpoch, pe int32, isr ...int32) {
	t.Helper()
	if r.Err != nil {
		t.Fatalf("refused: %v: %s", r.Err, r.Message)
	}
	got := r.Partition
	if got == nil || got.Partition != p || got.Leader != leader || got.LeaderEpoch != leaderEpoch || got.PartitionEpoch != pe || !slices.Equal(got.ISR, isr) {
		t.Fatalf("result %+v, want partition %d leader %d leader epoch %d partition epoch %d ISR %v", got, p, leader, leaderEpoch, pe, isr)
	}
	for id := int32(1); id <= 3; id++ {
		q.waitFor(id, fmt.Sprintf("ISR %v at partition epoch %d", isr, pe), func(im *Image) bool {
			if im.Topics["t"] == nil {
				return false
			}
			ip := im.Topics["t"].Partitions[p]
			return ip.PartitionEpoch == pe && ip.Leader == leader && ip.LeaderEpoch == leaderEpoch && slices.Equal(ip.ISR, isr)
		})
	}
}

func wantRefused(t *testing.T, r AlterPartitionResult, code *kerr.Error) {
	t.Helper()
	if r.Err != code || r.Partition != nil {
		t.Fatalf("got %v (%s) partition %+v, want %v", r.Err, r.Message, r.Partition, code)
	}
}

// TestAlterPartitionValidation: every refusal of ReplicationControlManager.alterPartition,
// each on an otherwise valid request from partition 0's leader; none changes the partition.
func TestAlterPartitionValidation(t *testing.T) {
	q, epochs := alterQuorum(t)
	before := q.leader().Image().Topics["t"].Partitions[0]
	cases := []struct {
		name   string
		change func(r *AlterPartition)
		want   *kerr.Error
	}{
		{"stale broker epoch", func(r *AlterPartition) { r.BrokerEpoch++ }, kerr.StaleBrokerEpoch},
		{"unregistered requester", func(r *AlterPartition) { r.LeaderID, r.BrokerEpoch = 9, 1 }, kerr.StaleBrokerEpoch},
		{"unknown topic ID", func(r *AlterPartition) { r.TopicID[0] ^= 0xff }, kerr.UnknownTopicID},
		{"zero topic ID", func(r *AlterPartition) { r.TopicID = TopicID{} }, kerr.UnknownTopicID},
		{"unknown topic name", func(r *AlterPartition) { r.TopicID, r.TopicName = TopicID{}, "nope" }, kerr.UnknownTopicOrPartition},
		{"unknown partition", func(r *AlterPartition) { r.Partition = 2 }, kerr.UnknownTopicOrPartition},
		{"negative partition", func(r *AlterPartition) { r.Partition = -1 }, kerr.UnknownTopicOrPartition},
		{"leader epoch above the controller's", func(r *AlterPartition) { r.LeaderEpoch++ }, kerr.NotController},
		{"partition epoch above the controller's", func(r *AlterPartition) { r.PartitionEpoch++ }, kerr.NotController},
		{"stale leader epoch", func(r *AlterPartition) { r.LeaderEpoch-- }, kerr.FencedLeaderEpoch},
		{"stale partition epoch", func(r *AlterPartition) { r.PartitionEpoch-- }, kerr.InvalidUpdateVersion},
		{"requester not the leader", func(r *AlterPartition) { r.LeaderID, r.BrokerEpoch = 2, epochs[2] }, kerr.InvalidRequest},
		{"empty ISR", func(r *AlterPartition) { r.NewISR = nil }, kerr.InvalidRequest},
		{"ISR without the leader", func(r *AlterPartition) { r.NewISR = []int32{2, 3} }, kerr.InvalidRequest},
		{"ISR with a non-replica", func(r *AlterPartition) { r.NewISR = []int32{1, 5} }, kerr.InvalidRequest},
		{"ISR with a duplicate", func(r *AlterPartition) { r.NewISR = []int32{1, 2, 2} }, kerr.InvalidRequest},
		{"leader recovering", func(r *AlterPartition) { r.LeaderRecovering = true }, kerr.InvalidRequest},
		{"broker epochs not one per member", func(r *AlterPartition) { r.NewISREpochs = []int64{epochs[1]} }, kerr.InvalidRequest},
		{"member at another broker epoch", func(r *AlterPartition) { r.NewISREpochs = []int64{epochs[1], epochs[2] + 7} }, kerr.IneligibleReplica},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := proposal(q, epochs, 0, 1, 2)
			tc.change(&r)
			wantRefused(t, q.alter(r)[0], tc.want)
		})
	}
	if after := q.leader().Image().Topics["t"].Partitions[0]; after.PartitionEpoch != before.PartitionEpoch || !slices.Equal(after.ISR, before.ISR) {
		t.Fatalf("refusals changed the partition: %+v, was %+v", after, before)
	}
}

// TestAlterPartition walks partition 0 through shrinks and expansions: accepted changes bump
// the partition epoch and reach every node; a stale partition epoch, a fenced or shutting-down
// member and a deposed leader are refused; a follower unfenced again rejoins the ISR when its
// leader proposes it.
func TestAlterPartition(t *testing.T) {
	q, epochs := alterQuorum(t)

	// Shrink to 1,2,3 (v3 style, with the members' broker epochs; -1 skips the check), in one
	// call with a refused item for partition 1: one item's refusal does not fail the other.
	shrink := proposal(q, epochs, 0, 1, 2, 3)
	shrink.NewISREpochs = []int64{epochs[1], -1, epochs[3]}
	bad := proposal(q, epochs, 1, 3, 4)
	res := q.alter(shrink, bad)
	wantAccepted(t, q, res[0], 0, 1, 0, 1, 1, 2, 3)
	wantRefused(t, res[1], kerr.InvalidRequest)

	// The same proposal again is based on a partition epoch that is gone.
	wantRefused(t, q.alter(shrink)[0], kerr.InvalidUpdateVersion)

	// An unchanged ISR commits nothing and answers the current partition.
	offset := q.leader().Image().Offset
	wantAccepted(t, q, q.alter(proposal(q, epochs, 0, 1, 2, 3))[0], 0, 1, 0, 1, 1, 2, 3)
	if got := q.leader().Image().Offset; got != offset {
		t.Fatalf("an unchanged ISR committed something: offset %d, was %d", got, offset)
	}

	// 4 is fenced (it is in partition 0's replicas, not its ISR): it may not rejoin.
	q.heartbeat(BrokerHeartbeat{BrokerID: 4, BrokerEpoch: epochs[4], WantFence: true})
	wantRefused(t, q.alter(proposal(q, epochs, 0, 1, 2, 3, 4))[0], kerr.IneligibleReplica)

	// Shrink to 1,2; 3 enters controlled shutdown: it may not rejoin either.
	wantAccepted(t, q, q.alter(proposal(q, epochs, 0, 1, 2))[0], 0, 1, 0, 2, 1, 2)
	q.heartbeat(BrokerHeartbeat{BrokerID: 3, BrokerEpoch: epochs[3], WantShutDown: true})
	if b := q.leader().Image().Brokers[3]; !b.InControlledShutdown {
		t.Fatalf("broker 3 not shutting down: %+v", b)
	}
	wantRefused(t, q.alter(proposal(q, epochs, 0, 1, 2, 3))[0], kerr.IneligibleReplica)
	if p := q.leader().Image().Topics["t"].Partitions[0]; p.PartitionEpoch != 2 {
		t.Fatalf("refusals or 3's shutdown changed partition 0: %+v", p)
	}

	// 4 heartbeats again, caught up: unfenced, it is in no ISR until the leader proposes it.
	if res := q.heartbeat(BrokerHeartbeat{BrokerID: 4, BrokerEpoch: epochs[4]}); res.IsFenced {
		t.Fatalf("4 stays fenced: %+v", res)
	}
	if p := q.leader().Image().Topics["t"].Partitions[0]; slices.Contains(p.ISR, 4) {
		t.Fatalf("4 rejoined the ISR by itself: %+v", p)
	}
	rejoin := proposal(q, epochs, 0, 1, 2, 4)
	rejoin.NewISREpochs = []int64{epochs[1], epochs[2], epochs[4]}
	wantAccepted(t, q, q.alter(rejoin)[0], 0, 1, 0, 3, 1, 2, 4)

	// 1 is fenced: 2 leads at leader epoch 1. 1's proposal is from a deposed leader.
	deposed := proposal(q, epochs, 0, 1, 2, 4)
	q.heartbeat(BrokerHeartbeat{BrokerID: 1, BrokerEpoch: epochs[1], WantFence: true})
	p := q.leader().Image().Topics["t"].Partitions[0]
	if p.Leader != 2 || p.LeaderEpoch != 1 || !slices.Equal(p.ISR, []int32{2, 4}) {
		t.Fatalf("after fencing 1: %+v", p)
	}
	wantRefused(t, q.alter(deposed)[0], kerr.FencedLeaderEpoch)
	// The new leader's own proposal is accepted.
	wantAccepted(t, q, q.alter(proposal(q, epochs, 0, 2))[0], 0, 2, 1, p.PartitionEpoch+1, 2)

	// Every node applied the same records.
	want := formatImage(q.leader().Image())
	for id := int32(1); id <= 3; id++ {
		q.waitFor(id, "converged", func(im *Image) bool { return im.Offset == q.leader().Image().Offset })
		if got := formatImage(q.node(id).Image()); got != want {
			t.Fatalf("node %d diverges:\n%s\nwant:\n%s", id, got, want)
		}
	}
}

// TestAlterPartitionSamePartitionTwice: two items for one partition in one call are planned
// in order, so the second, based on the epoch the first replaced, is refused.
func TestAlterPartitionSamePartitionTwice(t *testing.T) {
	q, epochs := alterQuorum(t)
	res := q.alter(proposal(q, epochs, 0, 1, 2, 3), proposal(q, epochs, 0, 1, 2))
	wantAccepted(t, q, res[0], 0, 1, 0, 1, 1, 2, 3)
	wantRefused(t, res[1], kerr.InvalidUpdateVersion)
}

// TestAlterPartitionNotController: a voter that is not the active controller refuses the
// whole call.
func TestAlterPartitionNotController(t *testing.T) {
	q, epochs := alterQuorum(t)
	lead := q.leader()
	for id := int32(1); id <= 3; id++ {
		if c := q.node(id); c != lead {
			if _, err := c.AlterPartition(testCtx(t), []AlterPartition{proposal(q, epochs, 0, 1, 2)}); err != kerr.NotController {
				t.Fatalf("follower %d: %v, want NOT_CONTROLLER", id, err)
			}
			return
		}
	}
}
