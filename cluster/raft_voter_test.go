package cluster

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestRaftVoterRequests: the refusals of AddRaftVoter and RemoveRaftVoter on the controller
// listener (no usable listener, another cluster, a voter already in the set, a follower, an
// unknown voter), and a follower's link forwarding quorum requests to the active controller
// (as a broker listener does for kafka-metadata-quorum --bootstrap-server).
func TestRaftVoterRequests(t *testing.T) {
	ctx := testCtx(t)
	tc := newTestCluster(t, clusterTestConfig{tick: 10 * time.Millisecond, session: time.Minute, heartbeat: 50 * time.Millisecond})
	tc.registerAll(ctx)
	lead, f := tc.leader(), tc.follower()
	clusterID := lead.ctrl.Image().ClusterID

	add := func(id int32, cluster string, listeners ...kmsg.AddRaftVoterRequestListener) *kmsg.AddRaftVoterRequest {
		req := kmsg.NewPtrAddRaftVoterRequest()
		req.ClusterID, req.VoterID, req.TimeoutMillis, req.Listeners = &cluster, id, 5000, listeners
		return req
	}
	l := kmsg.NewAddRaftVoterRequestListener()
	l.Name, l.Host, l.Port = "CONTROLLER", "127.0.0.1", 19999
	noPort := l
	noPort.Port = 0
	for _, tt := range []struct {
		name string
		to   int32
		req  *kmsg.AddRaftVoterRequest
		want *kerr.Error
	}{
		{"no listener", lead.id, add(5, clusterID), kerr.InvalidRequest},
		{"no port", lead.id, add(5, clusterID, noPort), kerr.InvalidRequest},
		{"another cluster", lead.id, add(5, "notThisClusterAtAll000", l), kerr.InconsistentClusterID},
		{"already a voter", lead.id, add(f.id, clusterID, l), kerr.DuplicateVoter},
		{"to a follower", f.id, add(5, clusterID, l), kerr.NotController},
	} {
		r := tc.rawRequest(ctx, tt.to, tt.req).(*kmsg.AddRaftVoterResponse)
		if r.ErrorCode != tt.want.Code {
			t.Errorf("AddRaftVoter %s: %v, want %v", tt.name, kerr.ErrorForCode(r.ErrorCode), tt.want)
		}
	}
	rm := kmsg.NewPtrRemoveRaftVoterRequest()
	rm.ClusterID, rm.VoterID = &clusterID, 9
	if r := tc.rawRequest(ctx, lead.id, rm).(*kmsg.RemoveRaftVoterResponse); r.ErrorCode != kerr.VoterNotFound.Code {
		t.Errorf("RemoveRaftVoter of a stranger: %v", kerr.ErrorForCode(r.ErrorCode))
	}

	// Through a follower's link: answered by the active controller.
	resp, err := f.link.ForwardQuorumRequest(ctx, rm)
	if err != nil {
		t.Fatal(err)
	}
	if r := resp.(*kmsg.RemoveRaftVoterResponse); r.ErrorCode != kerr.VoterNotFound.Code {
		t.Errorf("forwarded RemoveRaftVoter: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	dq := kmsg.NewPtrDescribeQuorumRequest()
	dq.Version = 2
	dt := kmsg.NewDescribeQuorumRequestTopic()
	dt.Topic = metadataTopic
	dt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
	dq.Topics = append(dq.Topics, dt)
	resp, err = f.link.ForwardQuorumRequest(ctx, dq)
	if err != nil {
		t.Fatal(err)
	}
	r := resp.(*kmsg.DescribeQuorumResponse)
	if p := r.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.LeaderID != lead.id || len(p.CurrentVoters) != 3 || r.Version != 2 || len(r.Nodes) != 3 {
		t.Fatalf("forwarded DescribeQuorum: version %d, nodes %d, %+v", r.Version, len(r.Nodes), p)
	}
}
