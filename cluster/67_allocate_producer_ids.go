package cluster

// AllocateProducerIds, key 67: v0.
//
// Hands out a block of producerIDBlock IDs, as Kafka's controller does (blocks of 1000), to a
// registered broker of the right epoch (STALE_BROKER_EPOCH otherwise).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(67, 0, 0, (*Server).handleAllocateProducerIDs) }

// producerIDBlock is the size of a block of producer IDs (Kafka's PRODUCER_ID_BLOCK_SIZE).
const producerIDBlock = 1000

func (s *Server) handleAllocateProducerIDs(ctx context.Context, req *kmsg.AllocateProducerIDsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.AllocateProducerIDsResponse)
	b := s.cfg.Controller.Image().Brokers[req.BrokerID]
	switch {
	case b == nil:
		resp.ErrorCode = kerr.BrokerIDNotRegistered.Code
		return resp, nil
	case b.Epoch != req.BrokerEpoch && req.BrokerEpoch != -1:
		resp.ErrorCode = kerr.StaleBrokerEpoch.Code
		return resp, nil
	}
	ctx, cancel := withTimeout(ctx, 0)
	defer cancel()
	first, err := s.cfg.Controller.AllocateProducerIDs(ctx, req.BrokerID, producerIDBlock)
	if err != nil {
		resp.ErrorCode, _ = callError(err)
		return resp, nil
	}
	resp.ProducerIDStart, resp.ProducerIDLen = first, producerIDBlock
	setOffset(&resp.UnknownTags, s.cfg.Controller.Image().Offset)
	return resp, nil
}
