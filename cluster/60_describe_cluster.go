package cluster

// DescribeCluster, key 60: v0–v2.
//
// On the controller listener, as Kafka's controllers answer it (KIP-919): endpoint type 2
// (controller, what `--bootstrap-controller` tools send) lists the voters' controller
// listeners and the active controller's ID; type 1 (brokers, and v0 which has no type) is
// UNSUPPORTED_ENDPOINT_TYPE, brokers being described by the broker listeners. Cluster
// authorized operations are not computed (no authorizer): -2147483648, as Kafka answers
// when they are not asked for.
//
// The voters are listed only while this node knows the active controller and its listener,
// which is then among them; otherwise the list is empty, as a Kafka controller's is before
// the controllers registered (it lists registrations). A Java admin client given
// bootstrap.controllers takes any non-empty list as its metadata, and with no controller in it
// assigns no node to a controller call and asks for nothing new until metadata.max.age.ms
// (5 minutes): a list without the controller, answered by a voter before the first election
// ended, made `kafka-metadata-quorum --bootstrap-controller` time out after 60 s
// (TestDescribeClusterNamesNoVoterBeforeALeader). An empty list is not taken, so the client
// asks again after retry.backoff.ms.

import (
	"context"
	"net"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(60, 0, 2, (*Server).handleDescribeCluster) }

func (s *Server) handleDescribeCluster(_ context.Context, req *kmsg.DescribeClusterRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.EndpointType = req.EndpointType
	resp.ClusterAuthorizedOperations = -2147483648
	if req.Version < 1 || req.EndpointType != 2 {
		resp.ErrorCode = kerr.UnsupportedEndpointType.Code
		resp.ErrorMessage = strPtr("The controller listener describes controllers only (endpoint type 2).")
		return resp, nil
	}
	im := s.cfg.Controller.Image()
	resp.ClusterID = im.ClusterID
	resp.ControllerID = im.ControllerID
	voters := s.voters()
	if _, _, ok := splitHostPort(voters[im.ControllerID]); !ok {
		return resp, nil // no leader known, or none reachable by the client: list nobody
	}
	for _, id := range sortedIDs(voters) {
		host, port, ok := splitHostPort(voters[id])
		if !ok {
			continue
		}
		b := kmsg.NewDescribeClusterResponseBroker()
		b.NodeID, b.Host, b.Port = id, host, port
		resp.Brokers = append(resp.Brokers, b)
	}
	return resp, nil
}

func sortedIDs(m map[int32]string) []int32 {
	ids := make([]int32, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func splitHostPort(addr string) (string, int32, bool) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, false
	}
	port, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		return "", 0, false
	}
	return host, int32(port), true
}
