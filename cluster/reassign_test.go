package cluster

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
)

// TestClusterReassignments: a reassignment started through a follower's Link (forwarded to
// the active controller as AlterPartitionReassignments v1) is in the follower's image when the
// call returns, with per-partition errors mapped back in order; ListPartitionReassignments on
// any controller listener lists it; a follower's controller listener refuses
// AlterPartitionReassignments with NOT_CONTROLLER.
func TestClusterReassignments(t *testing.T) {
	ctx := testCtx(t)
	tc := newTestCluster(t, clusterTestConfig{tick: 10 * time.Millisecond, session: time.Minute, heartbeat: 50 * time.Millisecond})
	tc.registerAll(ctx)
	lead := tc.leader()
	if res, err := lead.link.CreateTopics(ctx, []controller.CreateTopic{{Name: "moving", NumPartitions: -1, ReplicationFactor: -1,
		Assignments: map[int32][]int32{0: {1, 2}}}}, false); err != nil || res[0].Err != nil {
		t.Fatalf("%v %+v", err, res)
	}
	f := tc.follower()
	res, err := f.link.AlterPartitionReassignments(ctx, []controller.Reassignment{
		{Topic: "nope", Partition: 0, Replicas: []int32{1}},
		{Topic: "moving", Partition: 0, Replicas: []int32{3, 2}},
		{Topic: "moving", Partition: 0, Replicas: []int32{3}},
	}, false)
	if err != nil || len(res) != 3 {
		t.Fatalf("through follower %d: %v %+v", f.id, err, res)
	}
	if res[0].Err != kerr.UnknownTopicOrPartition || res[1].Err != nil || res[2].Err != kerr.InvalidReplicationFactor {
		t.Fatalf("results %+v, want UNKNOWN_TOPIC_OR_PARTITION, success, INVALID_REPLICATION_FACTOR", res)
	}
	p := f.ctrl.Image().Topics["moving"].Partitions[0]
	if !slices.Equal(p.Replicas, []int32{3, 2, 1}) || !slices.Equal(p.AddingReplicas, []int32{3}) || !slices.Equal(p.RemovingReplicas, []int32{1}) {
		t.Fatalf("the follower's image after the call: %+v", p)
	}

	for id := range tc.nodes {
		eventually(t, "node's image has the reassignment", func() bool {
			topic := tc.nodes[id].ctrl.Image().Topics["moving"] // nil until the node applied its creation
			return topic != nil && topic.Partitions[0].Reassigning()
		})
		lr := tc.rawRequest(ctx, id, kmsg.NewPtrListPartitionReassignmentsRequest()).(*kmsg.ListPartitionReassignmentsResponse)
		if len(lr.Topics) != 1 || lr.Topics[0].Topic != "moving" || len(lr.Topics[0].Partitions) != 1 {
			t.Fatalf("node %d lists %+v", id, lr.Topics)
		}
		if lp := lr.Topics[0].Partitions[0]; !slices.Equal(lp.Replicas, []int32{3, 2, 1}) || !slices.Equal(lp.AddingReplicas, []int32{3}) ||
			!slices.Equal(lp.RemovingReplicas, []int32{1}) {
			t.Fatalf("node %d lists %+v", id, lp)
		}
	}

	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = "moving"
	rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition() // null replicas: cancel
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	if r := tc.rawRequest(ctx, tc.follower().id, req).(*kmsg.AlterPartitionAssignmentsResponse); r.ErrorCode != kerr.NotController.Code {
		t.Fatalf("to a follower: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	r := tc.rawRequest(ctx, tc.leader().id, req).(*kmsg.AlterPartitionAssignmentsResponse)
	if r.ErrorCode != 0 || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("cancel on the leader: %v %+v", kerr.ErrorForCode(r.ErrorCode), r.Topics)
	}
	eventually(t, "the cancel reaches the follower", func() bool {
		p := f.ctrl.Image().Topics["moving"].Partitions[0]
		return !p.Reassigning() && slices.Equal(p.Replicas, []int32{2, 1}) // Kafka's revert: the replicas without the adding ones
	})
}
