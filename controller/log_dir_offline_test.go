package controller

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestLogDirOfflineMovesLeadership: a broker whose heartbeat reports its log directory
// offline (a storage error) stays registered and unfenced but loses its leadership and ISR
// memberships at once, as Kafka's controller handles a failed directory: t-0 (on 1,2,3, led by
// 1) moves to 2 with ISR [2,3]. While the directory is offline the leader cannot add it back
// (INELIGIBLE_REPLICA), and heartbeats that keep reporting it change nothing; once a heartbeat
// reports it online the leader's expansion is accepted and a preferred election makes it lead
// again. Before, the heartbeat's OfflineLogDirs were ignored and the partition kept a leader
// that answered every request with KAFKA_STORAGE_ERROR.
func TestLogDirOfflineMovesLeadership(t *testing.T) {
	q, epochs := electionQuorum(t, 0)
	dir := [][16]byte{{0xd1}}
	q.heartbeat(BrokerHeartbeat{BrokerID: 1, BrokerEpoch: epochs[1], OfflineLogDirs: dir})
	p := q.partitions("t")[0]
	if p.Leader != 2 || !slices.Equal(p.ISR, []int32{2, 3}) {
		t.Fatalf("after 1 reported its log directory offline: leader %d ISR %v, want 2 and [2 3]", p.Leader, p.ISR)
	}
	if b := q.leader().Image().Brokers[1]; b.Fenced || !b.LogDirOffline {
		t.Fatalf("broker 1 after reporting its log directory offline: %+v, want unfenced with LogDirOffline", b)
	}
	// t-1 (on 2,3,1) had 1 as a follower: out of its ISR too.
	if p1 := q.partitions("t")[1]; p1.Leader != 2 || slices.Contains(p1.ISR, 1) {
		t.Fatalf("t-1 after 1's storage failed: %+v", p1)
	}
	before := q.leader().Image().Offset
	q.heartbeat(BrokerHeartbeat{BrokerID: 1, BrokerEpoch: epochs[1], OfflineLogDirs: dir})
	if after := q.leader().Image().Offset; after != before {
		t.Fatalf("a repeated offline report wrote metadata (offset %d -> %d)", before, after)
	}
	if r := q.alter(proposal(q, epochs, 0, 2, 3, 1))[0]; r.Err != kerr.IneligibleReplica {
		t.Fatalf("adding the replica whose log directory is offline: %v (%s), want INELIGIBLE_REPLICA", r.Err, r.Message)
	}
	q.heartbeat(BrokerHeartbeat{BrokerID: 1, BrokerEpoch: epochs[1]})
	if b := q.leader().Image().Brokers[1]; b.LogDirOffline {
		t.Fatalf("broker 1 still offline after reporting its log directory online: %+v", b)
	}
	if r := q.alter(proposal(q, epochs, 0, 2, 3, 1))[0]; r.Err != nil {
		t.Fatalf("adding the caught-up replica back: %v (%s)", r.Err, r.Message)
	}
	q.elect(ElectPreferred, []ElectLeadersTopic{{Topic: "t", Partitions: []int32{0}}})
	if p := q.partitions("t")[0]; p.Leader != 1 {
		t.Fatalf("preferred election after 1 rejoined: %+v", p)
	}
}

// TestLogDirOfflineLastISRMember: when the broker whose storage failed is the only ISR member
// no one else may lead (the others are out of sync and unclean election is off): the
// partition has no leader rather than one that loses acknowledged records, and the broker is
// not elected while its directory stays offline, even once it is unfenced after a restart of
// its session; when its directory is reported online it leads again.
func TestLogDirOfflineLastISRMember(t *testing.T) {
	q, epochs := electionQuorum(t, 0)
	if r := q.alter(proposal(q, epochs, 0, 1))[0]; r.Err != nil {
		t.Fatalf("ISR shrink: %v %s", r.Err, r.Message)
	}
	dir := [][16]byte{{0xd1}}
	q.heartbeat(BrokerHeartbeat{BrokerID: 1, BrokerEpoch: epochs[1], OfflineLogDirs: dir})
	if p := q.partitions("t")[0]; p.Leader != -1 {
		t.Fatalf("after the only ISR member's storage failed: %+v, want no leader", p)
	}
	// Fenced and unfenced again while the directory is still offline: no election.
	q.heartbeat(BrokerHeartbeat{BrokerID: 1, BrokerEpoch: epochs[1], OfflineLogDirs: dir, WantFence: true})
	q.heartbeat(BrokerHeartbeat{BrokerID: 1, BrokerEpoch: epochs[1], OfflineLogDirs: dir})
	if b := q.leader().Image().Brokers[1]; b.Fenced || !b.LogDirOffline {
		t.Fatalf("broker 1: %+v, want unfenced, log directory offline", b)
	}
	if p := q.partitions("t")[0]; p.Leader != -1 {
		t.Fatalf("broker 1 elected while its log directory is offline: %+v", p)
	}
	q.heartbeat(BrokerHeartbeat{BrokerID: 1, BrokerEpoch: epochs[1]})
	if p := q.partitions("t")[0]; p.Leader != 1 {
		t.Fatalf("after 1's log directory is back online: %+v, want leader 1", p)
	}
}
