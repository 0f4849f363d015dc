package cluster

// UnregisterBroker, key 64: v0.
//
// Removes a broker's registration (`kafka-cluster unregister --id N`), with the rules of
// controller/unregister.go: as in Kafka, a running broker is not refused (it registers again at
// its next heartbeat); a broker-only node's raft learner is removed after it. Errors:
// BROKER_ID_NOT_REGISTERED, NOT_CONTROLLER off the active controller. The answer carries the
// metadata offset of the change (tag 0x5C01, see the package doc).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(64, 0, 0, (*Server).handleUnregisterBroker) }

func (s *Server) handleUnregisterBroker(ctx context.Context, req *kmsg.UnregisterBrokerRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.UnregisterBrokerResponse)
	ctx, cancel := withTimeout(ctx, 0)
	defer cancel()
	if err := s.cfg.Controller.UnregisterBroker(ctx, req.BrokerID); err != nil {
		resp.ErrorCode, resp.ErrorMessage = callError(err)
		return resp, nil
	}
	setOffset(&resp.UnknownTags, s.cfg.Controller.Image().Offset)
	return resp, nil
}
