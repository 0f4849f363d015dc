package cluster

import (
	"context"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
	pb "go.etcd.io/raft/v3/raftpb"

	"sluice/controller"
)

// dropTransport loses every raft message: a voter whose peers are all unreachable, as each
// voter of a new quorum is until the others have started.
type dropTransport struct{}

func (dropTransport) Send([]*pb.Message) {}

// describeControllers is what `--bootstrap-controller` admin clients send first.
func describeControllers() *kmsg.DescribeClusterRequest {
	req := kmsg.NewPtrDescribeClusterRequest()
	req.Version, req.EndpointType = 1, 2
	return req
}

// controllerListed reports whether resp names a controller that is among its nodes: what a
// Java admin client with bootstrap.controllers needs to send a controller call (a list
// without it is taken as the metadata and no node is assigned until metadata.max.age.ms).
func controllerListed(resp *kmsg.DescribeClusterResponse) bool {
	return slices.ContainsFunc(resp.Brokers, func(b kmsg.DescribeClusterResponseBroker) bool { return b.NodeID == resp.ControllerID })
}

// TestDescribeClusterNamesNoVoterBeforeALeader: a voter that knows no active controller (a
// new quorum before its first election ends) answers DescribeCluster on the controller
// listener with no nodes, so a Java admin client asks again; before, it listed the three
// voters with ControllerId -1, and `kafka-metadata-quorum --bootstrap-controller ... describe`
// started in that window timed out after 60 s with "Timed out waiting for a node assignment"
// (TestDynamicQuorumInitialControllers in CI). Once a leader is known every voter lists the
// voters and names it.
func TestDescribeClusterNamesNoVoterBeforeALeader(t *testing.T) {
	ids := []int32{1, 2, 3}
	c, err := controller.Open(controller.Config{NodeID: 1, Dir: t.TempDir(), Voters: ids, Transport: dropTransport{},
		Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s, err := NewServer(ServerConfig{Controller: c, Logger: quietLogger(),
		Voters: map[int32]string{1: "127.0.0.1:9091", 2: "127.0.0.1:9092", 3: "127.0.0.1:9093"}})
	if err != nil {
		t.Fatal(err)
	}
	if id := c.Image().ControllerID; id != -1 {
		t.Fatalf("a voter alone of three knows controller %d", id)
	}
	r, err := s.handleDescribeCluster(context.Background(), describeControllers())
	if err != nil {
		t.Fatal(err)
	}
	resp := r.(*kmsg.DescribeClusterResponse)
	if resp.ErrorCode != 0 || resp.ControllerID != -1 || len(resp.Brokers) != 0 {
		t.Fatalf("with no leader known: error %d, controller %d, nodes %+v; want no error, -1 and no nodes",
			resp.ErrorCode, resp.ControllerID, resp.Brokers)
	}

	tc := newTestCluster(t, clusterTestConfig{})
	lead := tc.leader()
	ctx := testCtx(t)
	for _, id := range ids {
		resp := tc.rawRequest(ctx, id, describeControllers()).(*kmsg.DescribeClusterResponse)
		if resp.ErrorCode != 0 || resp.ControllerID != lead.id || len(resp.Brokers) != 3 || !controllerListed(resp) {
			t.Fatalf("node %d with leader %d known: error %d, controller %d, nodes %+v", id, lead.id,
				resp.ErrorCode, resp.ControllerID, resp.Brokers)
		}
	}
}
