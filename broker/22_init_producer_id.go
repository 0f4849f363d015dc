package broker

// InitProducerId, key 22: v0–v5.
//
// For an idempotent producer (no transactional ID) every call hands out a fresh producer ID
// with epoch 0, as Kafka does, including the KIP-360 re-initialisation of v3+ that names the
// old ID and epoch. IDs come from blocks reserved through the controller, so they are unique
// across the cluster and restarts. A transactional producer is served by the transaction
// coordinator (coordinator.TxnCoordinator.InitProducerID): transaction.timeout.ms above
// transaction.max.timeout.ms is INVALID_TRANSACTION_TIMEOUT, every call bumps the epoch
// (fencing the previous producer, PRODUCER_FENCED from v4, INVALID_PRODUCER_EPOCH before), and
// an open transaction of the previous epoch is aborted first (CONCURRENT_TRANSACTIONS until
// it is). v6 (KIP-939 two-phase commit) is not served.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/authz"
	"sluice/wire"
)

func init() {
	register(22, 0, 5, func(b *Broker, ctx context.Context, w *wire.Request, respond wire.Respond) {
		req, ok := w.Body.(*kmsg.InitProducerIDRequest)
		if !ok {
			respond(nil, errUnexpectedBody)
			return
		}
		if code := b.initProducerIDDenied(w.Conn, req); code != 0 {
			resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
			resp.ProducerID, resp.ProducerEpoch, resp.ErrorCode = -1, -1, code
			respond(resp, nil)
			return
		}
		if req.TransactionalID == nil {
			respond(b.handleInitProducerID(ctx, req))
			return
		}
		// The coordinator waits for its log: answer from a goroutine of its own.
		go func() { respond(b.txnCoord.InitProducerID(ctx, req)) }()
	})
}

func (b *Broker) handleInitProducerID(ctx context.Context, req *kmsg.InitProducerIDRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	id, err := b.nextProducerID(ctx)
	if err != nil {
		b.logger.Warn("allocating producer IDs", "err", err)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return resp, nil
}

// initProducerIDDenied applies Kafka's rule: WRITE on the transactional ID, or for an
// idempotent producer IDEMPOTENT_WRITE on the cluster or WRITE on some topic (KIP-679).
func (b *Broker) initProducerIDDenied(conn *wire.ConnInfo, req *kmsg.InitProducerIDRequest) int16 {
	switch {
	case !b.authzOn():
	case req.TransactionalID != nil:
		if !b.allowed(conn, authz.OpWrite, authz.ResourceTransactionalID, *req.TransactionalID) {
			return kerr.TransactionalIDAuthorizationFailed.Code
		}
	case !b.allowedCluster(conn, authz.OpIdempotentWrite) && !b.allowedAnyTopic(conn, authz.OpWrite):
		return kerr.ClusterAuthorizationFailed.Code
	}
	return 0
}
