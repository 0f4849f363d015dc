package cluster

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
)

// TestAlterPartitionVersions: the handler answers a fenced member of the new ISR with
// Kafka's code for the request's version (OPERATION_NOT_ATTEMPTED before v2,
// INELIGIBLE_REPLICA from v2), takes v3's member epochs, and refuses RECOVERING.
func TestAlterPartitionVersions(t *testing.T) {
	ctx := testCtx(t)
	c, err := controller.Start(controller.Config{NodeID: 1, Dir: t.TempDir(), SessionTimeout: -1, Logger: quietLogger(),
		Endpoints: []controller.Endpoint{{Listener: "PLAINTEXT", Host: "127.0.0.1", Port: 9092}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := NewServer(ServerConfig{Controller: c, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	epoch2, err := c.RegisterBroker(ctx, controller.BrokerRegistration{BrokerID: 2, ClusterID: c.Image().ClusterID, IncarnationID: [16]byte{2}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Heartbeat(ctx, controller.BrokerHeartbeat{BrokerID: 2, BrokerEpoch: epoch2, MetadataOffset: c.Image().Offset}); err != nil {
		t.Fatal(err)
	}
	created, err := c.CreateTopics(ctx, []controller.CreateTopic{{Name: "t", NumPartitions: -1, ReplicationFactor: -1,
		Assignments: map[int32][]int32{0: {1, 2}}}}, false)
	if err != nil || created[0].Err != nil {
		t.Fatalf("%v %+v", err, created)
	}
	epoch1 := c.Image().Brokers[1].Epoch

	send := func(version int16, pe int32, isr []int32, epochs []int64, recovering bool) kmsg.AlterPartitionResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrAlterPartitionRequest()
		req.Version, req.BrokerID, req.BrokerEpoch = version, 1, epoch1
		rt := kmsg.NewAlterPartitionRequestTopic()
		rt.Topic, rt.TopicID = "t", created[0].ID
		rp := kmsg.NewAlterPartitionRequestTopicPartition()
		rp.PartitionEpoch, rp.NewISR = pe, isr
		if recovering {
			rp.LeaderRecoveryState = 1
		}
		for i, id := range isr {
			m := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
			m.BrokerID, m.BrokerEpoch = id, epochs[i]
			rp.NewEpochISR = append(rp.NewEpochISR, m)
		}
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := s.handleAlterPartition(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		r := resp.(*kmsg.AlterPartitionResponse)
		if r.ErrorCode != 0 || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			t.Fatalf("v%d: %v %+v", version, kerr.ErrorForCode(r.ErrorCode), r.Topics)
		}
		return r.Topics[0].Partitions[0]
	}
	code := func(p kmsg.AlterPartitionResponseTopicPartition) error { return kerr.ErrorForCode(p.ErrorCode) }

	if p := send(3, 0, []int32{1, 2}, []int64{epoch1, epoch2 + 1}, false); code(p) != kerr.IneligibleReplica {
		t.Fatalf("v3 member at another epoch: %v", code(p))
	}
	if p := send(1, 0, []int32{1}, []int64{-1}, true); code(p) != kerr.InvalidRequest {
		t.Fatalf("v1 RECOVERING: %v", code(p))
	}
	if p := send(3, 0, []int32{1}, []int64{epoch1}, false); code(p) != nil || p.PartitionEpoch != 1 || p.LeaderID != 1 || len(p.ISR) != 1 {
		t.Fatalf("v3 shrink: %v %+v", code(p), p)
	}
	if _, err := c.Heartbeat(ctx, controller.BrokerHeartbeat{BrokerID: 2, BrokerEpoch: epoch2, WantFence: true}); err != nil {
		t.Fatal(err)
	}
	if p := send(1, 1, []int32{1, 2}, []int64{-1, -1}, false); code(p) != kerr.OperationNotAttempted {
		t.Fatalf("v1 fenced member: %v", code(p))
	}
	if p := send(2, 1, []int32{1, 2}, []int64{-1, -1}, false); code(p) != kerr.IneligibleReplica {
		t.Fatalf("v2 fenced member: %v", code(p))
	}
}
