package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"sluice/controller"
)

// TestReplicationLagStats: the leader reports each follower's lag in records and whether it
// is caught up, and the follower's fetcher reports the leader's HW minus its log end (Kafka's
// FetcherLagMetrics ConsumerLag): zero once it caught up; with the follower gone the leader
// sees it fall behind by what was produced since.
func TestReplicationLagStats(t *testing.T) {
	c := startReplCluster(t, []int32{1, 2}, nil, nil)
	c.publish(1, controller.PartitionInfo{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1})
	c.produce(1, kgo.AllISRAcks(), "a", "b", "c")
	waitFor(t, "the follower's fetcher to report no lag", func() bool {
		l := c.nodes[2].broker.FetcherLags()
		return len(l) == 1 && l[0].LagRecords == 0 && l[0].Leader == 1 && l[0].Topic == c.topic
	})
	if l := c.nodes[1].broker.FetcherLags(); len(l) != 0 {
		t.Fatalf("the leader follows %+v, want nothing", l)
	}
	lags := c.nodes[1].broker.ReplicaLags()
	if len(lags) != 1 || lags[0].Replica != 2 || lags[0].LagRecords != 0 || !lags[0].CaughtUp || lags[0].SinceCaughtUpSeconds < 0 {
		t.Fatalf("leader's view after acks=all: %+v, want follower 2 at lag 0, caught up", lags)
	}
	if l := c.nodes[2].broker.ReplicaLags(); len(l) != 0 {
		t.Fatalf("the follower reports %+v as leader, want nothing", l)
	}
	c.stopNode(2)
	c.produce(1, kgo.LeaderAck(), "d", "e")
	if lags := c.nodes[1].broker.ReplicaLags(); len(lags) != 1 || lags[0].LagRecords != 2 {
		t.Fatalf("leader's view with the follower gone: %+v, want lag 2", lags)
	}
}
