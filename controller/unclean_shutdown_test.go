package controller

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// registerAfter registers incarnation inc of broker id with previousEpoch as its
// BrokerRegistration.PreviousBrokerEpoch (what its clean shutdown file held; -1 none).
func (q *testQuorum) registerAfter(id int32, inc byte, previousEpoch int64) int64 {
	q.t.Helper()
	var epoch int64
	q.call(func(c *Controller) error {
		var err error
		epoch, err = c.RegisterBroker(testCtx(q.t), BrokerRegistration{BrokerID: id, ClusterID: c.Image().ClusterID,
			IncarnationID: [16]byte{0: inc, 1: byte(id)}, Endpoints: []Endpoint{{Listener: "PLAINTEXT", Host: "h", Port: 9092 + id}},
			PreviousBrokerEpoch: previousEpoch})
		return err
	})
	return epoch
}

// TestUncleanShutdownLeavesELR: KIP-966 unclean shutdown detection. With min.insync.replicas=2
// and t-0 on 1,2,3, brokers 3, 2 and 1 are fenced in turn, leaving the ISR empty, the ELR
// [1,2] and the last known ELR [1]. A new incarnation of 2 whose PreviousBrokerEpoch is its
// last epoch (a clean shutdown) stays in the ELR; one of 1 with -1 (no clean shutdown file)
// leaves it but stays the last known leader (Kafka keeps it there for balanced recovery); a
// later incarnation of 2 naming an older epoch than its last one leaves it too. Then 2, active
// but in neither list, is not elected; 1 is, only as an unclean election in leader recovery.
// Before, every new incarnation kept its ELR memberships, and 2 would have led cleanly.
func TestUncleanShutdownLeavesELR(t *testing.T) {
	q := newTestQuorumWith(t, func(cfg *Config) {
		cfg.SessionTimeout, cfg.EligibleLeaderReplicas, cfg.MinInsyncReplicas = -1, true, 2
	}, 1, 2, 3)
	q.waitFor(q.leader().cfg.NodeID, "a cluster ID", func(im *Image) bool { return im.ClusterID != "" })
	epochs := map[int32]int64{}
	for id := int32(1); id <= 3; id++ {
		epochs[id] = q.register(id, 1)
		q.heartbeat(BrokerHeartbeat{BrokerID: id, BrokerEpoch: epochs[id]})
	}
	q.call(func(c *Controller) error {
		res, err := c.CreateTopics(testCtx(t), []CreateTopic{{Name: "t", NumPartitions: -1, ReplicationFactor: -1,
			Assignments: map[int32][]int32{0: {1, 2, 3}}}}, false)
		if err == nil && res[0].Err != nil {
			err = fmt.Errorf("%v: %s", res[0].Err, res[0].Message)
		}
		return err
	})
	for _, id := range []int32{3, 2, 1} {
		q.heartbeat(BrokerHeartbeat{BrokerID: id, BrokerEpoch: epochs[id], WantFence: true})
	}
	want := func(what string, elr, lastKnown []int32) PartitionInfo {
		t.Helper()
		p := q.partitions("t")[0]
		if p.Leader != -1 || len(p.ISR) != 0 || !slices.Equal(p.ELR, elr) || !slices.Equal(p.LastKnownELR, lastKnown) {
			t.Fatalf("%s: leader %d ISR %v ELR %v last known ELR %v; want leader -1, ISR [], ELR %v, last known ELR %v",
				what, p.Leader, p.ISR, p.ELR, p.LastKnownELR, elr, lastKnown)
		}
		return p
	}
	want("all three fenced", []int32{1, 2}, []int32{1})

	old2 := epochs[2]
	epochs[2] = q.registerAfter(2, 2, old2)
	if epochs[2] != old2+1 {
		t.Fatalf("broker 2's new incarnation got epoch %d, want %d", epochs[2], old2+1)
	}
	want("2 back after a clean shutdown", []int32{1, 2}, []int32{1})

	epochs[1] = q.registerAfter(1, 2, -1)
	want("1 back without a clean shutdown file", []int32{2}, []int32{1})

	epochs[2] = q.registerAfter(2, 3, old2) // not the epoch 2 last had
	want("2 back naming an older epoch", nil, []int32{1})

	q.heartbeat(BrokerHeartbeat{BrokerID: 2, BrokerEpoch: epochs[2]})
	if b := q.leader().Image().Brokers[2]; b.Fenced {
		t.Fatalf("broker 2 not unfenced: %+v", b)
	}
	want("2 active but no longer eligible", nil, []int32{1})
	q.heartbeat(BrokerHeartbeat{BrokerID: 1, BrokerEpoch: epochs[1]})
	p := q.partitions("t")[0]
	if p.Leader != 1 || !slices.Equal(p.ISR, []int32{1}) || !p.LeaderRecovering || len(p.ELR) != 0 || len(p.LastKnownELR) != 0 {
		t.Fatalf("1 back: want it elected uncleanly (ISR [1], recovering), got %+v", p)
	}
}

// TestUncleanShutdownAfterSessionExpiry: t-0 on 1,2 with min.insync.replicas=2; broker 2
// stops heartbeating (a crash), its session expires on the injected clock and it is fenced,
// the ISR shrinking to [1] and 2 entering the ELR; its next process, with no clean shutdown
// file, registers and leaves the ELR. Before, it stayed there, eligible to lead cleanly.
func TestUncleanShutdownAfterSessionExpiry(t *testing.T) {
	q := newTestQuorumWith(t, func(cfg *Config) {
		cfg.SessionTimeout, cfg.EligibleLeaderReplicas, cfg.MinInsyncReplicas = time.Second, true, 2
	}, 1, 2, 3)
	q.waitFor(q.leader().cfg.NodeID, "a cluster ID", func(im *Image) bool { return im.ClusterID != "" })
	epochs := map[int32]int64{}
	for id := int32(1); id <= 2; id++ {
		epochs[id] = q.register(id, 1)
		q.heartbeat(BrokerHeartbeat{BrokerID: id, BrokerEpoch: epochs[id]})
	}
	q.call(func(c *Controller) error {
		res, err := c.CreateTopics(testCtx(t), []CreateTopic{{Name: "t", NumPartitions: -1, ReplicationFactor: -1,
			Assignments: map[int32][]int32{0: {1, 2}}}}, false)
		if err == nil && res[0].Err != nil {
			err = fmt.Errorf("%v: %s", res[0].Err, res[0].Message)
		}
		return err
	})
	for i := 0; i < 100 && !q.leader().Image().Brokers[2].Fenced; i++ {
		q.heartbeat(BrokerHeartbeat{BrokerID: 1, BrokerEpoch: epochs[1]})
		q.tick()
	}
	if p := q.partitions("t")[0]; p.Leader != 1 || !slices.Equal(p.ISR, []int32{1}) || !slices.Equal(p.ELR, []int32{2}) {
		t.Fatalf("after 2's session expired: leader %d ISR %v ELR %v, want leader 1, ISR [1], ELR [2]", p.Leader, p.ISR, p.ELR)
	}
	epochs[2] = q.registerAfter(2, 2, -1)
	if p := q.partitions("t")[0]; p.Leader != 1 || !slices.Equal(p.ISR, []int32{1}) || len(p.ELR) != 0 {
		t.Fatalf("after 2's unclean restart: leader %d ISR %v ELR %v, want leader 1, ISR [1], ELR []", p.Leader, p.ISR, p.ELR)
	}
}
