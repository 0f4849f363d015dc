package broker

// EndTxn, key 26: v0–v5.
//
// Commit or abort: answered once PrepareCommit/PrepareAbort is in __transaction_state; the
// coordinator then writes the markers to every partition of the transaction (WriteTxnMarkers,
// retried until each leader has them) and completes it. v5 is transaction version 2 (KIP-890
// part 2): every end bumps the producer epoch and the response carries the ID and epoch to use
// next. INVALID_PRODUCER_ID_MAPPING for an unknown transactional ID, PRODUCER_FENCED from v2
// (INVALID_PRODUCER_EPOCH before) for a stale epoch, INVALID_TXN_STATE for an end that
// contradicts the state, CONCURRENT_TRANSACTIONS while the previous end completes.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/coordinator"
)

func init() {
	registerTxnAPI(26, 0, 5, func(_ *Broker, c *coordinator.TxnCoordinator, ctx context.Context, req *kmsg.EndTxnRequest) (kmsg.Response, error) {
		return c.EndTxn(ctx, req)
	})
}
