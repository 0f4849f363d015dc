package broker

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"sluice/controller"
)

func (f *fakeMetadata) AlterPartitionReassignments(context.Context, []controller.Reassignment, bool) ([]controller.ReassignmentResult, error) {
	return nil, errFake
}

// TestReassignmentReconcile walks a partition through the images a reassignment from 1,2 to
// 3,2 produces: the adding replica 3 opens an empty log, fetches from the leader and is
// proposed into the ISR once caught up; after the completing image (3 leads at a new epoch,
// 1 is no replica) node 1 has stopped hosting the partition and removed its directory, 3
// holds the leader's log byte for byte, and acks=all produces through 3 are answered.
func TestReassignmentReconcile(t *testing.T) {
	c := startReplCluster(t, []int32{1, 2, 3}, nil, nil)
	// Each fake metadata hands out producer IDs from 1000, and a client asks any broker for
	// one: distinct ranges, or node 3's producer could reuse node 1's ID and its first batch
	// be taken for a duplicate of node 1's first.
	for id, n := range c.nodes {
		n.meta.nextID.Store(int64(id) * 100000)
	}
	c.nodes[1].meta.accept.Store(true)
	c.publish(1, controller.PartitionInfo{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1})
	c.produce(1, kgo.AllISRAcks(), "a", "b", "c")
	if c.part(3) != nil {
		t.Fatal("node 3 hosts the partition before the reassignment")
	}

	c.publish(2, controller.PartitionInfo{Replicas: []int32{3, 2, 1}, ISR: []int32{1, 2}, Leader: 1, PartitionEpoch: 1,
		AddingReplicas: []int32{3}, RemovingReplicas: []int32{1}})
	c.produce(1, kgo.AllISRAcks(), "d")
	// The leader proposes 3 into the ISR once it has caught up.
	deadline := testContext(t)
	for proposed := false; !proposed; {
		select {
		case a := <-c.nodes[1].meta.alters:
			proposed = slices.Contains(a.NewISR, 3)
		case <-deadline.Done():
			t.Fatal("the leader never proposed the adding replica into the ISR")
		}
	}
	if got := c.part(3).replica.Snapshot().LogEnd; got < 4 {
		t.Fatalf("3 proposed into the ISR at log end %d, before it had the leader's 4 records", got)
	}

	dir1 := c.nodes[1].broker.partitionDir(topicPartition{c.topic, 0})
	c.publish(3, controller.PartitionInfo{Replicas: []int32{3, 2}, ISR: []int32{2, 3}, Leader: 3, LeaderEpoch: 1, PartitionEpoch: 2})
	if c.part(1) != nil {
		t.Fatal("node 1 still hosts the partition it is no replica of")
	}
	if _, err := os.Stat(dir1); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("node 1's partition directory %s is still there: %v", dir1, err)
	}
	c.produce(3, kgo.AllISRAcks(), "e")
	waitFor(t, "node 2 to reach node 3's log end", func() bool {
		return c.part(2).replica.Snapshot().LogEnd == c.part(3).replica.Snapshot().LogEnd
	})
	if got := c.part(3).replica.Snapshot().HighWatermark; got != 5 {
		t.Fatalf("new leader's HW %d after 5 acknowledged records: %+v", got, c.part(3).replica.Snapshot())
	}
	if !bytes.Equal(c.logBytes(2), c.logBytes(3)) {
		t.Fatal("the moved replica's log differs from the other replica's")
	}
}
