package broker

// InitProducerId, key 22: v0–v5.
//
// For an idempotent producer (no transactional ID) every call hands out a fresh producer ID
// with epoch 0, as Kafka does, including the KIP-360 re-initialisation of v3+ that names the
// old ID and epoch. IDs come from blocks reserved through the controller, so they are unique
// across the cluster and restarts. Transactional producers get the fatal
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED with a message, as FindCoordinator gives them, until
// the transaction coordinator lands.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/wire"
)

func init() { registerSync(22, 0, 5, (*Broker).handleInitProducerID) }

func (b *Broker) handleInitProducerID(ctx context.Context, _ *wire.ConnInfo, req *kmsg.InitProducerIDRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID != nil {
		// InitProducerId has no error message field; FindCoordinator, which every client sends
		// first, carries the explanation.
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp, nil
	}
	id, err := b.nextProducerID(ctx)
	if err != nil {
		b.logger.Warn("allocating producer IDs", "err", err)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return resp, nil
}
