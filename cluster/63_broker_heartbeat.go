package cluster

// BrokerHeartbeat, key 63: v0–v2.
//
// v0: broker ID and epoch, metadata offset, WantFence, WantShutDown. v1 offline log
// directories and v2 cordoned log directories are accepted and not used. Errors:
// BROKER_ID_NOT_REGISTERED, STALE_BROKER_EPOCH, NOT_CONTROLLER. The rules are
// controller/membership.go's.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
)

func init() { register(63, 0, 2, (*Server).handleBrokerHeartbeat) }

func (s *Server) handleBrokerHeartbeat(ctx context.Context, req *kmsg.BrokerHeartbeatRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.BrokerHeartbeatResponse)
	ctx, cancel := withTimeout(ctx, 0)
	defer cancel()
	res, err := s.cfg.Controller.Heartbeat(ctx, controller.BrokerHeartbeat{BrokerID: req.BrokerID, BrokerEpoch: req.BrokerEpoch,
		MetadataOffset: req.CurrentMetadataOffset, WantFence: req.WantFence, WantShutDown: req.WantShutdown})
	if err != nil {
		resp.ErrorCode, _ = callError(err)
		resp.IsFenced = true
		return resp, nil
	}
	resp.IsCaughtUp, resp.IsFenced, resp.ShouldShutdown = res.IsCaughtUp, res.IsFenced, res.ShouldShutDown
	return resp, nil
}
