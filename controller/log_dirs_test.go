package controller

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestLogDirsPartialOfflineMovesOnlyItsReplicas: broker 1 registers two log directories and
// reports (AssignReplicaDirs) t-0 in the first and t-1 in the second. When its heartbeat
// reports the first offline, only t-0 (which 1 leads) moves to another ISR member and drops 1
// from its ISR; t-1 keeps 1 in its ISR. While the directory is offline 1 is not taken back
// into t-0's ISR (INELIGIBLE_REPLICA); once reported online it is.
func TestLogDirsPartialOfflineMovesOnlyItsReplicas(t *testing.T) {
	q := newTestQuorumWith(t, func(cfg *Config) { cfg.SessionTimeout = -1 }, 1, 2, 3)
	q.waitFor(q.leader().cfg.NodeID, "a cluster ID", func(im *Image) bool { return im.ClusterID != "" })
	d1, d2 := [16]byte{0xd1}, [16]byte{0xd2}
	epochs := map[int32]int64{}
	for id := int32(1); id <= 3; id++ {
		q.call(func(c *Controller) error {
			var err error
			epochs[id], err = c.RegisterBroker(testCtx(t), BrokerRegistration{BrokerID: id, ClusterID: c.Image().ClusterID,
				IncarnationID: [16]byte{1, byte(id)}, Endpoints: []Endpoint{{Listener: "PLAINTEXT", Host: "h", Port: 9092 + id}},
				LogDirs: [][16]byte{d1, d2}})
			return err
		})
		q.heartbeat(BrokerHeartbeat{BrokerID: id, BrokerEpoch: epochs[id]})
	}
	if b := q.leader().Image().Brokers[1]; len(b.LogDirs) != 2 {
		t.Fatalf("broker 1 registered %v, want two log directories", b.LogDirs)
	}
	q.call(func(c *Controller) error {
		_, err := c.CreateTopics(testCtx(t), []CreateTopic{{Name: "t", NumPartitions: -1, ReplicationFactor: -1,
			Assignments: map[int32][]int32{0: {1, 2, 3}, 1: {1, 3, 2}}}}, false)
		return err
	})
	id := q.leader().Image().Topics["t"].ID
	var errs []error
	q.call(func(c *Controller) error {
		var err error
		errs, err = c.AssignReplicaDirs(testCtx(t), 1, epochs[1], []ReplicaDirAssignment{
			{TopicID: id, Partition: 0, Dir: d1}, {TopicID: id, Partition: 1, Dir: d2},
			{TopicID: TopicID{9}, Partition: 0, Dir: d1}})
		return err
	})
	if errs[0] != nil || errs[1] != nil || errs[2] != kerr.UnknownTopicID {
		t.Fatalf("AssignReplicaDirs: %v", errs)
	}
	if p := q.partitions("t")[0]; p.Directories[1] != d1 {
		t.Fatalf("t-0 directories %v", p.Directories)
	}

	q.heartbeat(BrokerHeartbeat{BrokerID: 1, BrokerEpoch: epochs[1], OfflineLogDirs: [][16]byte{d1}})
	p0, p1 := q.partitions("t")[0], q.partitions("t")[1]
	if p0.Leader == 1 || p0.Leader == -1 || slices.Contains(p0.ISR, 1) {
		t.Fatalf("t-0 (in the offline directory) after the report: %+v, want another leader without 1", p0)
	}
	if p1.Leader != 1 || !slices.Contains(p1.ISR, 1) {
		t.Fatalf("t-1 (in the working directory) after the report: %+v, want it still led by 1", p1)
	}
	if b := q.leader().Image().Brokers[1]; b.LogDirOffline || !slices.Equal(b.OfflineLogDirs, [][16]byte{d1}) {
		t.Fatalf("broker 1: %+v", b)
	}
	before := q.leader().Image().Offset
	q.heartbeat(BrokerHeartbeat{BrokerID: 1, BrokerEpoch: epochs[1], OfflineLogDirs: [][16]byte{d1}})
	if after := q.leader().Image().Offset; after != before {
		t.Fatalf("a repeated report wrote metadata (offset %d -> %d)", before, after)
	}
	isr := append(slices.Clone(p0.ISR), 1)
	if r := q.alter(proposal(q, epochs, 0, isr...))[0]; r.Err != kerr.IneligibleReplica {
		t.Fatalf("adding 1 back to t-0 while its directory is offline: %v (%s)", r.Err, r.Message)
	}

	// Every directory offline: the whole broker, as with a single directory.
	q.heartbeat(BrokerHeartbeat{BrokerID: 1, BrokerEpoch: epochs[1], OfflineLogDirs: [][16]byte{d1, d2}})
	if p1 := q.partitions("t")[1]; p1.Leader == 1 || slices.Contains(p1.ISR, 1) {
		t.Fatalf("t-1 with both directories offline: %+v", p1)
	}
	if b := q.leader().Image().Brokers[1]; !b.LogDirOffline {
		t.Fatalf("broker 1 with both directories offline: %+v", b)
	}

	q.heartbeat(BrokerHeartbeat{BrokerID: 1, BrokerEpoch: epochs[1]})
	if b := q.leader().Image().Brokers[1]; b.LogDirOffline || len(b.OfflineLogDirs) != 0 {
		t.Fatalf("broker 1 after reporting every directory online: %+v", b)
	}
	if r := q.alter(proposal(q, epochs, 0, isr...))[0]; r.Err != nil {
		t.Fatalf("adding 1 back to t-0: %v (%s)", r.Err, r.Message)
	}
}
