package broker

// DescribeCluster, key 60: v0–v2.
//
// The cluster ID, a controller ID (this node, as Metadata answers: in KRaft a broker reports a
// broker, since clients cannot reach controllers) and the brokers with their endpoint on the
// listener the request arrived on. v1: EndpointType; a broker answers only BROKERS (1), and a
// request for CONTROLLERS (2) is UNSUPPORTED_ENDPOINT_TYPE, as Kafka's KafkaApis answers it.
// v2: IncludeFencedBrokers adds fenced brokers, flagged IsFenced. IncludeClusterAuthorizedOperations
// is answered in authorized_operations.go. DescribeCluster itself is not authorized, as in Kafka.

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/wire"
)

func init() { registerSync(60, 0, 2, (*Broker).handleDescribeCluster) }

// DescribeCluster endpoint types.
const (
	endpointTypeBrokers     = 1
	endpointTypeControllers = 2
)

func (b *Broker) handleDescribeCluster(_ context.Context, conn *wire.ConnInfo, req *kmsg.DescribeClusterRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.EndpointType = endpointTypeBrokers
	if req.Version >= 1 && req.EndpointType != endpointTypeBrokers {
		resp.ErrorCode = kerr.UnsupportedEndpointType.Code
		msg := "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER"
		if req.EndpointType != endpointTypeControllers {
			msg = "Unsupported endpoint type " + itoa32(int32(req.EndpointType))
		}
		resp.ErrorMessage = &msg
		return resp, nil
	}
	im := b.ctrl.Image()
	resp.ClusterID = im.ClusterID
	resp.ControllerID = b.nodeID
	ids := make([]int32, 0, len(im.Brokers))
	for id, br := range im.Brokers {
		if !br.Fenced || (req.Version >= 2 && req.IncludeFencedBrokers) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	listener := ""
	if conn != nil {
		listener = conn.ListenerName
	}
	for _, id := range ids {
		br := im.Brokers[id]
		ep, ok := endpointFor(br, listener)
		if !ok {
			continue
		}
		rb := kmsg.NewDescribeClusterResponseBroker()
		rb.NodeID, rb.Host, rb.Port, rb.Rack, rb.IsFenced = id, ep.Host, ep.Port, br.Rack, br.Fenced
		resp.Brokers = append(resp.Brokers, rb)
	}
	return resp, nil
}
