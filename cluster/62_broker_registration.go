package cluster

// BrokerRegistration, key 62: v0–v4.
//
// v0: node ID, cluster ID, incarnation ID, listeners, features, rack. v1 IsMigratingZkBroker
// (refused: there is no ZooKeeper here), v2 log directories (their IDs, which controller/log_dirs.go uses to move the replicas of a failed one), v3
// PreviousBrokerEpoch: the epoch of the broker's clean shutdown file, -1 when it has none or
// the request is older than v3; the controller takes a broker whose previous epoch is not its
// last one out of every ISR and ELR (KIP-966 unclean shutdown detection,
// controller/membership.go). Features are not checked: every sluice node speaks the same
// metadata format. Errors: INCONSISTENT_CLUSTER_ID for another cluster,
// DUPLICATE_BROKER_REGISTRATION when another incarnation of the node ID has a live session (as
// Kafka's ClusterControlManager refuses it; the active controller's log names the live
// incarnation),
// NOT_CONTROLLER off the active controller.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
)

func init() { register(62, 0, 4, (*Server).handleBrokerRegistration) }

func (s *Server) handleBrokerRegistration(ctx context.Context, req *kmsg.BrokerRegistrationRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.BrokerRegistrationResponse)
	if req.IsMigratingZkBroker {
		resp.ErrorCode = kerr.BrokerIDNotRegistered.Code
		return resp, nil
	}
	reg := controller.BrokerRegistration{BrokerID: req.BrokerID, ClusterID: req.ClusterID, IncarnationID: req.IncarnationID, Rack: req.Rack,
		PreviousBrokerEpoch: -1}
	if req.Version >= 3 {
		reg.PreviousBrokerEpoch = req.PreviousBrokerEpoch
	}
	if req.Version >= 2 {
		reg.LogDirs = req.LogDirs
	}
	for _, l := range req.Listeners {
		reg.Endpoints = append(reg.Endpoints, controller.Endpoint{Listener: l.Name, Host: l.Host, Port: int32(l.Port), SecurityProtocol: l.SecurityProtocol})
	}
	ctx, cancel := withTimeout(ctx, 0)
	defer cancel()
	epoch, err := s.cfg.Controller.RegisterBroker(ctx, reg)
	if err != nil {
		resp.ErrorCode, _ = callError(err) // the response has no message field
		return resp, nil
	}
	resp.BrokerEpoch = epoch
	return resp, nil
}
