package controller

import (
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// reassign runs one AlterPartitionReassignments call on the active controller.
func (q *testQuorum) reassign(allowRF bool, reqs ...Reassignment) []ReassignmentResult {
	q.t.Helper()
	var out []ReassignmentResult
	q.call(func(c *Controller) error {
		var err error
		out, err = c.AlterPartitionReassignments(testCtx(q.t), reqs, allowRF)
		return err
	})
	if len(out) != len(reqs) {
		q.t.Fatalf("%d results for %d partitions", len(out), len(reqs))
	}
	return out
}

// reassignQuorum is alterQuorum plus topic "r": partition 0 on replicas 1,2.
func reassignQuorum(t *testing.T) (*testQuorum, map[int32]int64) {
	q, epochs := alterQuorum(t)
	q.call(func(c *Controller) error {
		res, err := c.CreateTopics(testCtx(t), []CreateTopic{{Name: "r", NumPartitions: -1, ReplicationFactor: -1,
			Assignments: map[int32][]int32{0: {1, 2}}}}, false)
		if err == nil && res[0].Err != nil {
			err = fmt.Errorf("%v: %s", res[0].Err, res[0].Message)
		}
		return err
	})
	return q, epochs
}

// wantPartition waits until every voter's image has r-0 as want (Partition and the fields
// a reassignment changes).
func wantPartition(t *testing.T, q *testQuorum, want PartitionInfo) {
	t.Helper()
	for id := int32(1); id <= 3; id++ {
		q.waitFor(id, fmt.Sprintf("r-0 %+v", want), func(im *Image) bool {
			tp := im.Topics["r"]
			if tp == nil {
				return false
			}
			p := tp.Partitions[0]
			return slices.Equal(p.Replicas, want.Replicas) && slices.Equal(p.ISR, want.ISR) && p.Leader == want.Leader &&
				p.LeaderEpoch == want.LeaderEpoch && p.PartitionEpoch == want.PartitionEpoch &&
				slices.Equal(p.AddingReplicas, want.AddingReplicas) && slices.Equal(p.RemovingReplicas, want.RemovingReplicas)
		})
	}
}

func wantOK(t *testing.T, r ReassignmentResult) {
	t.Helper()
	if r.Err != nil {
		t.Fatalf("refused: %v: %s", r.Err, r.Message)
	}
}

// TestReassignmentMovesLeader moves r-0 from 1,2 to 3,2: the replicas grow to 3,2,1 with 3
// adding and 1 removing; the AlterPartition that adds 3 to the ISR completes it, moves the
// leadership off the removed leader 1 to 3 (the first target replica in the ISR), raises the
// leader epoch and answers the old leader NEW_LEADER_ELECTED, as Kafka does.
func TestReassignmentMovesLeader(t *testing.T) {
	q, epochs := reassignQuorum(t)
	wantOK(t, q.reassign(true, Reassignment{Topic: "r", Partition: 0, Replicas: []int32{3, 2}})[0])
	wantPartition(t, q, PartitionInfo{Replicas: []int32{3, 2, 1}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 0, PartitionEpoch: 1,
		AddingReplicas: []int32{3}, RemovingReplicas: []int32{1}})

	got := ListReassignments(q.leader().Image(), nil)
	want := []TopicReassignments{{Topic: "r", Partitions: []OngoingReassignment{{Partition: 0, Replicas: []int32{3, 2, 1},
		AddingReplicas: []int32{3}, RemovingReplicas: []int32{1}}}}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("listed %+v, want %+v", got, want)
	}
	if got := ListReassignments(q.leader().Image(), map[string][]int32{"r": {0, 7}, "t": {0}, "nope": {0}}); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("listed by name %+v, want %+v", got, want)
	}

	// An ISR change that does not add 3 leaves the reassignment going.
	r := q.leader().Image().Topics["r"]
	shrink := AlterPartition{TopicID: r.ID, Partition: 0, LeaderID: 1, BrokerEpoch: epochs[1], LeaderEpoch: 0, PartitionEpoch: 1, NewISR: []int32{1}}
	if res := q.alter(shrink)[0]; res.Err != nil {
		t.Fatalf("shrink refused: %v %s", res.Err, res.Message)
	}
	wantPartition(t, q, PartitionInfo{Replicas: []int32{3, 2, 1}, ISR: []int32{1}, Leader: 1, LeaderEpoch: 0, PartitionEpoch: 2,
		AddingReplicas: []int32{3}, RemovingReplicas: []int32{1}})

	// Adding 3 alone is not enough: 2 is in the target and not in the ISR.
	add3 := AlterPartition{TopicID: r.ID, Partition: 0, LeaderID: 1, BrokerEpoch: epochs[1], LeaderEpoch: 0, PartitionEpoch: 2, NewISR: []int32{1, 3}}
	if res := q.alter(add3)[0]; res.Err != nil {
		t.Fatalf("expansion refused: %v %s", res.Err, res.Message)
	}
	wantPartition(t, q, PartitionInfo{Replicas: []int32{3, 2, 1}, ISR: []int32{1, 3}, Leader: 1, LeaderEpoch: 0, PartitionEpoch: 3,
		AddingReplicas: []int32{3}, RemovingReplicas: []int32{1}})

	// 2 rejoins: complete. Leader 1 is removed: 3 leads at leader epoch 1.
	add2 := AlterPartition{TopicID: r.ID, Partition: 0, LeaderID: 1, BrokerEpoch: epochs[1], LeaderEpoch: 0, PartitionEpoch: 3, NewISR: []int32{1, 2, 3}}
	res := q.alter(add2)[0]
	if res.Err != kerr.NewLeaderElected || res.Partition != nil {
		t.Fatalf("completing AlterPartition: %v (%s) %+v, want NEW_LEADER_ELECTED", res.Err, res.Message, res.Partition)
	}
	wantPartition(t, q, PartitionInfo{Replicas: []int32{3, 2}, ISR: []int32{2, 3}, Leader: 3, LeaderEpoch: 1, PartitionEpoch: 4})
	if got := ListReassignments(q.leader().Image(), nil); len(got) != 0 {
		t.Fatalf("a completed reassignment is listed: %+v", got)
	}

	// Nothing to cancel now.
	if res := q.reassign(true, Reassignment{Topic: "r", Partition: 0})[0]; res.Err != kerr.NoReassignmentInProgress {
		t.Fatalf("cancel without a reassignment: %v (%s)", res.Err, res.Message)
	}
}

// TestReassignmentCompletesAtOnce: a reassignment that adds nothing completes in its own
// record — a reorder keeps the leader and its epoch; a replication factor decrease that
// removes the leader elects the first remaining replica and raises the leader epoch.
func TestReassignmentCompletesAtOnce(t *testing.T) {
	q, _ := reassignQuorum(t)
	wantOK(t, q.reassign(true, Reassignment{Topic: "r", Partition: 0, Replicas: []int32{2, 1}})[0])
	wantPartition(t, q, PartitionInfo{Replicas: []int32{2, 1}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 0, PartitionEpoch: 1})

	// The same assignment again changes nothing.
	offset := q.leader().Image().Offset
	wantOK(t, q.reassign(true, Reassignment{Topic: "r", Partition: 0, Replicas: []int32{2, 1}})[0])
	if got := q.leader().Image().Offset; got != offset {
		t.Fatalf("an unchanged assignment committed something: offset %d, was %d", got, offset)
	}

	// Without AllowReplicationFactorChange a decrease is refused.
	if res := q.reassign(false, Reassignment{Topic: "r", Partition: 0, Replicas: []int32{2}})[0]; res.Err != kerr.InvalidReplicationFactor {
		t.Fatalf("RF change not allowed: %v (%s)", res.Err, res.Message)
	}
	wantOK(t, q.reassign(true, Reassignment{Topic: "r", Partition: 0, Replicas: []int32{2}})[0])
	wantPartition(t, q, PartitionInfo{Replicas: []int32{2}, ISR: []int32{2}, Leader: 2, LeaderEpoch: 1, PartitionEpoch: 2})
}

// TestReassignmentCancel: a cancelled reassignment returns to the original replicas without
// the adding ones (in the ISR too), with a leader epoch bump since the assignment shrinks.
func TestReassignmentCancel(t *testing.T) {
	q, epochs := reassignQuorum(t)
	wantOK(t, q.reassign(true, Reassignment{Topic: "r", Partition: 0, Replicas: []int32{3, 4}})[0])
	wantPartition(t, q, PartitionInfo{Replicas: []int32{3, 4, 1, 2}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 0, PartitionEpoch: 1,
		AddingReplicas: []int32{3, 4}, RemovingReplicas: []int32{1, 2}})
	// 4 catches up and joins; 3 does not: still in progress.
	r := q.leader().Image().Topics["r"]
	if res := q.alter(AlterPartition{TopicID: r.ID, Partition: 0, LeaderID: 1, BrokerEpoch: epochs[1], LeaderEpoch: 0, PartitionEpoch: 1,
		NewISR: []int32{1, 2, 4}})[0]; res.Err != nil {
		t.Fatalf("expansion refused: %v %s", res.Err, res.Message)
	}
	wantOK(t, q.reassign(true, Reassignment{Topic: "r", Partition: 0})[0])
	wantPartition(t, q, PartitionInfo{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 1, PartitionEpoch: 3})
}

// TestReassignmentReplaced: a reassignment of a partition being reassigned starts from the
// merged replica list.
func TestReassignmentReplaced(t *testing.T) {
	q, _ := reassignQuorum(t)
	wantOK(t, q.reassign(true, Reassignment{Topic: "r", Partition: 0, Replicas: []int32{1, 3}})[0])
	wantPartition(t, q, PartitionInfo{Replicas: []int32{1, 3, 2}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 0, PartitionEpoch: 1,
		AddingReplicas: []int32{3}, RemovingReplicas: []int32{2}})
	wantOK(t, q.reassign(true, Reassignment{Topic: "r", Partition: 0, Replicas: []int32{1, 4}})[0])
	wantPartition(t, q, PartitionInfo{Replicas: []int32{1, 4, 2, 3}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 0, PartitionEpoch: 2,
		AddingReplicas: []int32{4}, RemovingReplicas: []int32{2, 3}})
}

// TestReassignmentValidation: Kafka's refusals, each changing nothing.
func TestReassignmentValidation(t *testing.T) {
	q, _ := reassignQuorum(t)
	cases := []struct {
		name string
		r    Reassignment
		want *kerr.Error
	}{
		{"unknown topic", Reassignment{Topic: "nope", Replicas: []int32{1}}, kerr.UnknownTopicOrPartition},
		{"unknown partition", Reassignment{Topic: "r", Partition: 1, Replicas: []int32{1}}, kerr.UnknownTopicOrPartition},
		{"negative partition", Reassignment{Topic: "r", Partition: -1, Replicas: []int32{1}}, kerr.UnknownTopicOrPartition},
		{"empty list", Reassignment{Topic: "r", Replicas: []int32{}}, kerr.InvalidReplicaAssignment},
		{"unregistered broker", Reassignment{Topic: "r", Replicas: []int32{1, 9}}, kerr.InvalidReplicaAssignment},
		{"broker twice", Reassignment{Topic: "r", Replicas: []int32{2, 1, 2}}, kerr.InvalidReplicaAssignment},
		{"cancel without a reassignment", Reassignment{Topic: "r"}, kerr.NoReassignmentInProgress},
	}
	before := q.leader().Image().Offset
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if res := q.reassign(true, tc.r)[0]; res.Err != tc.want {
				t.Fatalf("got %v (%s), want %v", res.Err, res.Message, tc.want)
			}
		})
	}
	if got := q.leader().Image().Offset; got != before {
		t.Fatalf("refusals committed something: offset %d, was %d", got, before)
	}
}

// TestCancelNeedingUncleanElection: when every ISR member is an adding replica the revert
// would elect out of sync, which this controller refuses (Kafka does unless unclean election
// is enabled).
func TestCancelNeedingUncleanElection(t *testing.T) {
	im := emptyImage()
	im.Brokers = map[int32]*BrokerInfo{1: {ID: 1}, 2: {ID: 2}}
	tp := &TopicInfo{Name: "r", ID: TopicID{1}, Partitions: []PartitionInfo{{Replicas: []int32{2, 1}, ISR: []int32{2}, Leader: 2,
		AddingReplicas: []int32{2}, RemovingReplicas: []int32{1}}}}
	im.Topics["r"], im.TopicsByID[tp.ID] = tp, tp
	if _, verr := planReassignment(im, &Reassignment{Topic: "r"}, true); verr == nil || verr.code != kerr.InvalidReplicaAssignment {
		t.Fatalf("got %v, want INVALID_REPLICA_ASSIGNMENT", verr)
	}
}

// TestReassignmentRecordRoundTrip: the assignment fields survive encoding, and a change
// record with a bad assignment is skipped.
func TestReassignmentRecordRoundTrip(t *testing.T) {
	rec := &PartitionChangeRecord{TopicID: TopicID{1}, Partition: 0, Leader: 1, ISR: []int32{1}, LeaderEpoch: 1, PartitionEpoch: 1,
		Replicas: []int32{3, 1}, AddingReplicas: []int32{3}, RemovingReplicas: []int32{1}}
	back, err := DecodeRecord(EncodeRecord(rec))
	if err != nil || fmt.Sprint(back) != fmt.Sprint(rec) {
		t.Fatalf("round trip: %+v %v, want %+v", back, err, rec)
	}
	im := emptyImage()
	next, errs := applyRecords(im, 1, []Record{
		&TopicRecord{Name: "r", TopicID: TopicID{1}},
		&PartitionRecord{TopicID: TopicID{1}, Partition: 0, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1},
		&PartitionChangeRecord{TopicID: TopicID{1}, Partition: 0, Leader: 1, ISR: []int32{1}, PartitionEpoch: 1,
			Replicas: []int32{1}, AddingReplicas: []int32{3}},
		rec,
	})
	if len(errs) != 1 {
		t.Fatalf("errors %v, want one (the adding replica outside the replicas)", errs)
	}
	p := next.Topics["r"].Partitions[0]
	if !slices.Equal(p.Replicas, []int32{3, 1}) || !slices.Equal(p.AddingReplicas, []int32{3}) || !slices.Equal(p.RemovingReplicas, []int32{1}) {
		t.Fatalf("applied %+v", p)
	}
	// A snapshot keeps them.
	back2, err := decodeImage(encodeImage(next))
	if err != nil || !slices.Equal(back2.Topics["r"].Partitions[0].AddingReplicas, []int32{3}) {
		t.Fatalf("snapshot: %+v %v", back2, err)
	}
}

// TestCreatePartitionsPlacesReplicatedPartitions: growing a replication factor 2 topic on four
// brokers places every new partition on two distinct registered brokers, round robin, so the
// six new replicas of three partitions land on every broker; each starts with its replicas as
// ISR and its first replica leading, as Kafka creates them.
func TestCreatePartitionsPlacesReplicatedPartitions(t *testing.T) {
	q, _ := reassignQuorum(t) // "r": one partition on 1,2; brokers 1-4
	q.call(func(c *Controller) error {
		res, err := c.CreatePartitions(testCtx(t), []CreatePartitions{{Topic: "r", Count: 4}}, false)
		if err == nil && res[0].Err != nil {
			err = fmt.Errorf("%v: %s", res[0].Err, res[0].Message)
		}
		return err
	})
	parts := q.leader().Image().Topics["r"].Partitions
	if len(parts) != 4 {
		t.Fatalf("%d partitions, want 4", len(parts))
	}
	perBroker := map[int32]int{}
	for _, p := range parts[1:] {
		if len(p.Replicas) != 2 || p.Replicas[0] == p.Replicas[1] {
			t.Fatalf("partition %d placed on %v, want two distinct brokers", p.Partition, p.Replicas)
		}
		if !slices.Equal(p.ISR, p.Replicas) || p.Leader != p.Replicas[0] {
			t.Fatalf("partition %d: ISR %v leader %d, want ISR = replicas %v and the first leading", p.Partition, p.ISR, p.Leader, p.Replicas)
		}
		for _, r := range p.Replicas {
			if q.leader().Image().Brokers[r] == nil {
				t.Fatalf("partition %d on unregistered broker %d", p.Partition, r)
			}
			perBroker[r]++
		}
	}
	for id, n := range perBroker {
		if n > 2 {
			t.Fatalf("broker %d got %d of the 6 new replicas (%v): not spread", id, n, perBroker)
		}
	}
	if len(perBroker) < 3 {
		t.Fatalf("new replicas on %d brokers only: %v", len(perBroker), perBroker)
	}
}

// TestReassignmentSurvivesLeaderFencing: the removing leader is fenced mid-reassignment; the
// election keeps the reassignment (2, the first replica in the ISR and active, leads), and
// the new leader's AlterPartition that adds 3 completes it, keeping its own leadership (no
// NEW_LEADER_ELECTED) while the leader epoch grows because 1 leaves the assignment.
func TestReassignmentSurvivesLeaderFencing(t *testing.T) {
	q, epochs := reassignQuorum(t)
	wantOK(t, q.reassign(true, Reassignment{Topic: "r", Partition: 0, Replicas: []int32{3, 2}})[0])
	q.heartbeat(BrokerHeartbeat{BrokerID: 1, BrokerEpoch: epochs[1], WantFence: true})
	wantPartition(t, q, PartitionInfo{Replicas: []int32{3, 2, 1}, ISR: []int32{2}, Leader: 2, LeaderEpoch: 1, PartitionEpoch: 2,
		AddingReplicas: []int32{3}, RemovingReplicas: []int32{1}})
	r := q.leader().Image().Topics["r"]
	res := q.alter(AlterPartition{TopicID: r.ID, Partition: 0, LeaderID: 2, BrokerEpoch: epochs[2], LeaderEpoch: 1, PartitionEpoch: 2,
		NewISR: []int32{2, 3}})[0]
	if res.Err != nil || res.Partition == nil || res.Partition.Leader != 2 || !slices.Equal(res.Partition.Replicas, []int32{3, 2}) {
		t.Fatalf("completing AlterPartition from the new leader: %v (%s) %+v", res.Err, res.Message, res.Partition)
	}
	wantPartition(t, q, PartitionInfo{Replicas: []int32{3, 2}, ISR: []int32{2, 3}, Leader: 2, LeaderEpoch: 2, PartitionEpoch: 3})
}
