package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
)

// consumerFetchAt sends a consumer's fetch of the test partition to node, at version, from
// the client rack, with MinBytes (a wait of 100 ms; 0: none). It returns the partition's answer
// and how many record bytes came with it.
func consumerFetchAt(c *replCluster, node int32, version int16, rack string, offset int64, currentLeaderEpoch int32, minBytes int32) (kmsg.FetchResponseTopicPartition, int64) {
	return consumerFetchWait(c, node, version, rack, offset, currentLeaderEpoch, minBytes, 100)
}

// consumerFetchWait is consumerFetchAt with MaxWaitMillis.
func consumerFetchWait(c *replCluster, node int32, version int16, rack string, offset int64, currentLeaderEpoch int32, minBytes, maxWaitMillis int32) (kmsg.FetchResponseTopicPartition, int64) {
	c.t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID, req.MaxBytes, req.SessionEpoch = version, -1, 1<<20, -1
	req.MinBytes, req.MaxWaitMillis, req.Rack = minBytes, maxWaitMillis, rack
	t := kmsg.NewFetchRequestTopic()
	t.Topic, t.TopicID = c.topic, c.id
	p := kmsg.NewFetchRequestTopicPartition()
	p.FetchOffset, p.PartitionMaxBytes, p.CurrentLeaderEpoch = offset, 1<<20, currentLeaderEpoch
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	resp := (&testBroker{Broker: c.nodes[node].broker}).direct(c.t, req).(*splicedFetchResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		c.t.Fatalf("fetch from node %d: %d topics", node, len(resp.Topics))
	}
	var n int64
	for _, s := range resp.records[0][0] {
		n += s.Length
	}
	return resp.Topics[0].Partitions[0], n
}

// publishRacks is publish with broker.rack of each node in the image.
func (c *replCluster) publishRacks(offset int64, part controller.PartitionInfo, racks map[int32]string, to ...int32) {
	c.t.Helper()
	im := c.image(offset, &part)
	for id, rack := range racks {
		if br := im.Brokers[id]; br != nil {
			br.Rack = kmsg.StringPtr(rack)
		}
	}
	for _, id := range to {
		n := c.nodes[id]
		n.meta.im.Store(im)
		if err := n.broker.reconcile(im); err != nil {
			c.t.Fatalf("reconcile on %d: %v", id, err)
		}
	}
}

// TestPreferredReadReplicaRackAware (KIP-392): with RackAwareReplicaSelector, the leader (rack
// a) answers a consumer in rack b with PreferredReadReplica 2 (the in-sync follower there) and
// no records, at once although MinBytes is not met; a consumer in its own rack, in a rack
// with no replica, without a rack, or on a fetch version before 11 reads from the leader; a
// follower that has not reached the fetch offset, or is not in the committed ISR, is not
// chosen; and without replica.selector.class the leader never names another replica.
func TestPreferredReadReplicaRackAware(t *testing.T) {
	racks := map[int32]string{1: "a", 2: "b", 3: "c"}
	c := startReplCluster(t, []int32{1}, map[string]string{"replica.selector.class": rackAwareReplicaSelector}, nil)
	c.nodes[2] = &replNode{id: 2, host: "127.0.0.1", port: 1}
	c.nodes[3] = &replNode{id: 3, host: "127.0.0.1", port: 2}
	part := controller.PartitionInfo{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1, LeaderEpoch: 2}
	c.publishRacks(1, part, racks, 1)
	c.produce(1, kgo.LeaderAck(), "a", "b", "c", "d")
	followerFetch(c, 17, 3, 4, -1) // node 3 has everything
	followerFetch(c, 17, 2, 2, -1) // node 2 has offsets 0 and 1

	check := func(what string, version int16, rack string, offset int64, wantPreferred int32, wantRecords bool) {
		t.Helper()
		// A preferred replica is answered at once: MinBytes cannot be met and the wait is
		// longer than the test's patience (direct fails after testWait).
		minBytes, wait := int32(1), int32(100)
		if wantPreferred >= 0 {
			minBytes, wait = 1<<20, int32(2*testWait/time.Millisecond)
		}
		p, n := consumerFetchWait(c, 1, version, rack, offset, -1, minBytes, wait)
		got := p.PreferredReadReplica
		if version < 11 {
			got = -1 // not in the protocol
		}
		if p.ErrorCode != 0 || got != wantPreferred || (n > 0) != wantRecords {
			t.Fatalf("%s: code %d, preferred replica %d, %d record bytes; want preferred %d, records %v",
				what, p.ErrorCode, p.PreferredReadReplica, n, wantPreferred, wantRecords)
		}
	}
	check("rack b at offset 1", 17, "b", 1, 2, false)
	check("rack b at offset 2 (node 2's log end)", 11, "b", 2, 2, false)
	// Past node 2's log end the leader answers itself (nothing yet: node 2 holds its HW at 2).
	check("rack b at offset 3, past node 2's log end", 17, "b", 3, -1, false)
	check("rack c", 17, "c", 0, 3, false)
	check("the leader's rack", 17, "a", 0, -1, true)
	check("a rack with no replica", 17, "z", 0, -1, true)
	check("no rack", 17, "", 0, -1, true)
	check("fetch v10", 10, "b", 0, -1, true)

	// Node 2 out of the committed ISR: not chosen even though it has the offset.
	part.ISR = []int32{1, 3}
	c.publishRacks(2, part, racks, 1)
	check("rack b with node 2 out of the ISR", 17, "b", 0, -1, true)

	// Without a selector (Kafka's default) the leader serves everyone.
	plain := startReplCluster(t, []int32{1}, nil, nil)
	plain.nodes[2] = &replNode{id: 2, host: "127.0.0.1", port: 1}
	plain.publishRacks(1, controller.PartitionInfo{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1}, racks, 1)
	plain.produce(1, kgo.LeaderAck(), "a")
	followerFetch(plain, 17, 2, 1, -1)
	if p, n := consumerFetchAt(plain, 1, 17, "b", 0, -1, 1); p.PreferredReadReplica != -1 || n == 0 {
		t.Fatalf("without replica.selector.class: preferred replica %d, %d record bytes", p.PreferredReadReplica, n)
	}
}

// TestFollowerServesConsumerUpToItsHighWatermark (KIP-392): a follower serves a consumer's
// v11+ fetch from its own log, but only below the HW it learned from the leader, even though
// it holds records past it: while the leader's HW is held at 0 by an ISR member that does not
// fetch (node 3), the follower that copied four records answers with none. Within its log
// past its HW the answer is empty; past its log end OFFSET_OUT_OF_RANGE; an older client
// epoch FENCED_LEADER_EPOCH; a fetch before v11 NOT_LEADER_OR_FOLLOWER. Once node 3 catches
// up, the HW reaches the follower with its next fetch and the consumer reads the records.
func TestFollowerServesConsumerUpToItsHighWatermark(t *testing.T) {
	c := startReplCluster(t, []int32{1, 2}, nil, nil)
	c.nodes[3] = &replNode{id: 3, host: "127.0.0.1", port: 1}
	c.publish(1, controller.PartitionInfo{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1, LeaderEpoch: 3}, 1, 2)
	c.produce(1, kgo.LeaderAck(), "a", "b", "c", "d")
	waitFor(t, "the follower to copy the four records", func() bool { return c.part(2).replica.Snapshot().LogEnd == 4 })
	if s := c.part(2).replica.Snapshot(); s.HighWatermark != 0 {
		t.Fatalf("follower HW %d while the leader's is held at 0", s.HighWatermark)
	}

	p, n := consumerFetchAt(c, 2, 17, "", 0, 3, 0)
	if p.ErrorCode != 0 || n != 0 || p.HighWatermark != 0 {
		t.Fatalf("follower fetch from 0 with its HW at 0: code %d, %d record bytes, HW %d", p.ErrorCode, n, p.HighWatermark)
	}
	if p, n := consumerFetchAt(c, 2, 17, "", 4, 3, 0); p.ErrorCode != 0 || n != 0 {
		t.Fatalf("follower fetch at its log end: code %d, %d bytes", p.ErrorCode, n)
	}
	if p, _ := consumerFetchAt(c, 2, 17, "", 5, 3, 0); p.ErrorCode != kerr.OffsetOutOfRange.Code {
		t.Fatalf("follower fetch past its log end: code %d, want OFFSET_OUT_OF_RANGE", p.ErrorCode)
	}
	if p, _ := consumerFetchAt(c, 2, 17, "", 0, 2, 0); p.ErrorCode != kerr.FencedLeaderEpoch.Code {
		t.Fatalf("follower fetch at an older epoch: code %d, want FENCED_LEADER_EPOCH", p.ErrorCode)
	}
	if p, _ := consumerFetchAt(c, 2, 10, "", 0, 3, 0); p.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("follower fetch v10: code %d, want NOT_LEADER_OR_FOLLOWER", p.ErrorCode)
	}

	followerFetch(c, 17, 3, 4, -1) // node 3 has the four records: the leader's HW is 4
	waitFor(t, "the follower to learn HW 4", func() bool { return c.part(2).replica.Snapshot().HighWatermark == 4 })
	p, n = consumerFetchAt(c, 2, 17, "", 0, 3, 0)
	if p.ErrorCode != 0 || n == 0 || p.HighWatermark != 4 {
		t.Fatalf("follower fetch after the HW moved: code %d, %d record bytes, HW %d", p.ErrorCode, n, p.HighWatermark)
	}
}
