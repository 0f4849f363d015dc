package broker

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"sluice/controller"
)

// startExpansionCluster runs node 1 as the leader of a partition on replicas 1, 2, 3 with ISR
// 1, 2; nodes 2 and 3 do not run (the test fetches as them). Node 2 has fetched "a", so the
// HW is 1.
func startExpansionCluster(t *testing.T) *replCluster {
	t.Helper()
	c := startReplCluster(t, []int32{1}, nil, nil)
	c.nodes[2] = &replNode{id: 2, host: "127.0.0.1", port: 1}
	c.nodes[3] = &replNode{id: 3, host: "127.0.0.1", port: 2}
	c.publish(1, controller.PartitionInfo{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, Leader: 1}, 1)
	c.produce(1, kgo.LeaderAck(), "a")
	followerFetch(c, 12, 2, 1, 0)
	waitFor(t, "the HW to reach 1", func() bool { return c.part(1).replica.Snapshot().HighWatermark == 1 })
	return c
}

// expandTo3 has replica 3 fetch up to the HW, so the leader proposes ISR [1 2 3], and waits
// until the answer to that proposal was handled.
func expandTo3(t *testing.T, c *replCluster) {
	t.Helper()
	alter := c.nodes[1].broker.alterPartition.(*controllerAlterPartition)
	before := alter.answered.Load()
	followerFetch(c, 12, 3, 1, 0)
	select {
	case got := <-c.nodes[1].meta.alters:
		if !slices.Equal(got.NewISR, []int32{1, 2, 3}) {
			t.Fatalf("proposal %+v, want ISR [1 2 3]", got)
		}
	case <-time.After(testWait):
		t.Fatal("no ISR expansion proposed for replica 3")
	}
	waitFor(t, "the answer to be handled", func() bool { return alter.answered.Load() > before })
}

// assertHWHeldByReplica3: after node 2 fetched a second record that replica 3 does not have,
// the pending expansion still counts in the HW, so the record is not acknowledged.
func assertHWHeldByReplica3(t *testing.T, c *replCluster) {
	t.Helper()
	c.produce(1, kgo.LeaderAck(), "b")
	followerFetch(c, 12, 2, 2, 0)
	if _, pending := c.part(1).replica.ISR(); !slices.Equal(pending, []int32{1, 2, 3}) {
		t.Fatalf("pending ISR %v, want [1 2 3] kept", pending)
	}
	if hw := c.part(1).replica.Snapshot().HighWatermark; hw != 1 {
		t.Fatalf("HW %d: the leader counts a record replica 3 lacks as committed", hw)
	}
}

// TestReplicationExpansionThatMovedLeadershipKeepsCountingTheNewMember is the regression test
// for an acknowledged record lost in a reassignment (CI, TestReassignPartitionsTool): the
// controller committed the expansion that completed a reassignment and moved the leadership
// to the new member (NEW_LEADER_ELECTED); the old leader dropped the pending expansion, went
// back to computing the HW over the old ISR, and acknowledged records the new leader never
// got, which the other follower then truncated away.
func TestReplicationExpansionThatMovedLeadershipKeepsCountingTheNewMember(t *testing.T) {
	c := startExpansionCluster(t)
	c.nodes[1].meta.answer.Store(kerr.NewLeaderElected)
	expandTo3(t, c)
	assertHWHeldByReplica3(t, c)
}

// TestReplicationUnconfirmedExpansionStaysPendingAndIsSentAgain: an AlterPartition call that
// failed (here the whole call) may have been committed, so the expansion stays pending and
// counts in the HW, and it is sent again.
func TestReplicationUnconfirmedExpansionStaysPendingAndIsSentAgain(t *testing.T) {
	c := startExpansionCluster(t)
	timeout := error(kerr.RequestTimedOut)
	c.nodes[1].meta.callErr.Store(&timeout)
	expandTo3(t, c)
	assertHWHeldByReplica3(t, c)
	select {
	case got := <-c.nodes[1].meta.alters:
		if !slices.Equal(got.NewISR, []int32{1, 2, 3}) {
			t.Fatalf("resent proposal %+v", got)
		}
	case <-time.After(testWait):
		t.Fatal("the unconfirmed expansion was not sent again")
	}
}

// TestReplicationRefusedExpansionFallsBackToTheCommittedISR: a refusal that says the change
// was not applied (INELIGIBLE_REPLICA) drops it, and the HW is the committed ISR's again.
func TestReplicationRefusedExpansionFallsBackToTheCommittedISR(t *testing.T) {
	c := startExpansionCluster(t)
	c.nodes[1].meta.answer.Store(kerr.IneligibleReplica)
	expandTo3(t, c)
	if _, pending := c.part(1).replica.ISR(); pending != nil {
		t.Fatalf("pending ISR %v after INELIGIBLE_REPLICA", pending)
	}
	c.produce(1, kgo.LeaderAck(), "b")
	followerFetch(c, 12, 2, 2, 0)
	waitFor(t, "the HW to follow the committed ISR", func() bool { return c.part(1).replica.Snapshot().HighWatermark == 2 })
}

func TestAlterPartitionOutcome(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want isrOutcome
	}{
		{nil, isrCommitted},
		{kerr.NewLeaderElected, isrCommitted},
		{kerr.IneligibleReplica, isrRefused},
		{kerr.UnsupportedVersion, isrRefused},
		{kerr.InvalidUpdateVersion, isrStale},
		{kerr.FencedLeaderEpoch, isrStale},
		{kerr.NotController, isrUnknown},
		{errors.New("dial tcp: connection refused"), isrUnknown},
	} {
		if got := alterPartitionOutcome(tc.err); got != tc.want {
			t.Errorf("alterPartitionOutcome(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

// TestReplicationStaleISRChangeIsNotResent: an expansion answered INVALID_UPDATE_VERSION (the
// metadata moved past the state it was computed from) stays pending, counted in the HW, and
// is not sent again on top of the newer state (a resend took the newest image's partition
// epoch, so the controller could accept a change computed from an older state).
func TestReplicationStaleISRChangeIsNotResent(t *testing.T) {
	c := startExpansionCluster(t)
	c.nodes[1].meta.answer.Store(kerr.InvalidUpdateVersion)
	expandTo3(t, c)
	assertHWHeldByReplica3(t, c)
	select {
	case got := <-c.nodes[1].meta.alters:
		t.Fatalf("a stale change was sent again: %+v", got)
	case <-time.After(2 * alterPartitionRetryBackoff):
	}
}
